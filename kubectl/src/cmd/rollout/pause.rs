//! `kubectl rollout pause`, `resume` and `restart`: `spec.paused` of a Deployment, and the
//! `kubectl.kubernetes.io/restartedAt` annotation of a pod template.

use super::TargetArgs;
use crate::app::options::GlobalOptions;
use crate::cmd::mutate::DryRun;
use crate::cmd::set::objects::{self, merge_diff, send_patch};
use crate::factory::Factory;
use clap::Args;
use serde_json::{Map, Value};

/// Flags of `kubectl rollout pause`, `resume` and `restart`.
#[derive(Debug, Clone, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-rollout", value_name = "string")]
    pub field_manager: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Pause,
    Resume,
    Restart,
}

/// Changes `object` for `action`; `Err` carries upstream's reason (after the object's name).
pub fn change(action: Action, kind: &str, object: &mut Value, now: &str) -> Result<(), String> {
    let paused = object.pointer("/spec/paused") == Some(&Value::Bool(true));
    match action {
        Action::Pause | Action::Resume if kind != "Deployment" => Err(format!(
            "{} is not supported",
            if action == Action::Pause {
                "pausing"
            } else {
                "resuming"
            }
        )),
        Action::Pause if paused => Err("is already paused".into()),
        Action::Resume if !paused => Err("is not paused".into()),
        Action::Pause => {
            object["spec"]["paused"] = Value::Bool(true);
            Ok(())
        }
        // Upstream's typed object omits `paused: false`, so its patch deletes the field.
        Action::Resume => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("paused");
            }
            Ok(())
        }
        Action::Restart => {
            if !matches!(kind, "Deployment" | "DaemonSet" | "StatefulSet") {
                return Err("restarting is not supported".into());
            }
            if paused {
                return Err("can't restart paused deployment (run rollout resume first)".into());
            }
            let template = object
                .pointer_mut("/spec/template")
                .and_then(Value::as_object_mut)
                .ok_or("has no pod template")?;
            let meta = template
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            let annotations = meta
                .as_object_mut()
                .ok_or("has no pod template")?
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            annotations["kubectl.kubernetes.io/restartedAt"] = Value::String(now.to_owned());
            Ok(())
        }
    }
}

fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    // Go formats the local time; these hosts (and the tests) run in UTC.
    format_rfc3339(secs, 0)
}

/// RFC 3339 with seconds, `Z` for UTC and `+hh:mm` otherwise, as Go's `time.RFC3339`.
pub fn format_rfc3339(secs: i64, offset: i64) -> String {
    let local = secs + offset;
    let days = local.div_euclid(86_400);
    let rem = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let zone = if offset == 0 {
        "Z".to_owned()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let o = offset.abs();
        format!("{sign}{:02}:{:02}", o / 3600, (o % 3600) / 60)
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{zone}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub async fn run(global: &GlobalOptions, args: &PauseArgs, action: Action) -> anyhow::Result<()> {
    args.target.require()?;
    // Upstream's pause, resume and restart have no --dry-run.
    let dry_run = DryRun::None;
    let mut reporter = args.print.reporter()?.typed();
    let factory = Factory::new(global).await?;
    let mut sel = args.target.selection();
    sel.all = true;
    let targets = objects::targets(&factory, &args.target.args, &sel, false).await?;
    if targets.is_empty() {
        eprintln!("No resources found in {} namespace.", factory.namespace());
    }
    let now = now_rfc3339();
    let mut errors = Vec::new();
    for target in &targets {
        let mut changed = target.object.clone();
        if let Err(reason) = change(action, &target.info.resource.kind, &mut changed, &now) {
            errors.push(anyhow::anyhow!("error: {} {reason}", target.quoted()));
            continue;
        }
        let Some(patch) = merge_diff(&target.object, &changed) else {
            errors.push(anyhow::anyhow!(
                "failed to create patch for {}: if restart has already been triggered within the past second, please wait before attempting to trigger another",
                target.info.name.as_deref().unwrap_or("")
            ));
            continue;
        };
        let verb = match action {
            Action::Pause => "paused",
            Action::Resume => "resumed",
            Action::Restart => "restarted",
        };
        match send_patch(&factory, &target.info, &patch, dry_run, &args.field_manager).await {
            Ok(object) => reporter.report(&target.info.resource, &object, verb, dry_run)?,
            Err(err) => errors.push(anyhow::anyhow!(
                "failed to patch: {}",
                crate::errors::render(&err)
            )),
        }
    }
    crate::cmd::set::finish(errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes() {
        let mut d = json!({"spec": {"template": {"spec": {}}}});
        assert_eq!(
            change(Action::Resume, "Deployment", &mut d, "t"),
            Err("is not paused".into())
        );
        change(Action::Pause, "Deployment", &mut d, "t").unwrap();
        assert_eq!(d["spec"]["paused"], true);
        assert_eq!(
            change(Action::Pause, "Deployment", &mut d, "t"),
            Err("is already paused".into())
        );
        assert!(
            change(Action::Restart, "Deployment", &mut d, "t")
                .unwrap_err()
                .starts_with("can't restart")
        );
        change(Action::Resume, "Deployment", &mut d, "t").unwrap();
        assert!(d["spec"].get("paused").is_none());
        change(Action::Restart, "Deployment", &mut d, "T1").unwrap();
        assert_eq!(
            d.pointer("/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt"),
            Some(&json!("T1"))
        );
        assert!(change(Action::Pause, "DaemonSet", &mut d, "t").is_err());
        assert!(change(Action::Restart, "ConfigMap", &mut json!({}), "t").is_err());
    }

    #[test]
    fn timestamps() {
        assert_eq!(format_rfc3339(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_795_305_600, 0), "2026-11-22T00:00:00Z");
        assert_eq!(format_rfc3339(1_709_210_096, 0), "2024-02-29T12:34:56Z");
        assert_eq!(format_rfc3339(3600, 3600), "1970-01-01T02:00:00+01:00");
    }
}
