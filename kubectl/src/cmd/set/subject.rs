//! `kubectl set subject`: adds users, groups and service accounts to RoleBindings and
//! ClusterRoleBindings (subjects already there are not added twice).

use super::{Change, CommonArgs, apply_changes};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use clap::Args;
use serde_json::{Value, json};

/// Flags of `kubectl set subject`.
#[derive(Debug, Clone, Args)]
pub struct SubjectArgs {
    /// (-f FILENAME | TYPE NAME)
    pub args: Vec<String>,
    /// Groups to bind to the role
    #[arg(long = "group", value_name = "strings")]
    pub groups: Vec<String>,
    /// Service accounts to bind to the role
    #[arg(long = "serviceaccount", value_name = "strings")]
    pub service_accounts: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The subjects the flags name, in upstream's order (users, groups, service accounts).
pub fn subjects(
    args: &SubjectArgs,
    users: &[String],
    namespace: &str,
) -> anyhow::Result<Vec<Value>> {
    const GROUP: &str = "rbac.authorization.k8s.io";
    let mut out = Vec::new();
    for user in users {
        out.push(json!({"apiGroup": GROUP, "kind": "User", "name": user}));
    }
    for group in &args.groups {
        out.push(json!({"apiGroup": GROUP, "kind": "Group", "name": group}));
    }
    for sa in &args.service_accounts {
        let Some((ns, name)) = sa
            .split_once(':')
            .filter(|(_, n)| !n.is_empty() && !n.contains(':'))
        else {
            anyhow::bail!("serviceaccount must be <namespace>:<name>");
        };
        let ns = if ns.is_empty() { namespace } else { ns };
        out.push(json!({"kind": "ServiceAccount", "name": name, "namespace": ns}));
    }
    Ok(out)
}

fn same_subject(a: &Value, b: &Value) -> bool {
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    ["kind", "name", "namespace"]
        .iter()
        .all(|k| f(a, k) == f(b, k))
}

pub async fn run(global: &GlobalOptions, args: &SubjectArgs) -> anyhow::Result<()> {
    // `--user` is also the global flag naming the kubeconfig user; here it is the subject, as
    // upstream's local flag shadows the global one.
    let mut global = global.clone();
    let users: Vec<String> = global.user.take().into_iter().collect();
    let global = &global;
    if users.is_empty() && args.groups.is_empty() && args.service_accounts.is_empty() {
        anyhow::bail!("you must specify at least one value of user, group or serviceaccount");
    }
    let namespace = Factory::new(global).await?.namespace().to_owned();
    let wanted = subjects(args, &users, &namespace)?;
    if args.args.is_empty() && args.common.filenames.is_empty() {
        anyhow::bail!(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>"
        );
    }
    let change = Change {
        verb: "subjects updated",
        print_unchanged: false,
    };
    apply_changes(global, &args.args, &args.common, change, |target, object| {
        if !matches!(
            target.info.resource.kind.as_str(),
            "RoleBinding" | "ClusterRoleBinding"
        ) {
            return Err(anyhow::anyhow!(
                "error: {}/{} setting subjects is only supported for RoleBinding/ClusterRoleBinding",
                target.info.resource.name,
                target.info.name.as_deref().unwrap_or("")
            ));
        }
        let mut list: Vec<Value> = object
            .get("subjects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for s in &wanted {
            if !list.iter().any(|have| same_subject(have, s)) {
                list.push(s.clone());
            }
        }
        object["subjects"] = Value::Array(list);
        Ok(Vec::new())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_flags() {
        let mut args = SubjectArgs {
            args: vec![],
            groups: vec!["g".into()],
            service_accounts: vec!["ns:sa".into(), ":local".into()],
            common: crate::cmd::set::CommonArgs {
                filenames: vec![],
                recursive: false,
                selector: None,
                all: false,
                local: false,
                print: Default::default(),
                dry_run: None,
                field_manager: String::new(),
            },
        };
        let got = subjects(&args, &["u".into()], "here").unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[3]["namespace"], "here");
        assert!(same_subject(&got[0], &json!({"kind": "User", "name": "u"})));
        args.service_accounts = vec!["bad".into()];
        assert!(subjects(&args, &[], "x").is_err());
    }
}
