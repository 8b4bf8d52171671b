//! `create role`, `create clusterrole`, `create rolebinding`, `create clusterrolebinding`.

use super::send::{self, Wrap};
use super::simple::CommonArgs;
use crate::app::options::GlobalOptions;
use crate::discovery::RestMapper;
use crate::factory::Factory;
use clap::Args;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const RBAC: &str = "rbac.authorization.k8s.io";
const RESOURCE_VERBS: &[&str] = &[
    "*",
    "get",
    "delete",
    "list",
    "create",
    "update",
    "patch",
    "watch",
    "proxy",
    "deletecollection",
    "use",
    "bind",
    "escalate",
    "impersonate",
];
const NON_RESOURCE_VERBS: &[&str] = &[
    "*", "get", "post", "put", "delete", "patch", "head", "options",
];

/// Flags of `create role` and `create clusterrole`.
#[derive(Debug, Clone, Args)]
pub struct RoleArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Verb that applies to the resources contained in the rule
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub verb: Vec<String>,
    /// Resource that the rule applies to
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub resource: Vec<String>,
    /// Resource in the white list that the rule applies to, repeat this flag for multiple items
    #[arg(long, value_name = "stringArray")]
    pub resource_name: Vec<String>,
    /// A partial url that user should have access to (cluster roles only).
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub non_resource_url: Vec<String>,
    /// An aggregation label selector for combining ClusterRoles (cluster roles only).
    #[arg(long, value_name = "mapStringString")]
    pub aggregation_rule: Vec<String>,
}

/// Flags of `create rolebinding` and `create clusterrolebinding`.
#[derive(Debug, Clone, Args)]
pub struct BindingArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Role this RoleBinding should reference
    #[arg(long, value_name = "string")]
    pub role: Option<String>,
    /// ClusterRole this binding should reference
    #[arg(long, value_name = "string")]
    pub clusterrole: Option<String>,
    /// Usernames to bind to the role.
    #[arg(long, value_name = "stringArray")]
    pub user: Vec<String>,
    /// Groups to bind to the role.
    #[arg(long, value_name = "stringArray")]
    pub group: Vec<String>,
    /// Service accounts to bind to the role, in the format <namespace>:<name>.
    #[arg(long, value_name = "stringArray")]
    pub serviceaccount: Vec<String>,
}

/// Verbs without duplicates; `*` stands alone.
fn unique_verbs(verbs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in verbs {
        if v == "*" {
            return vec!["*".into()];
        }
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

/// One rule per API group (groups sorted), each resource resolved to its plural name.
fn resource_rules(
    mapper: Option<&RestMapper>,
    verbs: &[String],
    resources: &[String],
    names: &[String],
) -> anyhow::Result<Vec<Value>> {
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in resources {
        let (resource, sub) = match spec.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (spec.as_str(), None),
        };
        let (plain, group) = resource.split_once('.').unwrap_or((resource, ""));
        if plain.is_empty() {
            anyhow::bail!("resource must be specified if apiGroup/subresource specified");
        }
        let (mut name, group) = match mapper.and_then(|m| m.resolve(resource)) {
            Some(found) if plain != "*" => (found.name, found.group),
            _ if plain == "*" => (plain.to_owned(), group.to_owned()),
            _ if mapper.is_some() => crate::cmd::explain::exit_bare(&format!(
                "the server doesn't have a resource type \"{plain}\""
            )),
            _ => anyhow::bail!("the server doesn't have a resource type \"{plain}\""),
        };
        if let Some(sub) = sub {
            name = format!("{name}/{sub}");
        }
        let entry = by_group.entry(group).or_default();
        if !entry.contains(&name) {
            entry.push(name);
        }
    }
    Ok(by_group
        .into_iter()
        .map(|(group, resources)| {
            let mut rule = json!({"verbs": verbs, "apiGroups": [group], "resources": resources});
            if !names.is_empty() {
                rule["resourceNames"] = json!(names);
            }
            rule
        })
        .collect())
}

fn warn_verbs(verbs: &[String]) {
    for v in verbs {
        if !RESOURCE_VERBS.contains(&v.as_str()) {
            eprintln!("Warning: '{v}' is not a standard resource verb");
        }
    }
}

async fn role_object(
    global: &GlobalOptions,
    name: &str,
    args: &RoleArgs,
    cluster: bool,
) -> anyhow::Result<Value> {
    let kind = if cluster { "ClusterRole" } else { "Role" };
    let mut object = json!({"apiVersion": format!("{RBAC}/v1"), "kind": kind, "metadata": {"name": name, "creationTimestamp": null}});
    if cluster && !args.aggregation_rule.is_empty() {
        if !args.non_resource_url.is_empty()
            || !args.verb.is_empty()
            || !args.resource.is_empty()
            || !args.resource_name.is_empty()
        {
            anyhow::bail!(
                "aggregation rule must be specified without nonResourceURLs, verbs, resources or resourceNames"
            );
        }
        let labels = send::parse_pairs(&args.aggregation_rule, "aggregation rule")?;
        object["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": labels}]});
        object["rules"] = Value::Null;
        return Ok(object);
    }
    let verbs = unique_verbs(&args.verb);
    if verbs.is_empty() {
        anyhow::bail!("at least one verb must be specified");
    }
    if args.resource.is_empty() && (!cluster || args.non_resource_url.is_empty()) {
        if cluster {
            anyhow::bail!("one of resource or nonResourceURL must be specified");
        }
        anyhow::bail!("at least one resource must be specified");
    }
    let mut rules = Vec::new();
    if !args.resource.is_empty() {
        warn_verbs(&verbs);
        let factory = Factory::new(global).await?;
        let mapper = factory.discovery().mapper().await?;
        rules = resource_rules(Some(&mapper), &verbs, &args.resource, &args.resource_name)?;
    }
    if !args.non_resource_url.is_empty() {
        for v in &verbs {
            if !NON_RESOURCE_VERBS.contains(&v.as_str()) {
                anyhow::bail!("invalid verb: '{v}' for nonResourceURL");
            }
        }
        for url in args.non_resource_url.iter().filter(|u| *u != "*") {
            if !url.starts_with('/') {
                anyhow::bail!("nonResourceURL should start with /");
            }
            if url[..url.len() - 1].contains('*') {
                anyhow::bail!(
                    "nonResourceURL only supports wildcard matches when '*' is at the end"
                );
            }
        }
        rules.push(json!({"verbs": verbs, "nonResourceURLs": args.non_resource_url}));
    }
    object["rules"] = json!(rules);
    Ok(object)
}

pub fn binding(name: &str, args: &BindingArgs, cluster: bool) -> anyhow::Result<Value> {
    let (kind, role_kind, role) = if cluster {
        let Some(role) = &args.clusterrole else {
            anyhow::bail!("required flag(s) \"clusterrole\" not set");
        };
        ("ClusterRoleBinding", "ClusterRole", role)
    } else {
        match (&args.role, &args.clusterrole) {
            (Some(r), None) => ("RoleBinding", "Role", r),
            (None, Some(c)) => ("RoleBinding", "ClusterRole", c),
            _ => anyhow::bail!("exactly one of clusterrole or role must be specified"),
        }
    };
    let mut subjects: Vec<Value> = Vec::new();
    for user in &args.user {
        subjects.push(json!({"kind": "User", "apiGroup": RBAC, "name": user}));
    }
    for group in &args.group {
        subjects.push(json!({"kind": "Group", "apiGroup": RBAC, "name": group}));
    }
    for sa in &args.serviceaccount {
        match sa.split_once(':') {
            Some((ns, n)) if !ns.is_empty() && !n.is_empty() && !n.contains(':') => {
                subjects.push(json!({"kind": "ServiceAccount", "namespace": ns, "name": n}));
            }
            _ => anyhow::bail!("serviceaccount must be <namespace>:<name>"),
        }
    }
    let mut object = json!({
        "apiVersion": format!("{RBAC}/v1"),
        "kind": kind,
        "metadata": {"name": name, "creationTimestamp": null},
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
    });
    if !subjects.is_empty() {
        object["subjects"] = json!(subjects);
    }
    Ok(object)
}

pub async fn run_role(
    global: &GlobalOptions,
    args: &RoleArgs,
    cluster: bool,
) -> anyhow::Result<()> {
    let usage = if cluster { "clusterrole" } else { "role" };
    let name = send::one_name(&args.common, usage)?;
    let object = role_object(global, name, args, cluster).await?;
    send::send(global, &args.common, object, !cluster, Wrap::Plain).await
}

pub async fn run_binding(
    global: &GlobalOptions,
    args: &BindingArgs,
    cluster: bool,
) -> anyhow::Result<()> {
    let usage = if cluster {
        "clusterrolebinding"
    } else {
        "rolebinding"
    };
    let name = send::one_name(&args.common, usage)?;
    // The global `--user` (kubeconfig user) also receives the binding's `--user` at parse
    // time; upstream's local flag shadows the global one, so the kubeconfig user stays unset.
    let mut global = global.clone();
    let mut args = args.clone();
    if let Some(user) = global.user.take()
        && args.user.is_empty()
    {
        args.user.push(user);
    }
    let global = &global;
    let object = binding(name, &args, cluster)?;
    let wrap = if cluster {
        Wrap::Colon("failed to create clusterrolebinding")
    } else {
        Wrap::Colon("failed to create rolebinding")
    };
    send::send(global, &args.common, object, !cluster, wrap).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn verbs_dedup() {
        assert_eq!(
            unique_verbs(&strings(&["get", "list", "get"])),
            ["get", "list"]
        );
        assert_eq!(unique_verbs(&strings(&["get", "*"])), ["*"]);
    }

    #[test]
    fn wildcard_rules_need_no_mapper() {
        let rules = resource_rules(None, &strings(&["get"]), &strings(&["*"]), &[]).unwrap();
        assert_eq!(
            rules,
            vec![json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]})]
        );
        assert!(resource_rules(None, &strings(&["get"]), &strings(&["pods"]), &[]).is_err());
    }

    #[test]
    fn bindings() {
        let args = BindingArgs {
            common: CommonArgs {
                name: vec![],
                print: Default::default(),
                dry_run: None,
                field_manager: String::new(),
                validate: "strict".into(),
            },
            role: None,
            clusterrole: Some("view".into()),
            user: strings(&["u"]),
            group: vec![],
            serviceaccount: strings(&["ns:sa"]),
        };
        let b = binding("b", &args, false).unwrap();
        assert_eq!(b["roleRef"]["kind"], "ClusterRole");
        assert_eq!(b["subjects"][1]["namespace"], "ns");
        let bad = BindingArgs {
            serviceaccount: strings(&["nocolon"]),
            ..args
        };
        assert!(binding("b", &bad, false).is_err());
    }
}
