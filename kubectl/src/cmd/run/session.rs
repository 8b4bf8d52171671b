//! What `kubectl run -i/-t/--attach` does once the pod exists, as upstream's `handleAttachPod`:
//! wait until the pod runs (or has finished: then its log stands in for the session), attach,
//! and for `Never`/`OnFailure` pods wait for the end to take the container's exit code.

use crate::cmd::exec::Terminal;
use crate::factory::Factory;
use crate::remotecommand::exec::Outcome;
use serde_json::Value;
use std::time::{Duration, Instant};

/// How the pod's end is waited for and reported.
pub struct Attach<'a> {
    pub factory: &'a Factory,
    pub namespace: String,
    pub name: String,
    pub stdin: bool,
    pub tty: bool,
    pub quiet: bool,
    pub leave_stdin_open: bool,
    /// The pod's restart policy: only `Never` and `OnFailure` pods are waited for.
    pub restart: String,
    pub timeout: Duration,
}

/// The session's end as upstream's `run` returns it: `Ok(None)` for success, `Ok(Some((code,
/// message)))` for a container that failed with a known exit code.
pub type Ended = anyhow::Result<Option<(i32, String)>>;

impl Attach<'_> {
    pub async fn run(&self) -> Ended {
        let pod = match self.wait(running_and_ready).await {
            Ok(pod) => pod,
            Err(Waited::Completed(pod)) => pod,
            Err(Waited::Failed(err)) => return Err(err),
        };
        if completed(&pod) {
            self.print_logs(&pod).await?;
        } else if let Err(err) = self.attach(&pod).await {
            eprintln!(
                "warning: couldn't attach to pod/{}, falling back to streaming logs: {err}",
                self.name
            );
            self.print_logs(&pod).await?;
        }
        let wait_for_exit =
            !self.leave_stdin_open && matches!(self.restart.as_str(), "Never" | "OnFailure");
        if !wait_for_exit {
            return Ok(None);
        }
        let done: fn(&Value) -> Step = if self.restart == "OnFailure" {
            succeeded
        } else {
            pod_completed
        };
        let pod = match self.wait(done).await {
            Ok(pod) => pod,
            Err(Waited::Completed(_)) => anyhow::bail!("pod ran to completion"),
            Err(Waited::Failed(err)) => return Err(err),
        };
        let (ns, name) = (&self.namespace, &self.name);
        match phase(&pod) {
            "Succeeded" => Ok(None),
            "Failed" => {
                let unknown = || anyhow::anyhow!("pod {ns}/{name} failed with unknown exit code");
                let Some(term) = pod.pointer("/status/containerStatuses/0/state/terminated") else {
                    return Err(unknown());
                };
                let code = term.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                if code == 0 {
                    return Err(unknown());
                }
                let text = |k: &str| term.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                Ok(Some((
                    code as i32,
                    format!(
                        "pod {ns}/{name} terminated ({})\n{}",
                        text("reason"),
                        text("message")
                    ),
                )))
            }
            other => anyhow::bail!("pod {ns}/{name} left in phase {other}"),
        }
    }

    /// Polls the pod until `check` is satisfied, `pod-running-timeout` at most.
    async fn wait(&self, check: fn(&Value) -> Step) -> Result<Value, Waited> {
        let path = format!("/api/v1/namespaces/{}/pods/{}", self.namespace, self.name);
        let deadline = Instant::now() + self.timeout;
        loop {
            let pod = match self.factory.get(&path).await {
                Ok(pod) => pod,
                Err(err) => return Err(Waited::Failed(err)),
            };
            match check(&pod) {
                Step::Done => return Ok(pod),
                Step::Completed => return Err(Waited::Completed(pod)),
                Step::Wait => {}
            }
            if Instant::now() >= deadline {
                return Err(Waited::Failed(anyhow::anyhow!(
                    "timed out waiting for the condition"
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn attach(&self, pod: &Value) -> anyhow::Result<()> {
        let container = pod
            .pointer("/spec/containers/0/name")
            .and_then(Value::as_str)
            .unwrap_or(&self.name)
            .to_owned();
        let terminal = Terminal::setup(self.stdin, self.tty, self.quiet);
        // Upstream's attach prints this whether or not a TTY was set up.
        if !self.quiet {
            eprintln!("If you don't see a command prompt, try pressing enter.");
        }
        let mut query = vec![("container".to_owned(), container.clone())];
        query.extend(terminal.flags());
        let path = crate::resource::with_query(
            &format!(
                "/api/v1/namespaces/{}/pods/{}/attach",
                self.namespace, self.name
            ),
            &query,
        );
        match terminal.run(self.factory, &path).await? {
            Outcome::Success => {}
            Outcome::Exit(code) => anyhow::bail!("command terminated with exit code {code}"),
            Outcome::Failed(message) => anyhow::bail!("{message}"),
        }
        let always = pod.pointer("/spec/restartPolicy").and_then(Value::as_str) == Some("Always");
        if !self.quiet && self.stdin && terminal.tty && always {
            println!(
                "Session ended, resume using 'kubectl attach {} -c {container} -i -t' command when the pod is running",
                self.name
            );
        }
        Ok(())
    }

    /// Upstream's `logOpts`: the container's whole log, as `kubectl logs` prints it.
    async fn print_logs(&self, pod: &Value) -> anyhow::Result<()> {
        let container = pod
            .pointer("/spec/containers/0/name")
            .and_then(Value::as_str)
            .unwrap_or(&self.name);
        crate::cmd::debug::attach::print_logs(self.factory, &self.namespace, &self.name, container)
            .await
    }
}

enum Waited {
    Completed(Value),
    Failed(anyhow::Error),
}

enum Step {
    Done,
    Completed,
    Wait,
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn completed(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Upstream's `podRunningAndReady`: a finished pod ends the wait as `ErrPodCompleted`.
fn running_and_ready(pod: &Value) -> Step {
    if completed(pod) {
        return Step::Completed;
    }
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if phase(pod) == "Running" && ready {
        Step::Done
    } else {
        Step::Wait
    }
}

fn pod_completed(pod: &Value) -> Step {
    if completed(pod) {
        Step::Done
    } else {
        Step::Wait
    }
}

/// Upstream's `podSucceeded`: a failed pod ends the wait as `ErrPodCompleted`.
fn succeeded(pod: &Value) -> Step {
    match phase(pod) {
        "Succeeded" => Step::Done,
        "Failed" => Step::Completed,
        _ => Step::Wait,
    }
}
