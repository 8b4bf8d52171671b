//! `kubectl attach`: connects to the main process of a running container.

use super::exec::{Terminal, conclude};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::remotecommand::pods;
use clap::Args;
use serde_json::Value;

/// Flags of `kubectl attach`.
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// (POD | TYPE/NAME)
    pub pod: Vec<String>,
    /// Container name. If omitted, use the kubectl.kubernetes.io/default-container annotation
    /// for selecting the container to be attached or the first container in the pod will be
    /// chosen
    #[arg(short = 'c', long, value_name = "string")]
    pub container: Option<String>,
    /// Pass stdin to the container
    #[arg(short = 'i', long)]
    pub stdin: bool,
    /// Stdin is a TTY
    #[arg(short = 't', long)]
    pub tty: bool,
    /// Only print output from the remote session
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one
    /// pod is running
    #[arg(long, value_name = "duration", default_value = "1m0s")]
    pub pod_running_timeout: String,
}

pub async fn run(global: &GlobalOptions, args: &AttachArgs) -> anyhow::Result<()> {
    let target = match args.pod.as_slice() {
        [one] => one,
        [] => anyhow::bail!("at least 1 argument is required for attach"),
        _ => anyhow::bail!(
            "expected POD, TYPE/NAME, or TYPE NAME, (at most 2 arguments) saw {}: {:?}",
            args.pod.len(),
            args.pod
        ),
    };
    let factory = Factory::new(global).await?;
    let timeout = pods::running_timeout(&args.pod_running_timeout, "attach")?;
    let pod = pods::pod_for(&factory, target, timeout).await?;
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed") {
        anyhow::bail!("cannot attach a container in a completed pod; current phase is {phase}");
    }
    let container = match args.container.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => pods::default_container(&pod, Some(c), true)
            .map_err(|e| anyhow::anyhow!("cannot attach to the container: {e}"))?,
        None => pods::default_container(&pod, None, args.quiet)?,
    };
    let spec = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(container.as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    let mut tty = args.tty;
    if tty && spec.get("tty").and_then(Value::as_bool) != Some(true) {
        if !args.quiet {
            eprintln!("error: Unable to use a TTY - container {container} did not allocate one");
        }
        tty = false;
    }
    let terminal = Terminal::setup(args.stdin, tty, args.quiet);
    if terminal.tty && !args.quiet {
        eprintln!("If you don't see a command prompt, try pressing enter.");
    }
    let mut query = vec![("container".to_owned(), container)];
    query.extend(terminal.flags());
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or(target);
    let path = crate::resource::with_query(
        &format!(
            "/api/v1/namespaces/{}/pods/{name}/attach",
            factory.namespace()
        ),
        &query,
    );
    let outcome = terminal.run(&factory, &path).await?;
    conclude(outcome, args.stdin)
}
