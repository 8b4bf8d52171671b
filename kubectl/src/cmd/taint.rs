//! `kubectl taint nodes NAME key=value:Effect key:Effect- key-`: adds, overwrites and removes
//! node taints with upstream's parsing, checks and `node/x tainted|untainted|modified` lines.

use super::cordon::node_line;
use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::resource;
use clap::Args;
use serde_json::{Value, json};

const USAGE: &str = "\nSee 'kubectl taint -h' for help and examples";

/// Flags of `kubectl taint`.
#[derive(Debug, Clone, Args)]
pub struct TaintArgs {
    /// NODE NAME KEY_1=VAL_1:TAINT_EFFECT_1 ... KEY_N=VAL_N:TAINT_EFFECT_N
    pub args: Vec<String>,
    /// If true, allow taints to be overwritten, otherwise reject taint updates that overwrite
    /// existing taints.
    #[arg(long)]
    pub overwrite: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Select all nodes in the cluster
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
}

/// One taint: key, value and effect (empty effect in a removal matches every effect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl Taint {
    fn to_json(&self) -> Value {
        let mut t = json!({"key": self.key, "effect": self.effect});
        if !self.value.is_empty() {
            t["value"] = json!(self.value);
        }
        t
    }

    fn from_json(v: &Value) -> Taint {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        Taint {
            key: s("key"),
            value: s("value"),
            effect: s("effect"),
        }
    }

    /// Upstream's `Taint.ToString` for removals: `key:Effect` or `key`.
    fn removal_text(&self) -> String {
        if self.effect.is_empty() {
            self.key.clone()
        } else {
            format!("{}:{}", self.key, self.effect)
        }
    }
}

fn name_part_ok(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    name.len() <= 63
        && name.starts_with(alnum)
        && name.ends_with(alnum)
        && name
            .chars()
            .all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// Upstream's `IsQualifiedName` messages for the cases a taint key hits.
fn qualified_name_errors(key: &str) -> Option<String> {
    let name = key.rsplit_once('/').map(|(_, n)| n).unwrap_or(key);
    if name.is_empty() {
        return Some("name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into());
    }
    (!name_part_ok(name)).then(|| "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into())
}

fn parse_taint(spec: &str) -> anyhow::Result<Taint> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [key] => (*key, "", ""),
        [kv, effect] => {
            if !matches!(*effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                anyhow::bail!("invalid taint effect: {effect}, unsupported taint effect");
            }
            let kv: Vec<&str> = kv.split('=').collect();
            match kv.as_slice() {
                [k] => (*k, "", *effect),
                [k, v] => (*k, *v, *effect),
                _ => anyhow::bail!("invalid taint spec: {spec}"),
            }
        }
        _ => anyhow::bail!("invalid taint spec: {spec}"),
    };
    if let Some(msg) = qualified_name_errors(key) {
        anyhow::bail!("invalid taint spec: {spec}, {msg}");
    }
    Ok(Taint {
        key: key.into(),
        value: value.into(),
        effect: effect.into(),
    })
}

/// Splits taint arguments into additions and removals.
pub fn parse_taints(specs: &[String]) -> anyhow::Result<(Vec<Taint>, Vec<Taint>)> {
    let (mut add, mut remove) = (Vec::<Taint>::new(), Vec::new());
    for spec in specs {
        if let Some(stripped) = spec.strip_suffix('-') {
            let t = parse_taint(stripped)?;
            remove.push(Taint {
                value: String::new(),
                ..t
            });
            continue;
        }
        let t = parse_taint(spec)?;
        if t.effect.is_empty() {
            anyhow::bail!("invalid taint spec: {spec}");
        }
        if add.iter().any(|a| a.key == t.key && a.effect == t.effect) {
            anyhow::bail!(
                "duplicated taints with the same key and effect: {{{} {} {} <nil>}}",
                t.key,
                t.value,
                t.effect
            );
        }
        add.push(t);
    }
    Ok((add, remove))
}

/// The node's new taints and the verb (`tainted`, `untainted`, `modified`), as upstream's
/// `reorganizeTaints`.
pub fn reorganize(
    old: &[Taint],
    overwrite: bool,
    add: &[Taint],
    remove: &[Taint],
) -> (String, Vec<Taint>, Vec<String>) {
    let mut new: Vec<Taint> = add.to_vec();
    for o in old {
        if !new.iter().any(|n| n.key == o.key && n.effect == o.effect) {
            new.push(o.clone());
        }
    }
    let added = old.len() != new.len();
    let mut errors = Vec::new();
    let mut removed = false;
    for r in remove {
        let before = new.len();
        new.retain(|n| !(n.key == r.key && (r.effect.is_empty() || n.effect == r.effect)));
        removed = new.len() != before;
        if !removed {
            errors.push(format!("taint {:?} not found", r.removal_text()));
        }
    }
    let verb = if (added && removed) || overwrite {
        "modified"
    } else if added {
        "tainted"
    } else {
        "untainted"
    };
    (verb.to_owned(), new, errors)
}

pub async fn run(global: &GlobalOptions, args: &TaintArgs) -> anyhow::Result<()> {
    let mut resources: Vec<String> = Vec::new();
    let mut specs: Vec<String> = Vec::new();
    for a in &args.args {
        let is_taint = a.contains('=') || a.contains(':') || a.ends_with('-');
        match (is_taint, specs.is_empty()) {
            (true, _) => specs.push(a.clone()),
            (false, true) => resources.push(a.clone()),
            (false, false) => {
                anyhow::bail!("all resources must be specified before taint changes: {a}")
            }
        }
    }
    if resources.is_empty() {
        anyhow::bail!("one or more resources must be specified as <resource> <name>");
    }
    if specs.is_empty() {
        anyhow::bail!("at least one taint update is required");
    }
    let (add, remove) = parse_taints(&specs).map_err(|e| anyhow::anyhow!("{e}{USAGE}"))?;
    let kind = resources[0].to_lowercase();
    if !matches!(kind.as_str(), "node" | "nodes" | "no") {
        anyhow::bail!(
            "invalid resource type {}, only node types are supported",
            resources[0]
        );
    }
    let conflicts: Vec<String> = remove
        .iter()
        .filter(|r| {
            add.iter()
                .any(|a| a.key == r.key && (r.effect.is_empty() || a.effect == r.effect))
        })
        .map(|r| format!("{}={}", r.key, r.effect))
        .collect();
    if !conflicts.is_empty() {
        anyhow::bail!(
            "can not both modify and remove the following taint(s) in the same command: {}",
            conflicts.join(", ")
        );
    }
    if args.all && args.selector.is_some() {
        anyhow::bail!("setting 'all' parameter with a non empty selector is prohibited");
    }
    if !args.all && args.selector.is_none() && resources.len() < 2 {
        anyhow::bail!(
            "at least one resource name must be specified since 'all' parameter is not set"
        );
    }
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let format = args.print.format()?;
    let factory = Factory::new(global).await?;
    let selector = if args.all {
        Some(String::new())
    } else {
        args.selector.clone()
    };
    let nodes =
        super::cordon::select_nodes(&factory, &resources[1..], selector.as_deref(), "taint")
            .await?;
    let mapper = factory.discovery().mapper().await?;
    let node_resource = mapper.resolve("nodes");
    let printing = format.is_some();
    // Upstream prints the patched node as its Go struct, a client dry run as the struct
    // converted back to a map.
    let mut reporter = match dry_run {
        DryRun::Client => args.print.reporter_for(format).typed_as_map(),
        _ => args.print.reporter_for(format).typed(),
    };
    for node in &nodes {
        let name = mutate::name_of(node);
        let old: Vec<Taint> = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .map(|ts| ts.iter().map(Taint::from_json).collect())
            .unwrap_or_default();
        if !args.overwrite {
            let exists: Vec<&str> = add
                .iter()
                .filter(|a| old.iter().any(|o| o.key == a.key && o.effect == a.effect))
                .map(|a| a.key.as_str())
                .collect();
            if !exists.is_empty() {
                anyhow::bail!(
                    "node {name} already has {} taint(s) with same effect(s) and --overwrite is false",
                    exists.join(",")
                );
            }
        }
        let (verb, new, errors) = reorganize(&old, args.overwrite, &add, &remove);
        if !errors.is_empty() {
            anyhow::bail!("{}", errors.join(", "));
        }
        let taints: Vec<Value> = new.iter().map(Taint::to_json).collect();
        let mut updated = node.clone();
        updated["spec"]["taints"] = json!(taints);
        if dry_run != DryRun::Client {
            let patch = json!({"spec": {"taints": if taints.is_empty() { Value::Null } else { json!(taints) }}});
            let url = resource::with_query(&format!("/api/v1/nodes/{name}"), &dry_run.query());
            updated = factory.merge_patch(&url, &patch).await?;
        }
        match &node_resource {
            Some(r) if printing => reporter.report(r, &updated, &verb, dry_run)?,
            // Upstream's taint prints no dry-run suffix.
            _ => println!("{}", node_line(node, &verb, DryRun::None)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
        }
    }

    #[test]
    fn parsing() {
        let specs: Vec<String> = ["a=b:NoSchedule", "c:NoExecute", "d-", "e:NoSchedule-"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (add, remove) = parse_taints(&specs).unwrap();
        assert_eq!(
            add,
            vec![t("a", "b", "NoSchedule"), t("c", "", "NoExecute")]
        );
        assert_eq!(remove, vec![t("d", "", ""), t("e", "", "NoSchedule")]);
        for bad in [
            "a=b",
            "a=b:Bad",
            "a=b=c:NoSchedule",
            "-x:NoSchedule",
            "a:b:c",
        ] {
            assert!(parse_taints(&[bad.to_string()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn reorganizing() {
        let old = vec![t("a", "1", "NoSchedule")];
        let cases = [
            (vec![t("b", "", "NoExecute")], vec![], false, "tainted", 2),
            (vec![], vec![t("a", "", "")], false, "untainted", 0),
            (vec![t("a", "2", "NoSchedule")], vec![], true, "modified", 1),
        ];
        for (add, remove, overwrite, verb, len) in cases {
            let (got, new, errors) = reorganize(&old, overwrite, &add, &remove);
            assert_eq!((got.as_str(), new.len()), (verb, len));
            assert!(errors.is_empty());
        }
        let (_, _, errors) = reorganize(&old, false, &[], &[t("x", "", "NoSchedule")]);
        assert_eq!(errors, vec!["taint \"x:NoSchedule\" not found"]);
    }
}
