//! `create deployment`, `create job` (from an image or `--from=cronjob/NAME`) and
//! `create cronjob`: upstream's generated objects, field for field.

use super::send::{self, Wrap};
use super::simple::CommonArgs;
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use clap::Args;
use serde_json::{Value, json};

/// Flags of `create deployment`.
#[derive(Debug, Clone, Args)]
pub struct DeploymentArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Image names to run. A deployment can have multiple images set for multi-container pod.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub image: Vec<String>,
    /// The containerPort that this deployment exposes.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int32")]
    pub port: i32,
    /// Number of replicas to create. Default is 1.
    #[arg(short = 'r', long, default_value_t = 1, value_name = "int32")]
    pub replicas: i32,
    /// COMMAND [args...]
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Flags of `create job`.
#[derive(Debug, Clone, Args)]
pub struct JobArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Image name to run.
    #[arg(long, value_name = "string")]
    pub image: Option<String>,
    /// The name of the resource to create a Job from (only cronjob is supported).
    #[arg(long, value_name = "string")]
    pub from: Option<String>,
    /// COMMAND [args...]
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Flags of `create cronjob`.
#[derive(Debug, Clone, Args)]
pub struct CronJobArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Image name to run.
    #[arg(long, value_name = "string")]
    pub image: Option<String>,
    /// A schedule in the Cron format the job should be run with.
    #[arg(long, value_name = "string")]
    pub schedule: Option<String>,
    /// job's restart policy. supported values: OnFailure, Never
    #[arg(long, value_name = "string")]
    pub restart: Option<String>,
    /// COMMAND [args...]
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The container name upstream derives from an image: last path segment, no tag or digest.
fn container_name(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    let name = last.split(':').next().unwrap_or(last);
    let name = name.split('@').next().unwrap_or(name);
    if name.contains(['_', '.']) {
        // Upstream appends a random suffix here; a fixed one keeps client dry runs stable.
        format!("{}-{}", name.replace(['_', '.'], "-"), "x")
    } else {
        name.to_owned()
    }
}

fn container(name: &str, image: &str, command: &[String]) -> Value {
    let mut c = json!({"name": name, "image": image, "resources": {}});
    if !command.is_empty() {
        c["command"] = json!(command);
    }
    c
}

pub fn deployment(name: &str, args: &DeploymentArgs) -> anyhow::Result<Value> {
    if args.image.is_empty() {
        anyhow::bail!("required flag(s) \"image\" not set");
    }
    if args.image.len() > 1 && !args.command.is_empty() {
        anyhow::bail!("cannot specify multiple --image options and command");
    }
    let mut containers: Vec<Value> = args
        .image
        .iter()
        .map(|image| container(&container_name(image), image, &[]))
        .collect();
    if !args.command.is_empty() {
        containers[0]["command"] = json!(args.command);
    }
    if args.port >= 0 {
        containers[0]["ports"] = json!([{"containerPort": args.port}]);
    }
    let labels = json!({"app": name});
    Ok(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": null},
        "spec": {
            "replicas": args.replicas,
            "selector": {"matchLabels": labels},
            "strategy": {},
            "template": {
                "metadata": {"labels": labels, "creationTimestamp": null},
                "spec": {"containers": containers},
            },
        },
        "status": {},
    }))
}

fn job_from_image(name: &str, image: &str, command: &[String]) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "creationTimestamp": null},
        "spec": {
            "template": {
                "metadata": {"creationTimestamp": null},
                "spec": {
                    "containers": [container(name, image, command)],
                    "restartPolicy": "Never",
                },
            },
        },
        "status": {},
    })
}

/// A Job instantiated by hand from a CronJob, owned by it as upstream's `--from` does.
pub fn job_from_cronjob(name: &str, cronjob: &Value) -> Value {
    let template = &cronjob["spec"]["jobTemplate"];
    let mut annotations = json!({"cronjob.kubernetes.io/instantiate": "manual"});
    if let Some(extra) = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        for (k, v) in extra {
            annotations[k] = v.clone();
        }
    }
    let mut metadata = json!({
        "name": name,
        "annotations": annotations,
        "creationTimestamp": null,
        "ownerReferences": [{
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": cronjob.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "uid": cronjob.pointer("/metadata/uid").cloned().unwrap_or(json!("")),
            "controller": true,
        }],
    });
    if let Some(labels) = template.pointer("/metadata/labels") {
        metadata["labels"] = labels.clone();
    }
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    // Go's struct encoding prints the empty template metadata the server omits.
    if let Some(meta) = spec.pointer_mut("/template/metadata") {
        if meta.get("creationTimestamp").is_none() {
            meta["creationTimestamp"] = Value::Null;
        }
    } else if let Some(t) = spec.get_mut("template") {
        t["metadata"] = json!({"creationTimestamp": null});
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec, "status": {}})
}

pub fn cronjob(name: &str, args: &CronJobArgs) -> anyhow::Result<Value> {
    let missing: Vec<&str> = [
        ("image", args.image.is_none()),
        ("schedule", args.schedule.is_none()),
    ]
    .into_iter()
    .filter_map(|(flag, absent)| absent.then_some(flag))
    .collect();
    if !missing.is_empty() {
        let quoted: Vec<String> = missing.iter().map(|m| format!("\"{m}\"")).collect();
        anyhow::bail!("required flag(s) {} not set", quoted.join(", "));
    }
    let image = args.image.as_deref().unwrap_or_default();
    let restart = args.restart.as_deref().unwrap_or("OnFailure");
    Ok(json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "creationTimestamp": null},
        "spec": {
            "schedule": args.schedule,
            "jobTemplate": {
                "metadata": {"name": name, "creationTimestamp": null},
                "spec": {
                    "template": {
                        "metadata": {"creationTimestamp": null},
                        "spec": {
                            "containers": [container(name, image, &args.command)],
                            "restartPolicy": restart,
                        },
                    },
                },
            },
        },
        "status": {},
    }))
}

pub async fn run_deployment(global: &GlobalOptions, args: &DeploymentArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "deployment")?;
    let object = deployment(name, args)?;
    let wrap = Wrap::Colon("failed to create deployment");
    send::send(global, &args.common, object, true, wrap).await
}

pub async fn run_cronjob(global: &GlobalOptions, args: &CronJobArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "cronjob")?;
    let object = cronjob(name, args)?;
    let wrap = Wrap::Colon("failed to create cronjob");
    send::send(global, &args.common, object, true, wrap).await
}

pub async fn run_job(global: &GlobalOptions, args: &JobArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "job")?;
    let object = match (&args.image, &args.from) {
        (Some(image), None) => job_from_image(name, image, &args.command),
        (None, Some(from)) => {
            if !args.command.is_empty() {
                anyhow::bail!("cannot specify --from and command");
            }
            let (kind, source) = from.split_once('/').unwrap_or((from.as_str(), ""));
            let factory = Factory::new(global).await?;
            let mapper = factory.discovery().mapper().await?;
            let resource = mapper.resolve(kind).ok_or_else(|| {
                anyhow::anyhow!("the server doesn't have a resource type \"{kind}\"")
            })?;
            let namespace = resource.namespaced.then(|| factory.namespace().to_owned());
            let cronjob = factory
                .get(&resource.object_path(namespace.as_deref(), source))
                .await?;
            if (resource.group.as_str(), resource.kind.as_str()) != ("batch", "CronJob") {
                // Upstream names the Go type it decoded.
                anyhow::bail!(
                    "unknown object type *{}.{}",
                    resource.version,
                    resource.kind
                );
            }
            job_from_cronjob(name, &cronjob)
        }
        _ => anyhow::bail!("either --image or --from must be specified"),
    };
    send::send(
        global,
        &args.common,
        object,
        true,
        Wrap::Colon("failed to create job"),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names() {
        for (image, want) in [
            ("nginx", "nginx"),
            ("nginx:1.27", "nginx"),
            ("registry.k8s.io/pause:3.9", "pause"),
            ("busybox@sha256:abc", "busybox"),
        ] {
            assert_eq!(container_name(image), want, "{image}");
        }
    }

    #[test]
    fn job_from_cronjob_is_owned_and_annotated() {
        let cj = json!({"metadata": {"name": "c", "uid": "u1"}, "spec": {"jobTemplate": {
            "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"template": {"spec": {"containers": []}}}}}});
        let job = job_from_cronjob("j", &cj);
        assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(
            job["metadata"]["annotations"],
            json!({"cronjob.kubernetes.io/instantiate": "manual", "x": "y"})
        );
        assert_eq!(job["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(
            job["spec"]["template"]["metadata"],
            json!({"creationTimestamp": null})
        );
    }
}
