//! `kubectl run NAME --image=IMAGE [-- ARGS]`: a Pod as upstream's generator builds it, and
//! with `--expose` the Service in front of it; with `-i`/`-t`/`--attach` the session of
//! [`session`], and with `--rm` what was created deleted after it.

mod session;

use super::mutate::DryRun;
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
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub attach: Option<bool>,
    /// If true, delete the pod after it exits.
    #[arg(long)]
    pub rm: bool,
    /// Service account to set in the pod spec.
    #[arg(long, value_name = "string")]
    pub serviceaccount: Option<String>,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    #[command(flatten)]
    pub overrides: crate::cmd::overrides::OverrideFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-run", value_name = "string")]
    pub field_manager: String,
    /// If true, suppress prompt messages.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// If the pod is started in interactive mode or with stdin, leave stdin open after the
    /// first attach completes.
    #[arg(long)]
    pub leave_stdin_open: bool,
    /// The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one
    /// pod is running
    #[arg(long, value_name = "duration", default_value = "1m0s")]
    pub pod_running_timeout: String,
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
    if args.stdin {
        container["stdin"] = json!(true);
        container["stdinOnce"] = json!(!args.leave_stdin_open);
    }
    if args.tty {
        container["tty"] = json!(true);
    }
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
    let timeout = crate::remotecommand::pods::running_timeout(&args.pod_running_timeout, "run")?;
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    if args.tty && !args.stdin {
        anyhow::bail!("-i/--stdin is required for containers with -t/--tty=true{USAGE}");
    }
    if args.expose && args.port.is_none() {
        anyhow::bail!("--port must be set when exposing a service{USAGE}");
    }
    // The pod's policy (Always when not given, -i or not) decides the wait after the session.
    let restart = match args.restart.as_deref() {
        None | Some("") => "Always",
        Some(r @ ("Always" | "OnFailure" | "Never")) => r,
        Some(r) => anyhow::bail!("invalid restart policy: {r}{USAGE}"),
    };
    // `-i` attaches unless `--attach` was given (its value then wins).
    let attach = args.attach.unwrap_or(args.stdin);
    if !attach && args.rm {
        anyhow::bail!("--rm should only be used for attached containers{USAGE}");
    }
    if attach && dry_run != DryRun::None {
        anyhow::bail!(
            "--dry-run=[server|client] can't be used with attached containers options (--attach, --stdin, or --tty){USAGE}"
        );
    }
    let pod = args.overrides.apply(pod(name, args)?)?;
    let service = match args.expose {
        true => Some(service(name, &pod, args.port.as_deref().unwrap_or(""))?),
        false => None,
    };
    let mut reporter = args.print.reporter()?.typed();
    let factory = Factory::new(global).await?;
    let mapper = factory.discovery().mapper().await?;
    // Upstream creates the pod first, then creates and prints the service, and prints the pod
    // last (after a separator of its own in YAML, beside the printer's).
    let created_pod = send(&factory, &mapper, pod, dry_run, &args.field_manager).await?;
    let mut created = vec![created_pod.clone()];
    if let Some(service) = service {
        let (res, object) = send(&factory, &mapper, service, dry_run, &args.field_manager).await?;
        reporter.report(&res, &object, "created", dry_run)?;
        created.push((res, object));
        if args.print.output.as_deref() == Some("yaml") && !attach {
            println!("---");
        }
    }
    if !attach {
        return reporter.report(&created_pod.0, &created_pod.1, "created", dry_run);
    }
    let session = session::Attach {
        factory: &factory,
        namespace: factory.namespace().to_owned(),
        name: name.to_owned(),
        stdin: args.stdin,
        tty: args.tty,
        quiet: args.quiet,
        leave_stdin_open: args.leave_stdin_open,
        restart: restart.to_owned(),
        timeout,
    };
    let ended = session.run().await;
    if args.rm {
        // Upstream defers the deletion and drops its error.
        let _ = remove(&factory, &created, args.quiet).await;
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // A read of our stdin may still block in tokio's blocking pool and would hold the
    // runtime's shutdown open: the process ends here, with the container's code if it failed.
    match ended {
        Ok(None) if args.stdin => std::process::exit(0),
        Ok(None) => Ok(()),
        Ok(Some((code, message))) => {
            eprint!("{message}");
            if !message.ends_with('\n') {
                eprintln!();
            }
            std::process::exit(code);
        }
        Err(err) => {
            eprintln!("{}", crate::errors::render(&err));
            std::process::exit(1);
        }
    }
}

/// Upstream's `removeCreatedObjects`: a background-propagated delete of each created object,
/// reported as `delete` does (not found ignored).
async fn remove(
    factory: &Factory,
    created: &[(crate::discovery::ApiResource, Value)],
    quiet: bool,
) -> anyhow::Result<()> {
    for (res, object) in created {
        let name = object["metadata"]["name"].as_str().unwrap_or("");
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or(factory.namespace());
        let body =
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
        let result = factory
            .request(
                http::Method::DELETE,
                &res.object_path(Some(ns), name),
                Some((serde_json::to_vec(&body)?, "application/json")),
                None,
            )
            .await;
        match result {
            Ok(_) if !quiet => println!("{} \"{name}\" deleted", res.kind_prefix()),
            Ok(_) => {}
            Err(err)
                if err
                    .downcast_ref::<crate::errors::ApiError>()
                    .is_some_and(|e| e.is_not_found()) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
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
