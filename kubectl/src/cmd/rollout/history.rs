//! `kubectl rollout history` and `rollout undo`. A Deployment's revisions are its ReplicaSets
//! (annotation `deployment.kubernetes.io/revision`); a DaemonSet's or StatefulSet's are its
//! ControllerRevisions. Undo writes a revision's pod template back.

use super::TargetArgs;
use super::template;
use crate::app::options::GlobalOptions;
use crate::cmd::mutate::{self, DryRun};
use crate::cmd::set::objects::{self, Target};
use crate::factory::Factory;
use crate::resource;
use clap::Args;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Flags of `kubectl rollout history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// See the details, including podTemplate of the revision specified
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "int"
    )]
    pub revision: i64,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
}

/// Flags of `kubectl rollout undo`.
#[derive(Debug, Clone, Args)]
pub struct UndoArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The revision to rollback to. Default to 0 (last revision).
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "int"
    )]
    pub to_revision: i64,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
}

const REVISION: &str = "deployment.kubernetes.io/revision";

/// One revision: the object holding it (ReplicaSet or ControllerRevision) and its template.
#[derive(Debug, Clone)]
pub struct Revision {
    pub holder: Value,
    pub template: Value,
}

fn owned_by(item: &Value, uid: &str) -> bool {
    item.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r["uid"] == uid && r["controller"] == true)
}

/// The revisions of `target`, by number.
pub async fn revisions(
    factory: &Factory,
    target: &Target,
) -> anyhow::Result<BTreeMap<i64, Revision>> {
    let kind = target.info.resource.kind.as_str();
    let uid = target
        .object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ns = target.info.namespace.as_deref().unwrap_or("default");
    let path = match kind {
        "Deployment" => format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
        "DaemonSet" | "StatefulSet" => {
            format!("/apis/apps/v1/namespaces/{ns}/controllerrevisions")
        }
        _ => anyhow::bail!(
            "error retrieving history for \"{kind}\", no visitor method exists for {{{} {kind}}}",
            target.info.resource.group
        ),
    };
    let list = factory.get(&path).await?;
    let mut out = BTreeMap::new();
    for item in list["items"].as_array().into_iter().flatten() {
        if !owned_by(item, uid) {
            continue;
        }
        let mut holder = item.clone();
        let (number, template) = if kind == "Deployment" {
            holder["apiVersion"] = json!("apps/v1");
            holder["kind"] = json!("ReplicaSet");
            let n = item
                .pointer(&format!(
                    "/metadata/annotations/{}",
                    REVISION.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                .and_then(|r| r.parse::<i64>().ok());
            (n, item.pointer("/spec/template").cloned())
        } else {
            holder["apiVersion"] = json!("apps/v1");
            holder["kind"] = json!("ControllerRevision");
            let mut t = item.pointer("/data/spec/template").cloned();
            if let Some(map) = t.as_mut().and_then(Value::as_object_mut) {
                map.remove("$patch");
            }
            (item.get("revision").and_then(Value::as_i64), t)
        };
        if let (Some(n), Some(template)) = (number, template) {
            out.insert(n, Revision { holder, template });
        }
    }
    Ok(out)
}

/// The `REVISION  CHANGE-CAUSE` table (tabwriter padding 2).
pub fn history_table(history: &BTreeMap<i64, Revision>) -> String {
    let width = history
        .keys()
        .map(|k| k.to_string().len())
        .chain(std::iter::once("REVISION".len()))
        .max()
        .unwrap_or(8)
        + 2;
    let mut out = format!("{:<width$}CHANGE-CAUSE\n", "REVISION");
    for (n, rev) in history {
        let cause = rev
            .holder
            .pointer("/metadata/annotations/kubernetes.io~1change-cause")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .unwrap_or("<none>");
        out.push_str(&format!("{:<width$}{cause}\n", n.to_string()));
    }
    out
}

pub async fn run(global: &GlobalOptions, args: &HistoryArgs) -> anyhow::Result<()> {
    args.target.require()?;
    if args.revision < 0 {
        anyhow::bail!("revision must be a positive integer: {}", args.revision);
    }
    let format = args.print.format()?;
    let factory = Factory::new(global).await?;
    let mut sel = args.target.selection();
    sel.all = true;
    let targets = objects::targets(&factory, &args.target.args, &sel, false).await?;
    let mut mapper = None;
    for target in &targets {
        let history = revisions(&factory, target).await?;
        if let Some(format) = &format {
            let mapper = match &mut mapper {
                Some(m) => m,
                None => mapper.insert(factory.discovery().mapper().await?),
            };
            // A DaemonSet's or StatefulSet's revision prints as the object with that revision's
            // template, as upstream applies the ControllerRevision to it.
            if target.info.resource.kind != "Deployment" {
                let mut reporter = mutate::Reporter::new(Some(format.clone())).typed();
                for (n, rev) in &history {
                    if args.revision > 0 && *n != args.revision {
                        continue;
                    }
                    let mut object = target.object.clone();
                    object["spec"]["template"] = rev.template.clone();
                    reporter.report(&target.info.resource, &object, "", DryRun::None)?;
                }
                if args.revision > 0 && !history.contains_key(&args.revision) {
                    anyhow::bail!("unable to find the specified revision");
                }
                continue;
            }
            let holder_type = "replicasets.apps";
            let resource = mapper.resolve(holder_type).ok_or_else(|| {
                anyhow::anyhow!("the server doesn't have a resource type \"{holder_type}\"")
            })?;
            let mut reporter = mutate::Reporter::new(Some(format.clone())).typed();
            let chosen: Vec<&Revision> = if args.revision > 0 {
                vec![
                    history
                        .get(&args.revision)
                        .ok_or_else(|| anyhow::anyhow!("unable to find the specified revision"))?,
                ]
            } else {
                history.values().collect()
            };
            for rev in chosen {
                reporter.report(&resource, &rev.holder, "", DryRun::None)?;
            }
            continue;
        }
        let text = if history.is_empty() {
            "No rollout history found.".to_owned()
        } else if args.revision > 0 {
            let rev = history
                .get(&args.revision)
                .ok_or_else(|| anyhow::anyhow!("unable to find the specified revision"))?;
            template::describe(&rev.template)
        } else {
            history_table(&history)
        };
        let with = if args.revision > 0 {
            format!("with revision #{}", args.revision)
        } else {
            String::new()
        };
        println!("{} {with}\n{text}", target.name_line());
    }
    Ok(())
}

/// The template without the label the controller adds to tell ReplicaSets apart.
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove("pod-template-hash");
    }
    t
}

/// The revision undo goes back to: `to` itself, or the newest but one.
pub fn pick_revision<'a>(
    history: &'a BTreeMap<i64, Revision>,
    to: i64,
    name: &str,
) -> anyhow::Result<(i64, &'a Revision)> {
    if to != 0 {
        return history
            .get(&to)
            .map(|r| (to, r))
            .ok_or_else(|| anyhow::anyhow!("unable to find specified revision {to} in history"));
    }
    let mut newest = history.iter().rev();
    newest.next();
    newest
        .next()
        .map(|(n, r)| (*n, r))
        .ok_or_else(|| anyhow::anyhow!("no rollout history found for deployment {name:?}"))
}

/// The annotations a Deployment gets back on undo: its own bookkeeping ones, and the
/// ReplicaSet's others.
fn undo_annotations(deployment: &Value, rs: &Value) -> Map<String, Value> {
    const SKIP: &[&str] = &[
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        "deployment.kubernetes.io/revision-history",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.deployment.rollback.to",
    ];
    let mut out = Map::new();
    let own = deployment
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    for (k, v) in own.into_iter().flatten() {
        if SKIP.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    let theirs = rs
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    for (k, v) in theirs.into_iter().flatten() {
        if !SKIP.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

pub async fn run_undo(global: &GlobalOptions, args: &UndoArgs) -> anyhow::Result<()> {
    args.target.require()?;
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let format = args.print.format()?.filter(|f| !f.is_table());
    let factory = Factory::new(global).await?;
    let mut sel = args.target.selection();
    sel.all = true;
    let targets = objects::targets(&factory, &args.target.args, &sel, false).await?;
    let mut reporter = args.print.reporter_for(format.clone()).typed();
    let mut errors = Vec::new();
    for target in &targets {
        match undo_one(&factory, target, args.to_revision, dry_run).await {
            // Upstream prints the object as it was read, before the rollback.
            Ok(_) if format.is_some() => {
                reporter.report(&target.info.resource, &target.object, "", dry_run)?
            }
            Ok(result) => println!("{} {result}{}", target.name_line(), dry_run.suffix()),
            Err(err) => errors.push(err),
        }
    }
    crate::cmd::set::finish(errors)
}

async fn undo_one(
    factory: &Factory,
    target: &Target,
    to: i64,
    dry_run: DryRun,
) -> anyhow::Result<String> {
    let kind = target.info.resource.kind.as_str();
    if !matches!(kind, "Deployment" | "DaemonSet" | "StatefulSet") {
        anyhow::bail!("no rollbacker has been implemented for {kind:?}");
    }
    let name = target.info.name.as_deref().unwrap_or("");
    if kind == "Deployment" && target.object.pointer("/spec/paused") == Some(&Value::Bool(true)) {
        anyhow::bail!(
            "you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and try again"
        );
    }
    let history = revisions(factory, target).await?;
    let (number, rev) = pick_revision(&history, to, name)?;
    let current = target
        .object
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    if dry_run == DryRun::Client {
        return Ok(template::describe(&rev.template));
    }
    if without_hash(&rev.template) == without_hash(&current) {
        return Ok(format!(
            "skipped rollback (current template already matches revision {number})"
        ));
    }
    let mut query = Vec::new();
    query.extend(dry_run.query());
    let url = resource::with_query(&target.info.path(), &query);
    let (body, content_type) = if kind == "Deployment" {
        let patch = json!([
            {"op": "replace", "path": "/spec/template", "value": without_hash(&rev.template)},
            {"op": "replace", "path": "/metadata/annotations", "value": undo_annotations(&target.object, &rev.holder)},
        ]);
        (patch, "application/json-patch+json")
    } else {
        let patch = json!({"spec": {"template": rev.template}});
        (patch, "application/merge-patch+json")
    };
    factory
        .request(
            http::Method::PATCH,
            &url,
            Some((serde_json::to_vec(&body)?, content_type)),
            None,
        )
        .await
        .map_err(|err| {
            anyhow::anyhow!(
                "failed restoring revision {number}: {}",
                crate::errors::render(&err)
            )
        })?;
    Ok("rolled back".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(cause: Option<&str>) -> Revision {
        let mut holder = json!({"metadata": {}});
        if let Some(c) = cause {
            holder["metadata"]["annotations"] = json!({"kubernetes.io/change-cause": c});
        }
        Revision {
            holder,
            template: json!({}),
        }
    }

    #[test]
    fn table_and_picking() {
        let history: BTreeMap<i64, Revision> = [
            (1, rev(None)),
            (2, rev(Some("kubectl set image"))),
            (10, rev(None)),
        ]
        .into();
        assert_eq!(
            history_table(&history),
            "REVISION  CHANGE-CAUSE\n1         <none>\n2         kubectl set image\n10        <none>\n"
        );
        assert_eq!(pick_revision(&history, 0, "web").unwrap().0, 2);
        assert_eq!(pick_revision(&history, 1, "web").unwrap().0, 1);
        assert_eq!(
            pick_revision(&history, 3, "web").unwrap_err().to_string(),
            "unable to find specified revision 3 in history"
        );
        let one: BTreeMap<i64, Revision> = [(1, rev(None))].into();
        assert_eq!(
            pick_revision(&one, 0, "web").unwrap_err().to_string(),
            "no rollout history found for deployment \"web\""
        );
        let d = json!({"metadata": {"annotations": {REVISION: "3", "keep": "x"}}});
        let rs = json!({"metadata": {"annotations": {REVISION: "1", "theirs": "y"}}});
        let got = undo_annotations(&d, &rs);
        assert_eq!(Value::Object(got), json!({REVISION: "3", "theirs": "y"}));
    }
}
