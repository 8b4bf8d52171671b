//! `kubectl autoscale`: an autoscaling/v2 HorizontalPodAutoscaler for each scalable object
//! (`--min`, `--max`, `--cpu-percent`, `--name`), printed as `... autoscaled`.

use super::mutate::DryRun;
use crate::app::options::GlobalOptions;
use crate::cmd::set::objects;
use crate::factory::Factory;
use crate::resource::{self, Selection};
use clap::Args;
use serde_json::{Value, json};

/// Flags of `kubectl autoscale`.
#[derive(Debug, Clone, Args)]
pub struct AutoscaleArgs {
    /// (-f FILENAME | TYPE NAME | TYPE/NAME)
    pub args: Vec<String>,
    /// The lower limit for the number of pods that can be set by the autoscaler. If it's not
    /// specified or negative, the server will apply a default value.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int32")]
    pub min: i64,
    /// The upper limit for the number of pods that can be set by the autoscaler. Required.
    #[arg(long, allow_negative_numbers = true, value_name = "int32")]
    pub max: Option<i64>,
    /// The target average CPU utilization (represented as a percent of requested CPU) over all
    /// the pods. If it's not specified or negative, a default autoscaling policy will be used.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int32")]
    pub cpu_percent: i64,
    /// The name for the newly created object. If not specified, the name of the input resource
    /// will be used.
    #[arg(long, value_name = "string")]
    pub name: Option<String>,
    /// Filename, directory, or URL to files identifying the resource to autoscale.
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-autoscale", value_name = "string")]
    pub field_manager: String,
}

/// The kinds with a `scale` subresource among the built-in ones.
const SCALABLE: &[&str] = &[
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "StatefulSet",
];

/// The HorizontalPodAutoscaler for `target_kind`/`target_name` (`group_version` of its type).
pub fn hpa(
    name: &str,
    group_version: &str,
    target_kind: &str,
    target_name: &str,
    min: i64,
    max: i64,
    cpu_percent: i64,
) -> Value {
    let mut spec = json!({
        "maxReplicas": max,
        "scaleTargetRef": {"apiVersion": group_version, "kind": target_kind, "name": target_name},
    });
    if min > 0 {
        spec["minReplicas"] = json!(min);
    }
    if cpu_percent >= 0 {
        spec["metrics"] = json!([{
            "resource": {"name": "cpu", "target": {"averageUtilization": cpu_percent, "type": "Utilization"}},
            "type": "Resource",
        }]);
    }
    json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": spec,
    })
}

pub async fn run(global: &GlobalOptions, args: &AutoscaleArgs) -> anyhow::Result<()> {
    let Some(max) = args.max else {
        anyhow::bail!("required flag(s) \"max\" not set");
    };
    if max < 1 {
        anyhow::bail!("--max=MAXPODS is required and must be at least 1, max: {max}");
    }
    if max < args.min {
        anyhow::bail!(
            "--max=MAXPODS must be larger or equal to --min=MINPODS, max: {max}, min: {}",
            args.min
        );
    }
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let mut reporter = args.print.reporter()?.typed();
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let targets = objects::targets(&factory, &args.args, &sel, false).await?;
    let hpa_resource = factory
        .discovery()
        .mapper()
        .await?
        .resolve("horizontalpodautoscalers.autoscaling")
        .ok_or_else(|| {
            anyhow::anyhow!("the server doesn't have a resource type \"horizontalpodautoscalers\"")
        })?;
    let mut errors = Vec::new();
    for target in &targets {
        let r = &target.info.resource;
        if !SCALABLE.contains(&r.kind.as_str()) {
            anyhow::bail!(
                "cannot autoscale a {}: could not find scale subresource for {}/{}, Resource={} in discovery information",
                r.kind,
                r.group,
                r.version,
                r.name
            );
        }
        let ref_name = target.info.name.clone().unwrap_or_default();
        let name = args.name.clone().unwrap_or_else(|| ref_name.clone());
        let object = hpa(
            &name,
            &r.group_version(),
            &r.kind,
            &ref_name,
            args.min,
            max,
            args.cpu_percent,
        );
        if dry_run == DryRun::Client {
            reporter.report(&hpa_resource, &client_side(object), "autoscaled", dry_run)?;
            continue;
        }
        let mut query = vec![("fieldManager".to_owned(), args.field_manager.clone())];
        query.extend(dry_run.query());
        let url = resource::with_query(
            &hpa_resource.collection_path(target.info.namespace.as_deref()),
            &query,
        );
        let created = factory
            .request(
                http::Method::POST,
                &url,
                Some((serde_json::to_vec(&object)?, "application/json")),
                None,
            )
            .await;
        match created {
            Ok(created) => reporter.report(&hpa_resource, &created, "autoscaled", dry_run)?,
            Err(err) => errors.push(err),
        }
    }
    crate::cmd::set::finish(errors)
}

/// The object as upstream's typed client prints it without a server: the zero values Go
/// serialises (`creationTimestamp: null`, an empty status).
fn client_side(mut object: Value) -> Value {
    object["metadata"]["creationTimestamp"] = Value::Null;
    object["status"] = json!({"currentMetrics": null, "desiredReplicas": 0});
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects() {
        let h = hpa("h", "apps/v1", "Deployment", "web", 2, 5, 80);
        assert_eq!(h["spec"]["minReplicas"], 2);
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        let bare = hpa("h", "apps/v1", "Deployment", "web", -1, 3, -1);
        assert!(bare["spec"].get("minReplicas").is_none());
        assert!(bare["spec"].get("metrics").is_none());
        assert_eq!(client_side(bare)["status"]["desiredReplicas"], 0);
    }
}
