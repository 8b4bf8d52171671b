//! `kubectl run NAME --image=IMAGE [-- ARGS]`: a Pod as upstream's generator builds it, and
//! with `--expose` the Service in front of it. Attaching (`-i`, `-t`, `--attach`, `--rm`) is
//! refused with a clear error: this kubectl does not stream to a new pod yet.

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::resource;
use clap::Args;
use serde_json::{Map, Value, json};

const USAGE: &str = "\nSee 'kubectl run -h' for help and examples";

/// Flags of `kubectl run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// NAME
    pub name: Option<String>,
    /// [COMMAND] [args...]
    #[arg(last = true)]
    pub args: Vec<String>,
    /// The image for the container to run.
    #[arg(long, value_name = "string")]
    pub image: Option<String>,
    /// The restart policy for this Pod. Legal values [Always, OnFailure, Never].
    #[arg(long, value_name = "string")]
    pub restart: Option<String>,
    /// Environment variables to set in the container.
    #[arg(long, value_name = "stringArray")]
    pub env: Vec<String>,
    /// Comma separated labels to apply to the pod. Will override previous values.
    #[arg(short = 'l', long, value_name = "string")]
    pub labels: Option<String>,
    /// Annotations to apply to the pod.
    #[arg(long, value_name = "stringArray")]
    pub annotations: Vec<String>,
    /// The port that this container exposes.
    #[arg(long, value_name = "string")]
    pub port: Option<String>,
    /// If true, create a ClusterIP service associated with the pod.
    #[arg(long)]
    pub expose: bool,
    /// If true and extra arguments are present, use them as the 'command' field in the container.
    #[arg(long)]
    pub command: bool,
    /// The image pull policy for the container.
    #[arg(long, value_name = "string")]
    pub image_pull_policy: Option<String>,
    /// Keep stdin open on the container in the pod.
    #[arg(short = 'i', long)]
    pub stdin: bool,
    /// Allocate a TTY for the container in the pod.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// If true, wait for the Pod to start running, and then attach to the Pod.
    #[arg(long)]
    pub attach: bool,
    /// If true, delete the pod after it exits.
    #[arg(long)]
    pub rm: bool,
    /// Service account to set in the pod spec.
    #[arg(long, value_name = "string")]
    pub serviceaccount: Option<String>,
    /// Output format. One of: (json, yaml, name, jsonpath, ...).
    #[arg(short = 'o', long, value_name = "string")]
    pub output: Option<String>,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-run", value_name = "string")]
    pub field_manager: String,
}

fn pairs(items: &[String], what: &str) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for item in items {
        let Some((k, v)) = item.split_once('=') else {
            anyhow::bail!("invalid {what}: {item:?}");
        };
        out.insert(k.to_owned(), json!(v));
    }
    Ok(out)
}

/// The Pod upstream's `run` generator makes.
pub fn pod(name: &str, args: &RunArgs) -> anyhow::Result<Value> {
    let image = args.image.as_deref().unwrap_or("");
    let labels = match &args.labels {
        Some(l) => {
            let items: Vec<String> = l.split(',').map(str::to_owned).collect();
            pairs(&items, "label spec")?
        }
        None => pairs(&[format!("run={name}")], "label spec")?,
    };
    let mut container = json!({"name": name, "image": image, "resources": {}});
    if !args.args.is_empty() {
        container[if args.command { "command" } else { "args" }] = json!(args.args);
    }
    if let Some(policy) = &args.image_pull_policy {
        container["imagePullPolicy"] = json!(policy);
    }
    if let Some(port) = &args.port {
        let port: i64 = port
            .parse()
            .map_err(|_| anyhow::anyhow!("strconv.Atoi: parsing {port:?}: invalid syntax"))?;
        container["ports"] = json!([{"containerPort": port}]);
    }
    if !args.env.is_empty() {
        let env: Vec<Value> = args
            .env
            .iter()
            .map(|e| {
                let (k, v) = e.split_once('=').unwrap_or((e, ""));
                json!({"name": k, "value": v})
            })
            .collect();
        container["env"] = json!(env);
    }
    let mut metadata = json!({"name": name, "labels": labels, "creationTimestamp": null});
    if !args.annotations.is_empty() {
        metadata["annotations"] = Value::Object(pairs(&args.annotations, "annotation")?);
    }
    let mut spec = json!({
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": args.restart.as_deref().unwrap_or("Always"),
    });
    if let Some(sa) = args.serviceaccount.as_deref().filter(|s| !s.is_empty()) {
        spec["serviceAccountName"] = json!(sa);
    }
    Ok(json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {}}))
}

/// The Service `--expose` puts in front of the pod.
pub fn service(name: &str, pod: &Value, port: &str) -> anyhow::Result<Value> {
    let port: i64 = port
        .parse()
        .map_err(|_| anyhow::anyhow!("strconv.Atoi: parsing {port:?}: invalid syntax"))?;
    Ok(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "creationTimestamp": null},
        "spec": {
            "ports": [{"port": port, "protocol": "TCP", "targetPort": port}],
            "selector": pod["metadata"]["labels"],
        },
        "status": {"loadBalancer": {}},
    }))
}

pub async fn run(global: &GlobalOptions, args: &RunArgs) -> anyhow::Result<()> {
    let Some(name) = args.name.as_deref().filter(|n| !n.is_empty()) else {
        anyhow::bail!("NAME is required for run{USAGE}");
    };
    if args.image.as_deref().unwrap_or("").is_empty() {
        anyhow::bail!("required flag(s) \"image\" not set");
    }
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let attaching = args.stdin || args.tty || args.attach;
    if dry_run != DryRun::None && attaching {
        anyhow::bail!(
            "--dry-run=[server|client] can't be used with attached containers options (--attach, --stdin, or --tty){USAGE}"
        );
    }
    if let Some(r) = &args.restart
        && !matches!(r.as_str(), "Always" | "OnFailure" | "Never")
    {
        anyhow::bail!("invalid restart policy: {r}{USAGE}");
    }
    if args.expose && args.port.is_none() {
        anyhow::bail!("--port must be set when exposing a service{USAGE}");
    }
    if attaching || args.rm {
        anyhow::bail!(
            "attaching to a new pod (-i, -t, --attach, --rm) is not supported by this kubectl yet; run without them and use 'kubectl logs'"
        );
    }
    let pod = pod(name, args)?;
    let service = match args.expose {
        true => Some(service(name, &pod, args.port.as_deref().unwrap_or(""))?),
        false => None,
    };
    let mut reporter = mutate::Reporter::new(mutate::output_format(args.output.as_deref())?);
    let factory = Factory::new(global).await?;
    let mapper = factory.discovery().mapper().await?;
    // Upstream creates the pod first, then creates and prints the service, and prints the pod
    // last (after a separator of its own in YAML, beside the printer's).
    let created_pod = send(&factory, &mapper, pod, dry_run, &args.field_manager).await?;
    if let Some(service) = service {
        let (res, created) = send(&factory, &mapper, service, dry_run, &args.field_manager).await?;
        reporter.report(&res, &created, "created", dry_run)?;
        if args.output.as_deref() == Some("yaml") {
            println!("---");
        }
    }
    reporter.report(&created_pod.0, &created_pod.1, "created", dry_run)
}

/// Creates (or, in a client dry run, only completes) one object.
async fn send(
    factory: &Factory,
    mapper: &crate::discovery::RestMapper,
    mut object: Value,
    dry_run: DryRun,
    field_manager: &str,
) -> anyhow::Result<(crate::discovery::ApiResource, Value)> {
    let kind = object["kind"].as_str().unwrap_or("").to_owned();
    let res = mapper
        .for_kind("v1", &kind)
        .ok_or_else(|| anyhow::anyhow!("the server doesn't have a resource type {kind:?}"))?;
    if factory.namespace_explicit() {
        object["metadata"]["namespace"] = json!(factory.namespace());
    }
    if dry_run == DryRun::Client {
        return Ok((res, object));
    }
    let mut query = vec![("fieldManager".to_owned(), field_manager.to_owned())];
    query.extend(dry_run.query());
    let url = resource::with_query(&res.collection_path(Some(factory.namespace())), &query);
    let created = factory
        .request(
            http::Method::POST,
            &url,
            Some((serde_json::to_vec(&object)?, "application/json")),
            None,
        )
        .await?;
    Ok((res, created))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn generated_pod() {
        let cli = Cli::parse_from([
            "run",
            "web",
            "--image=nginx",
            "--env=A=1",
            "--port=80",
            "--",
            "a",
            "b",
        ]);
        let p = pod("web", &cli.run).unwrap();
        assert_eq!(p["metadata"]["labels"], json!({"run": "web"}));
        let c = &p["spec"]["containers"][0];
        assert_eq!(c["args"], json!(["a", "b"]));
        assert_eq!(c["env"], json!([{"name": "A", "value": "1"}]));
        assert_eq!(c["ports"], json!([{"containerPort": 80}]));
        let s = service("web", &p, "80").unwrap();
        assert_eq!(s["spec"]["selector"], json!({"run": "web"}));
    }
}
