//! `kubectl rollout status`: upstream's status viewers (the progress lines of Deployments,
//! DaemonSets and StatefulSets) printed for the object as read, then for each change a watch
//! brings, until the rollout is done, the object is deleted or `--timeout` passes.

use super::TargetArgs;
use crate::app::options::GlobalOptions;
use crate::cmd::set::objects::{self, Target};
use crate::factory::Factory;
use crate::resource;
use clap::Args;
use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;

/// Flags of `kubectl rollout status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Watch the status of the rollout until it's done.
    #[arg(short = 'w', long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub watch: bool,
    /// Pin to a specific revision for showing its status. Defaults to 0 (last revision).
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "int"
    )]
    pub revision: i64,
    /// The length of time to wait before ending watch, zero means never.
    #[arg(long, default_value = "0s", value_name = "duration")]
    pub timeout: String,
}

/// A Go duration flag (`0` and `0s` mean none); `command` names the command in cobra's usage
/// hint (`rollout status`).
pub fn duration_flag(text: &str, flag: &str, command: &str) -> anyhow::Result<Option<Duration>> {
    if text == "0" {
        return Ok(None);
    }
    let d = crate::app::config::parse_go_duration(text.trim_start_matches('+')).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid argument \"{text}\" for \"--{flag}\" flag: time: invalid duration \"{text}\"\nSee 'kubectl {command} --help' for usage."
        )
    })?;
    Ok((!d.is_zero()).then_some(d))
}

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Upstream's `GroupKind` string: `Pod`, `Job.batch`.
pub fn group_kind(kind: &str, group: &str) -> String {
    if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    }
}

/// One status line for `object` and whether the rollout is done; `Err` for a rollout that
/// cannot finish (or a revision that is not the running one).
pub fn status(kind: &str, object: &Value, revision: i64) -> anyhow::Result<(String, bool)> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let generation = int(object, "/metadata/generation");
    let observed = int(object, "/status/observedGeneration");
    match kind {
        "Deployment" => {
            if revision > 0 {
                let running = object
                    .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                    .and_then(Value::as_str)
                    .and_then(|r| r.parse::<i64>().ok())
                    .unwrap_or(0);
                if running != revision {
                    anyhow::bail!(
                        "desired revision ({revision}) is different from the running revision ({running})"
                    );
                }
            }
            if generation > observed {
                return Ok((
                    "Waiting for deployment spec update to be observed...\n".into(),
                    false,
                ));
            }
            let conditions = object
                .pointer("/status/conditions")
                .and_then(Value::as_array);
            let timed_out = conditions
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Progressing" && c["reason"] == "ProgressDeadlineExceeded");
            if timed_out {
                anyhow::bail!("deployment {name:?} exceeded its progress deadline");
            }
            let replicas = object.pointer("/spec/replicas").and_then(Value::as_i64);
            let updated = int(object, "/status/updatedReplicas");
            let current = int(object, "/status/replicas");
            let available = int(object, "/status/availableReplicas");
            if let Some(want) = replicas.filter(|w| updated < *w) {
                return Ok((
                    format!(
                        "Waiting for deployment {name:?} rollout to finish: {updated} out of {want} new replicas have been updated...\n"
                    ),
                    false,
                ));
            }
            if current > updated {
                return Ok((
                    format!(
                        "Waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination...\n",
                        current - updated
                    ),
                    false,
                ));
            }
            if available < updated {
                return Ok((
                    format!(
                        "Waiting for deployment {name:?} rollout to finish: {available} of {updated} updated replicas are available...\n"
                    ),
                    false,
                ));
            }
            Ok((
                format!("deployment {name:?} successfully rolled out\n"),
                true,
            ))
        }
        "DaemonSet" => {
            let strategy = object
                .pointer("/spec/updateStrategy/type")
                .and_then(Value::as_str)
                .unwrap_or("RollingUpdate");
            if strategy != "RollingUpdate" {
                anyhow::bail!("rollout status is only available for RollingUpdate strategy type");
            }
            if generation > observed {
                return Ok((
                    "Waiting for daemon set spec update to be observed...\n".into(),
                    false,
                ));
            }
            let desired = int(object, "/status/desiredNumberScheduled");
            let updated = int(object, "/status/updatedNumberScheduled");
            let available = int(object, "/status/numberAvailable");
            if updated < desired {
                return Ok((
                    format!(
                        "Waiting for daemon set {name:?} rollout to finish: {updated} out of {desired} new pods have been updated...\n"
                    ),
                    false,
                ));
            }
            if available < desired {
                return Ok((
                    format!(
                        "Waiting for daemon set {name:?} rollout to finish: {available} of {desired} updated pods are available...\n"
                    ),
                    false,
                ));
            }
            Ok((
                format!("daemon set {name:?} successfully rolled out\n"),
                true,
            ))
        }
        "StatefulSet" => statefulset_status(object, generation, observed),
        _ => unreachable_kind(kind),
    }
}

fn unreachable_kind(kind: &str) -> anyhow::Result<(String, bool)> {
    anyhow::bail!("no status viewer has been implemented for {kind}")
}

fn statefulset_status(
    object: &Value,
    generation: i64,
    observed: i64,
) -> anyhow::Result<(String, bool)> {
    let strategy = object
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate");
    if strategy != "RollingUpdate" {
        anyhow::bail!("rollout status is only available for RollingUpdate strategy type");
    }
    if observed == 0 || generation > observed {
        return Ok((
            "Waiting for statefulset spec update to be observed...\n".into(),
            false,
        ));
    }
    let replicas = object.pointer("/spec/replicas").and_then(Value::as_i64);
    let ready = int(object, "/status/readyReplicas");
    if let Some(want) = replicas.filter(|w| ready < *w) {
        return Ok((
            format!("Waiting for {} pods to be ready...\n", want - ready),
            false,
        ));
    }
    let updated = int(object, "/status/updatedReplicas");
    if object
        .pointer("/spec/updateStrategy/rollingUpdate")
        .is_some_and(|r| !r.is_null())
    {
        let partition = object
            .pointer("/spec/updateStrategy/rollingUpdate/partition")
            .and_then(Value::as_i64);
        if let (Some(want), Some(p)) = (replicas, partition)
            && updated < want - p
        {
            return Ok((
                format!(
                    "Waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated...\n",
                    want - p
                ),
                false,
            ));
        }
        return Ok((
            format!("partitioned roll out complete: {updated} new pods have been updated...\n"),
            true,
        ));
    }
    let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (update_rev, current_rev) = (s("/status/updateRevision"), s("/status/currentRevision"));
    if update_rev != current_rev {
        return Ok((
            format!(
                "waiting for statefulset rolling update to complete {updated} pods at revision {update_rev}...\n"
            ),
            false,
        ));
    }
    Ok((
        format!(
            "statefulset rolling update complete {} pods at revision {current_rev}...\n",
            int(object, "/status/currentReplicas")
        ),
        true,
    ))
}

pub async fn run(global: &GlobalOptions, args: &StatusArgs) -> anyhow::Result<()> {
    args.target.require()?;
    if args.revision < 0 {
        anyhow::bail!("revision must be a positive integer: {}", args.revision);
    }
    let timeout = duration_flag(&args.timeout, "timeout", "rollout status")?;
    let factory = Factory::new(global).await?;
    let mut sel = args.target.selection();
    sel.all = true;
    let targets = objects::targets(&factory, &args.target.args, &sel, false).await?;
    if targets.is_empty() {
        eprintln!("No resources found in {} namespace.", factory.namespace());
        return Ok(());
    }
    for target in &targets {
        let kind = target.info.resource.kind.as_str();
        if !matches!(kind, "Deployment" | "DaemonSet" | "StatefulSet") {
            anyhow::bail!(
                "no status viewer has been implemented for {}",
                group_kind(kind, &target.info.resource.group)
            );
        }
        let follow = follow(&factory, target, args);
        match timeout {
            Some(limit) => tokio::time::timeout(limit, follow)
                .await
                .map_err(|_| anyhow::anyhow!("timed out waiting for the condition"))??,
            None => follow.await?,
        }
    }
    Ok(())
}

/// Prints the status of `target`, then of each change, until done.
async fn follow(factory: &Factory, target: &Target, args: &StatusArgs) -> anyhow::Result<()> {
    use std::io::Write;
    let kind = target.info.resource.kind.as_str();
    let name = target.info.name.clone().unwrap_or_default();
    let mut object = factory.get(&target.info.path()).await?;
    loop {
        let (line, done) = status(kind, &object, args.revision)?;
        print!("{line}");
        let _ = std::io::stdout().flush();
        if done || !args.watch {
            return Ok(());
        }
        object = next_change(factory, target, &name, &object).await?;
    }
}

/// Waits for the next version of the object (the watch is resumed if the server ends it).
async fn next_change(
    factory: &Factory,
    target: &Target,
    name: &str,
    current: &Value,
) -> anyhow::Result<Value> {
    let mut rv = current
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    loop {
        let query = vec![
            ("fieldSelector".to_owned(), format!("metadata.name={name}")),
            ("resourceVersion".to_owned(), rv.clone()),
            ("allowWatchBookmarks".to_owned(), "true".to_owned()),
            ("watch".to_owned(), "true".to_owned()),
        ];
        let url = resource::with_query(
            &target
                .info
                .resource
                .collection_path(target.info.namespace.as_deref()),
            &query,
        );
        let mut events = Box::pin(factory.watch(&url, None).await?);
        while let Some(event) = events.next().await {
            let (kind, object) = event?;
            match kind.as_str() {
                "ADDED" | "MODIFIED" => return Ok(object),
                "DELETED" => anyhow::bail!("object has been deleted"),
                _ => {}
            }
            if let Some(v) = object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
            {
                rv = v.to_owned();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(gen_: i64, observed: i64, status: Value) -> Value {
        let mut status = status;
        status["observedGeneration"] = json!(observed);
        json!({"metadata": {"name": "web", "generation": gen_, "annotations": {"deployment.kubernetes.io/revision": "2"}},
               "spec": {"replicas": 3}, "status": status})
    }

    #[test]
    fn deployment_lines() {
        let cases = [
            (
                deployment(2, 1, json!({})),
                "Waiting for deployment spec update to be observed...\n",
                false,
            ),
            (
                deployment(1, 1, json!({"updatedReplicas": 1, "replicas": 3})),
                "Waiting for deployment \"web\" rollout to finish: 1 out of 3 new replicas have been updated...\n",
                false,
            ),
            (
                deployment(1, 1, json!({"updatedReplicas": 3, "replicas": 4})),
                "Waiting for deployment \"web\" rollout to finish: 1 old replicas are pending termination...\n",
                false,
            ),
            (
                deployment(
                    1,
                    1,
                    json!({"updatedReplicas": 3, "replicas": 3, "availableReplicas": 1}),
                ),
                "Waiting for deployment \"web\" rollout to finish: 1 of 3 updated replicas are available...\n",
                false,
            ),
            (
                deployment(
                    1,
                    1,
                    json!({"updatedReplicas": 3, "replicas": 3, "availableReplicas": 3}),
                ),
                "deployment \"web\" successfully rolled out\n",
                true,
            ),
        ];
        for (object, line, done) in cases {
            assert_eq!(
                status("Deployment", &object, 0).unwrap(),
                (line.to_owned(), done)
            );
        }
        let d = deployment(1, 1, json!({}));
        assert_eq!(
            status("Deployment", &d, 1).unwrap_err().to_string(),
            "desired revision (1) is different from the running revision (2)"
        );
        let stuck = deployment(
            1,
            1,
            json!({"conditions": [{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}]}),
        );
        assert!(status("Deployment", &stuck, 0).is_err());
    }

    #[test]
    fn daemonset_and_statefulset_lines() {
        let ds = json!({"metadata": {"name": "d", "generation": 1}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 1}});
        assert_eq!(
            status("DaemonSet", &ds, 0).unwrap().0,
            "Waiting for daemon set \"d\" rollout to finish: 1 of 2 updated pods are available...\n"
        );
        let sts = json!({"metadata": {"name": "s", "generation": 1}, "spec": {"replicas": 2, "updateStrategy": {"type": "RollingUpdate"}},
                         "status": {"observedGeneration": 1, "readyReplicas": 2, "updatedReplicas": 2, "currentReplicas": 2, "currentRevision": "s-1", "updateRevision": "s-1"}});
        assert_eq!(
            status("StatefulSet", &sts, 0).unwrap(),
            (
                "statefulset rolling update complete 2 pods at revision s-1...\n".to_owned(),
                true
            )
        );
        let ondelete = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        assert!(status("StatefulSet", &ondelete, 0).is_err());
        assert_eq!(group_kind("Job", "batch"), "Job.batch");
        assert_eq!(duration_flag("0s", "timeout", "x").unwrap(), None);
        assert_eq!(
            duration_flag("2s", "timeout", "x").unwrap(),
            Some(Duration::from_secs(2))
        );
        assert!(duration_flag("x", "timeout", "x").is_err());
    }
}
