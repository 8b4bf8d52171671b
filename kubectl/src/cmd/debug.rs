//! `kubectl debug`: an ephemeral container added to a pod (through the
//! `pods/ephemeralcontainers` subresource), a copy of a pod with a debug container or changed
//! images (`--copy-to`), or a pod in a node's host namespaces (`node/NAME`), shaped by the
//! `--profile`; with `-i`/`--attach` the session of [`attach`]. Upstream's checks, in its order.

pub(crate) mod attach;
mod generate;
mod image;
mod profiles;
mod validate;

use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::factory::Factory;
use clap::Args;
use generate::{CopyOptions, Spec};
use profiles::{Keep, Profile};
use serde_json::{Value, json};
use validate::{read_custom, string_to_string, validate};

/// Flags of `kubectl debug`.
#[derive(Debug, Clone, Args)]
// pflag lets a repeated flag's last value win.
#[command(args_override_self = true)]
pub struct DebugArgs {
    /// (POD | TYPE[[.VERSION].GROUP]/NAME)
    pub targets: Vec<String>,
    /// [COMMAND] [args...]
    #[arg(last = true)]
    pub args: Vec<String>,
    /// If specified, everything after -- will be passed to the new container as Args instead
    /// of Command.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub arguments_only: bool,
    /// If true, wait for the container to start running, and then attach as if 'kubectl
    /// attach ...' were called.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub attach: Option<bool>,
    /// identifying the resource to debug
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filename: Vec<String>,
    /// Container name to use for debug container.
    #[arg(short = 'c', long, value_name = "string")]
    pub container: Option<String>,
    /// Create a copy of the target Pod with this name.
    #[arg(long, value_name = "string", default_value = "")]
    pub copy_to: String,
    /// Environment variables to set in the container.
    #[arg(long, value_name = "stringToString")]
    pub env: Vec<String>,
    /// Container image to use for debug container.
    #[arg(long, value_name = "string", default_value = "")]
    pub image: String,
    /// The image pull policy for the container.
    #[arg(long, value_name = "string", default_value = "")]
    pub image_pull_policy: String,
    /// If true, keep the original pod annotations.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub keep_annotations: bool,
    /// Run the init containers for the pod.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "true")]
    pub keep_init_containers: bool,
    /// If true, keep the original pod labels.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub keep_labels: bool,
    /// If true, keep the original pod liveness probes.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub keep_liveness: bool,
    /// If true, keep the original pod readiness probes.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub keep_readiness: bool,
    /// If true, keep the original startup probes.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub keep_startup: bool,
    /// Path to a JSON or YAML file containing a partial container spec to customize built-in
    /// debug profiles.
    #[arg(long, value_name = "string")]
    pub custom: Option<String>,
    /// Options are "legacy", "general", "baseline", "netadmin", "restricted" or "sysadmin".
    #[arg(long, value_name = "string", default_value = "legacy")]
    pub profile: String,
    /// If true, suppress informational messages.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// When used with '--copy-to', delete the original Pod.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub replace: bool,
    /// When used with '--copy-to', schedule the copy of target Pod on the same node.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool", default_value = "false")]
    pub same_node: bool,
    /// When used with '--copy-to', a list of name=image pairs for changing container images.
    #[arg(long, value_name = "stringToString")]
    pub set_image: Vec<String>,
    /// When used with '--copy-to', enable process namespace sharing in the copy.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub share_processes: Option<bool>,
    /// Keep stdin open on the container(s) in the pod, even if nothing is attached.
    #[arg(short = 'i', long)]
    pub stdin: bool,
    /// When using an ephemeral container, target processes in this container name.
    #[arg(long, value_name = "string", default_value = "")]
    pub target: String,
    /// Allocate a TTY for the debugging container.
    #[arg(short = 't', long)]
    pub tty: bool,
}

pub async fn run(global: &GlobalOptions, args: &DebugArgs) -> anyhow::Result<()> {
    debug(global, args).await
}

async fn debug(global: &GlobalOptions, args: &DebugArgs) -> anyhow::Result<()> {
    // `-i` attaches unless `--attach` was given (its value then wins).
    let attach = args.attach.unwrap_or(args.stdin);
    let env = string_to_string(&args.env, "env")?;
    let set_images = string_to_string(&args.set_image, "set-image")?;
    let profile = Profile::parse(&args.profile)?;
    let custom = match args.custom.as_deref().filter(|c| !c.is_empty()) {
        Some(path) => Some(read_custom(path)?),
        None => None,
    };
    validate(args, &set_images, attach, custom.as_ref())?;
    let factory = Factory::new(global).await?;
    let spec = Spec {
        name: args.container.as_deref().filter(|c| !c.is_empty()),
        image: &args.image,
        pull_policy: &args.image_pull_policy,
        env: &env,
        args: &args.args,
        args_only: args.arguments_only,
        stdin: args.stdin,
        tty: args.tty,
        quiet: args.quiet,
        profile,
        custom: custom.as_ref(),
        keep: Keep {
            labels: args.keep_labels,
            annotations: args.keep_annotations,
            liveness: args.keep_liveness,
            readiness: args.keep_readiness,
            startup: args.keep_startup,
            init_containers: args.keep_init_containers,
        },
    };
    // The builder resolves every type before any object is fetched.
    if !args.filename.is_empty() && !args.targets.is_empty() {
        anyhow::bail!("resource/name arguments cannot be provided when a path is specified");
    }
    // Objects from `-f` are debugged as the files say (upstream's builder does not fetch
    // them); named ones are fetched in order.
    let targets = match args.filename.is_empty() {
        true => resolve(&factory, &args.targets).await?,
        false => from_files(&factory, &args.filename).await?,
    };
    for (resource, name, from_file) in targets {
        let object = match from_file {
            Some(object) => object,
            None => {
                let namespace = resource.namespaced.then(|| factory.namespace());
                factory.get(&resource.object_path(namespace, &name)).await?
            }
        };
        let (pod, container) = match (resource.group.as_str(), resource.kind.as_str()) {
            ("", "Node") => node(&factory, &spec, &name).await?,
            ("", "Pod") if !args.copy_to.is_empty() => {
                copy(&factory, &spec, args, &object, &set_images).await?
            }
            ("", "Pod") => ephemeral(&factory, &spec, &args.target, &object).await?,
            (group, kind) => {
                let gv = if group.is_empty() {
                    format!("/{}", resource.version)
                } else {
                    resource.group_version()
                };
                anyhow::bail!("\"{gv}, Kind={kind}\" not supported by debug");
            }
        };
        if attach && !container.is_empty() {
            attach::run(&factory, &pod, &container, args.stdin, args.tty, args.quiet).await?;
        }
    }
    Ok(())
}

type Target = (ApiResource, String, Option<Value>);

/// The objects of `-f` manifests, in the namespace the builder gives them.
async fn from_files(factory: &Factory, filenames: &[String]) -> anyhow::Result<Vec<Target>> {
    let selection = crate::resource::Selection {
        filenames: filenames.to_vec(),
        ..Default::default()
    };
    let resolved = crate::resource::resolve(factory, &[], &selection).await?;
    let mut out = Vec::new();
    for info in resolved.infos {
        let mut object = info.object.unwrap_or(Value::Null);
        if let Some(ns) = &info.namespace {
            object["metadata"]["namespace"] = json!(ns);
        }
        out.push((info.resource, info.name.unwrap_or_default(), Some(object)));
    }
    Ok(out)
}

/// `NAME` (a pod) or `TYPE/NAME`, as upstream's `ResourceNames("pods", ...)`.
async fn resolve(factory: &Factory, targets: &[String]) -> anyhow::Result<Vec<Target>> {
    let discovery = factory.discovery();
    let mut mapper = discovery.mapper().await?;
    let mut out = Vec::new();
    for target in targets {
        let (kind, name) = target.split_once('/').unwrap_or(("pods", target));
        if name.is_empty() || name.contains('/') {
            anyhow::bail!("arguments in resource/name form must have a single resource and name");
        }
        let resource = match mapper.resolve(kind) {
            Some(r) => r,
            None => {
                // A miss may be a type created since the cache was written: refresh once.
                mapper = discovery.refreshed_mapper().await?;
                mapper.resolve(kind).ok_or_else(|| {
                    anyhow::anyhow!("the server doesn't have a resource type \"{kind}\"")
                })?
            }
        };
        out.push((resource, name.to_owned(), None));
    }
    Ok(out)
}

fn pods_path(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/pods")
}

async fn create(factory: &Factory, namespace: &str, pod: &Value) -> anyhow::Result<Value> {
    factory
        .request(
            http::Method::POST,
            &pods_path(namespace),
            Some((serde_json::to_vec(pod)?, "application/json")),
            None,
        )
        .await
}

async fn node(factory: &Factory, spec: &Spec<'_>, node: &str) -> anyhow::Result<(Value, String)> {
    let pod = spec.node_pod(node)?;
    let created = create(factory, factory.namespace(), &pod).await?;
    let container = created
        .pointer("/spec/containers/0/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Ok((created, container))
}

async fn copy(
    factory: &Factory,
    spec: &Spec<'_>,
    args: &DebugArgs,
    pod: &Value,
    set_images: &[(String, String)],
) -> anyhow::Result<(Value, String)> {
    let options = CopyOptions {
        name: args.copy_to.clone(),
        same_node: args.same_node,
        share_processes: args.share_processes,
    };
    let (copied, container) = spec.copy(pod, &options, set_images)?;
    warn_non_root(&copied, "containers", &container);
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let created = create(factory, namespace, &copied).await?;
    if args.replace {
        let name = pod["metadata"]["name"].as_str().unwrap_or("");
        let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0});
        factory
            .request(
                http::Method::DELETE,
                &format!("{}/{name}", pods_path(namespace)),
                Some((serde_json::to_vec(&body)?, "application/json")),
                None,
            )
            .await?;
    }
    Ok((created, container))
}

async fn ephemeral(
    factory: &Factory,
    spec: &Spec<'_>,
    target: &str,
    pod: &Value,
) -> anyhow::Result<(Value, String)> {
    let (container, debug_pod, patch) = spec.ephemeral(pod, target)?;
    warn_non_root(&debug_pod, "ephemeralContainers", &container);
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let result = factory
        .request(
            http::Method::PATCH,
            &format!("{}/{name}/ephemeralcontainers", pods_path(namespace)),
            Some((
                serde_json::to_vec(&patch)?,
                "application/strategic-merge-patch+json",
            )),
            None,
        )
        .await;
    match result {
        Ok(patched) => Ok((patched, container)),
        // Without the subresource the 404 names no object (a missing pod's does).
        Err(err) => match err.downcast_ref::<crate::errors::ApiError>() {
            Some(e) if e.is_not_found() && !e.message.contains(&format!("\"{name}\"")) => {
                anyhow::bail!(
                    "ephemeral containers are disabled for this cluster (error from server: {:?})",
                    e.message
                )
            }
            _ => Err(err),
        },
    }
}

/// Upstream's warning when the pod runs as a non-root user but the profile grants the debug
/// container privileges or capabilities that need root.
fn warn_non_root(pod: &Value, list: &str, container: &str) {
    let Some(c) = pod
        .pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|c| c["name"] == container))
    else {
        return;
    };
    let pod_user = pod
        .pointer("/spec/securityContext/runAsUser")
        .and_then(Value::as_i64);
    if pod_user.is_none_or(|u| u == 0) {
        return;
    }
    let Some(sc) = c.get("securityContext").filter(|s| s.is_object()) else {
        return;
    };
    if sc.get("runAsUser").and_then(Value::as_i64) == Some(0) {
        return;
    }
    let privileged = sc.get("privileged").and_then(Value::as_bool) == Some(true);
    let adds = sc
        .pointer("/capabilities/add")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if privileged || adds {
        eprintln!(
            "Warning: Non-root user is configured for the entire target Pod, and some capabilities granted by debug profile may not work. Please consider using \"--custom\" with a custom profile that specifies \"securityContext.runAsUser: 0\"."
        );
    }
}
