//! `kubectl exec`: runs a command in a container over the SPDY remote command protocol; the
//! command's exit code becomes ours, as upstream.

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::remotecommand::{self, exec, pods, tty};
use clap::Args;
use serde_json::Value;

/// Flags of `kubectl exec`.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// POD or TYPE/NAME
    pub pod: Vec<String>,
    /// COMMAND [args...], after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
    /// to use to exec into the resource
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    #[command(flatten)]
    pub stream: StreamFlags,
}

/// The flags `exec` and `attach` share.
#[derive(Debug, Clone, Args)]
pub struct StreamFlags {
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

impl StreamFlags {
    /// The pod `target` stands for, once running, refused when it has completed; `command`
    /// names the flag errors' help, `doing` the completed pod's error ("exec into").
    pub async fn live_pod(
        &self,
        factory: &Factory,
        target: &str,
        command: &str,
        doing: &str,
    ) -> anyhow::Result<Value> {
        let timeout = pods::running_timeout(&self.pod_running_timeout, command)?;
        let pod = pods::pod_for(factory, target, timeout).await?;
        let phase = pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        if matches!(phase, "Succeeded" | "Failed") {
            anyhow::bail!(
                "cannot {doing} a container in a completed pod; current phase is {phase}"
            );
        }
        Ok(pod)
    }
}

pub async fn run(global: &GlobalOptions, args: &ExecArgs) -> anyhow::Result<()> {
    if args.pod.is_empty() && args.filenames.is_empty() {
        anyhow::bail!("pod, type/name or --filename must be specified");
    }
    if args.pod.len() > 1 {
        anyhow::bail!(
            "exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead\nSee 'kubectl exec -h' for help and examples"
        );
    }
    if args.command.is_empty() {
        anyhow::bail!("you must specify at least one command for the container");
    }
    let (factory, target, manifest_pod) = match args.pod.first() {
        Some(pod) if args.filenames.is_empty() => (Factory::new(global).await?, pod.clone(), None),
        _ => from_files(global, args).await?,
    };
    let target = target.as_str();
    let flags = &args.stream;
    let pod = match manifest_pod {
        // Upstream execs into a pod from -f as the file has it, without reading it first.
        Some(pod) => {
            let phase = pod.pointer("/status/phase").and_then(Value::as_str);
            if let Some(phase @ ("Succeeded" | "Failed")) = phase {
                anyhow::bail!(
                    "cannot exec into a container in a completed pod; current phase is {phase}"
                );
            }
            pod
        }
        None => {
            flags
                .live_pod(&factory, target, "exec", "exec into")
                .await?
        }
    };
    let container = match flags.container.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => c.to_owned(),
        None => pods::default_container(&pod, None, flags.quiet)?,
    };
    let terminal = Terminal::setup(flags.stdin, flags.tty, flags.quiet);
    let mut query: Vec<(String, String)> = args
        .command
        .iter()
        .map(|c| ("command".to_owned(), c.clone()))
        .collect();
    query.push(("container".to_owned(), container));
    query.extend(terminal.flags());
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or(target);
    let path = crate::resource::with_query(
        &format!(
            "/api/v1/namespaces/{}/pods/{name}/exec",
            factory.namespace()
        ),
        &query,
    );
    let outcome = terminal.run(&factory, &path).await?;
    conclude(outcome, flags.stdin)
}

/// `-f`: the one object the files name (anything with pods, as `TYPE/NAME`; a pod's manifest
/// too), and a factory in that object's namespace (a manifest's own wins over the context's).
async fn from_files(
    global: &GlobalOptions,
    args: &ExecArgs,
) -> anyhow::Result<(Factory, String, Option<Value>)> {
    let factory = Factory::new(global).await?;
    // Upstream's builder refuses a POD argument beside -f before it reads the files.
    if !args.pod.is_empty() {
        anyhow::bail!("resource/name arguments cannot be provided when a path is specified");
    }
    let selection = crate::resource::Selection {
        filenames: args.filenames.clone(),
        ..Default::default()
    };
    let resolved = crate::resource::resolve(&factory, &[], &selection).await?;
    let [info] = resolved.infos.as_slice() else {
        anyhow::bail!("cannot exec into multiple objects at a time");
    };
    let r = &info.resource;
    let kind = if r.group.is_empty() {
        r.name.clone()
    } else {
        format!("{}.{}", r.name, r.group)
    };
    let target = format!("{kind}/{}", info.name.as_deref().unwrap_or(""));
    let pod = (r.group.is_empty() && r.name == "pods")
        .then(|| info.object.clone())
        .flatten();
    match &info.namespace {
        Some(ns) if ns != factory.namespace() => {
            let mut global = global.clone();
            global.namespace = Some(ns.clone());
            Ok((Factory::new(&global).await?, target, pod))
        }
        _ => Ok((factory, target, pod)),
    }
}

/// What the local side of a remote command uses: stdin or not, a raw TTY or not.
pub struct Terminal {
    pub stdin: bool,
    pub tty: bool,
}

impl Terminal {
    /// Upstream's `SetupTTY`: a TTY needs stdin, and stdin must be a terminal.
    pub fn setup(stdin: bool, tty: bool, quiet: bool) -> Terminal {
        let tty = stdin && tty && {
            let is_term = tty::stdin_is_terminal();
            if !is_term && !quiet {
                eprintln!(
                    "Unable to use a TTY - input is not a terminal or the right kind of file"
                );
            }
            is_term
        };
        Terminal { stdin, tty }
    }

    /// The query flags naming the streams.
    pub fn flags(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.stdin {
            out.push(("stdin".to_owned(), "true".to_owned()));
        }
        out.push(("stdout".to_owned(), "true".to_owned()));
        if self.tty {
            out.push(("tty".to_owned(), "true".to_owned()));
        } else {
            out.push(("stderr".to_owned(), "true".to_owned()));
        }
        out
    }

    /// Upgrades `path` and streams the process's stdio through it.
    pub async fn run(&self, factory: &Factory, path: &str) -> anyhow::Result<exec::Outcome> {
        let (session, protocol) = remotecommand::upgrade(factory, path, exec::PROTOCOLS).await?;
        let _raw = if self.tty {
            tty::RawMode::enter().ok()
        } else {
            None
        };
        let streams = exec::Streams {
            stdin: self.stdin.then(|| {
                Box::new(tokio::io::stdin()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>
            }),
            stdout: Some(Box::new(tokio::io::stdout())),
            stderr: (!self.tty).then(|| {
                Box::new(tokio::io::stderr()) as Box<dyn tokio::io::AsyncWrite + Unpin + Send>
            }),
            resize: self.tty.then(tty::sizes),
        };
        Ok(exec::stream(&session, &protocol, streams).await)
    }
}

/// Turns the remote outcome into ours. A remote exit code ends the process with that code
/// (upstream's `command terminated with exit code N`); so does any end once stdin was
/// attached, since a blocked read of our stdin would otherwise hold the process open.
pub fn conclude(outcome: exec::Outcome, stdin_attached: bool) -> anyhow::Result<()> {
    use std::io::Write;
    match outcome {
        exec::Outcome::Exit(code) => {
            let _ = std::io::stdout().flush();
            eprintln!("command terminated with exit code {code}");
            std::process::exit(code);
        }
        exec::Outcome::Failed(message) => anyhow::bail!("{message}"),
        exec::Outcome::Success if stdin_attached => {
            let _ = std::io::stdout().flush();
            std::process::exit(0);
        }
        exec::Outcome::Success => Ok(()),
    }
}
