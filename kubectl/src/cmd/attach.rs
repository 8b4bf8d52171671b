//! `kubectl attach`: connects to the main process of a running container.

use super::exec::{StreamFlags, Terminal, conclude};
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
    #[command(flatten)]
    pub stream: StreamFlags,
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
    let args = &args.stream;
    let pod = args.live_pod(&factory, target, "attach", "attach").await?;
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
    let spec_tty = spec.get("tty").and_then(Value::as_bool) == Some(true);
    let mut tty = args.tty;
    if tty && !spec_tty {
        if !args.quiet {
            eprintln!("error: Unable to use a TTY - container {container} did not allocate one");
        }
        tty = false;
    } else if spec_tty {
        // The container's process has a terminal whatever we ask: as upstream, a TTY is
        // wanted (and, without one on our stdin, refused with its note).
        tty = true;
    }
    let terminal = Terminal::setup(args.stdin, tty, args.quiet);
    if !args.quiet {
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
