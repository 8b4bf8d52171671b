//! `kubectl label` and `kubectl annotate`: `key=value` sets, `key-` removes, on named
//! objects, `-f`, `-l` or `--all`; a JSON merge patch of the changed keys, with upstream's
//! `--overwrite` rule and its `labeled` / `not labeled` / `unlabeled` / `annotated` lines.

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::{Map, Value, json};

/// Flags shared by `kubectl label` and `kubectl annotate`.
#[derive(Debug, Clone, Args)]
pub struct LabelArgs {
    /// TYPE NAME KEY_1=VAL_1 ... KEY_N=VAL_N | TYPE/NAME KEY=VAL | KEY-
    pub args: Vec<String>,
    /// If true, allow values to be overwritten, otherwise reject updates that overwrite
    /// existing values.
    #[arg(long)]
    pub overwrite: bool,
    /// Select all resources, in the namespace of the specified resource types
    #[arg(long)]
    pub all: bool,
    /// If true, check the specified action in all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long, value_name = "string")]
    pub field_selector: Option<String>,
    /// Filename, directory, or URL to files identifying the resource to update
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// If non-empty, the update will only succeed if this is the current resource-version.
    #[arg(long, value_name = "string")]
    pub resource_version: Option<String>,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership (default kubectl-label or
    /// kubectl-annotate).
    #[arg(long, value_name = "string")]
    pub field_manager: Option<String>,
}

/// Which map the command edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Labels,
    Annotations,
}

/// The parsed `key=value` and `key-` arguments.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Changes {
    pub set: Vec<(String, String)>,
    pub remove: Vec<String>,
}

/// Splits arguments into resource arguments and changes.
pub fn split_args(args: &[String]) -> anyhow::Result<(Vec<String>, Changes)> {
    let mut resources = Vec::new();
    let mut changes = Changes::default();
    for arg in args {
        if let Some((k, v)) = arg.split_once('=') {
            anyhow::ensure!(!k.is_empty(), "invalid label spec: {arg}");
            changes.set.push((k.to_owned(), v.to_owned()));
        } else if let Some(k) = arg.strip_suffix('-') {
            changes.remove.push(k.to_owned());
        } else {
            resources.push(arg.clone());
        }
    }
    for (k, _) in &changes.set {
        anyhow::ensure!(
            !changes.remove.contains(k),
            "can not both modify and remove the following label(s) in the same command: {k}"
        );
    }
    Ok((resources, changes))
}

/// The new map, or upstream's error when a value would be overwritten without --overwrite.
pub fn apply(
    field: Field,
    current: &Map<String, Value>,
    changes: &Changes,
    overwrite: bool,
) -> anyhow::Result<Map<String, Value>> {
    let mut next = current.clone();
    let mut conflicts = Vec::new();
    for (k, v) in &changes.set {
        if let Some(old) = current.get(k).and_then(Value::as_str)
            && !overwrite
            && old != v
        {
            conflicts.push(format!("'{k}' already has a value ({old})"));
        }
        next.insert(k.clone(), Value::String(v.clone()));
    }
    if !conflicts.is_empty() {
        match field {
            Field::Labels => anyhow::bail!("{}, and --overwrite is false", conflicts.join(", ")),
            Field::Annotations => anyhow::bail!(
                "--overwrite is false but found the following declared annotation(s): {}",
                conflicts.join(", ")
            ),
        }
    }
    for k in &changes.remove {
        next.remove(k);
    }
    Ok(next)
}

pub async fn run(global: &GlobalOptions, args: &LabelArgs, field: Field) -> anyhow::Result<()> {
    let (resource_args, changes) = split_args(&args.args)?;
    let noun = match field {
        Field::Labels => "label",
        Field::Annotations => "annotation",
    };
    if changes.set.is_empty() && changes.remove.is_empty() {
        anyhow::bail!("at least one {noun} update is required");
    }
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let mut reporter = args.print.reporter()?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        selector: args.selector.clone(),
        field_selector: args.field_selector.clone(),
        all_namespaces: args.all_namespaces,
        all: args.all,
        chunk_size: 500,
    };
    let resolved = resource::resolve(&factory, &resource_args, &sel).await?;
    let by_selector = args.all || args.selector.is_some() || args.field_selector.is_some();
    let mut targets: Vec<Info> = Vec::new();
    for info in resolved.infos {
        if info.name.is_some() {
            targets.push(info);
        } else if by_selector {
            let pages = resource::list_pages(&factory, &info, &sel, None, &[]).await?;
            for item in resource::items_of(&info.resource, &pages) {
                let ns = item
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                targets.push(Info {
                    name: Some(mutate::name_of(&item).to_owned()),
                    namespace: ns.or(info.namespace.clone()),
                    ..info.clone()
                });
            }
        } else {
            anyhow::bail!("resource(s) were provided, but no name was specified");
        }
    }
    let key = match field {
        Field::Labels => "labels",
        Field::Annotations => "annotations",
    };
    let mut errors = Vec::new();
    for info in &targets {
        let result = async {
            let before = factory.get(&info.path()).await?;
            let empty = Map::new();
            let current = before
                .pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let next = apply(field, current, &changes, args.overwrite)?;
            let mut after = before.clone();
            after["metadata"][key] = Value::Object(next.clone());
            if next.is_empty()
                && let Some(meta) = after["metadata"].as_object_mut()
            {
                meta.remove(key);
            }
            let verb = match field {
                Field::Annotations => "annotated",
                Field::Labels => {
                    let (old_len, new_len) = (
                        serde_json::to_string(&before)?.len(),
                        serde_json::to_string(&after)?.len(),
                    );
                    if before == after {
                        "not labeled"
                    } else if !args.overwrite && new_len < old_len {
                        "unlabeled"
                    } else {
                        "labeled"
                    }
                }
            };
            if dry_run == DryRun::Client || before == after && field == Field::Labels {
                return Ok((after, verb));
            }
            let mut delta = Map::new();
            for (k, v) in &next {
                if current.get(k) != Some(v) {
                    delta.insert(k.clone(), v.clone());
                }
            }
            for k in current.keys().filter(|k| !next.contains_key(*k)) {
                delta.insert(k.clone(), Value::Null);
            }
            let mut patch = json!({"metadata": {key: delta}});
            if let Some(rv) = &args.resource_version {
                patch["metadata"]["resourceVersion"] = json!(rv);
            }
            let manager = args.field_manager.clone().unwrap_or_else(|| match field {
                Field::Labels => "kubectl-label".into(),
                Field::Annotations => "kubectl-annotate".into(),
            });
            let mut query = dry_run.query();
            query.push(("fieldManager".into(), manager));
            let url = resource::with_query(&info.path(), &query);
            let patched = factory.merge_patch(&url, &patch).await?;
            Ok::<_, anyhow::Error>((patched, verb))
        }
        .await;
        match result {
            Ok((object, verb)) => reporter.report(&info.resource, &object, verb, dry_run)?,
            Err(err) => errors.push(err),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn splits_and_applies() {
        let (res, changes) =
            split_args(&s(&["pods", "web", "app=x", "example.com/tier=be", "old-"])).unwrap();
        assert_eq!(res, s(&["pods", "web"]));
        assert_eq!(
            changes.set,
            vec![
                ("app".into(), "x".into()),
                ("example.com/tier".into(), "be".into())
            ]
        );
        assert_eq!(changes.remove, s(&["old"]));
        assert!(split_args(&s(&["po/x", "a=1", "a-"])).is_err());
        let current: Map<String, Value> =
            serde_json::from_value(json!({"app": "web", "old": "1"})).unwrap();
        let err = apply(Field::Labels, &current, &changes, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'app' already has a value (web), and --overwrite is false"
        );
        let next = apply(Field::Labels, &current, &changes, true).unwrap();
        assert_eq!(
            Value::Object(next),
            json!({"app": "x", "example.com/tier": "be"})
        );
        let same = Changes {
            set: vec![("app".into(), "web".into())],
            remove: vec![],
        };
        assert!(apply(Field::Annotations, &current, &same, false).is_ok());
    }
}
