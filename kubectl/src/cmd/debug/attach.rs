//! `kubectl debug -i/--attach`, as upstream's `handleAttachPod`: wait (with no time limit)
//! until the debug container runs or has finished, then attach to it, or print its log when
//! it has finished or the attach fails.

use crate::cmd::exec::{Terminal, conclude};
use crate::factory::Factory;
use serde_json::Value;
use std::time::Duration;

fn status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "initContainerStatuses",
        "containerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|k| {
        pod.pointer(&format!("/status/{k}"))
            .and_then(Value::as_array)
    })
    .flatten()
    .find(|s| s["name"] == container)
}

pub async fn run(
    factory: &Factory,
    pod: &Value,
    container: &str,
    stdin: bool,
    tty: bool,
    quiet: bool,
) -> anyhow::Result<()> {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
    let mut last_message = String::new();
    let (pod, terminated) = loop {
        let pod = factory.get(&path).await?;
        if let Some(s) = status(&pod, container) {
            if s.pointer("/state/running").is_some() {
                break (pod, false);
            }
            if s.pointer("/state/terminated").is_some() {
                break (pod, true);
            }
            let message = s
                .pointer("/state/waiting/message")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !quiet && !message.is_empty() && message != last_message {
                eprintln!("Warning: container {container}: {message}");
                last_message = message.to_owned();
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    if terminated {
        return print_logs(factory, namespace, name, container).await;
    }
    let terminal = Terminal::setup(stdin, tty, quiet);
    if !quiet {
        eprintln!("If you don't see a command prompt, try pressing enter.");
    }
    let mut query = vec![("container".to_owned(), container.to_owned())];
    query.extend(terminal.flags());
    let attach = crate::resource::with_query(&format!("{path}/attach"), &query);
    let outcome = match terminal.run(factory, &attach).await {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!(
                "warning: couldn't attach to pod/{name}, falling back to streaming logs: {err}"
            );
            return print_logs(factory, namespace, name, container).await;
        }
    };
    if !quiet && stdin && terminal.tty {
        let ephemeral = pod
            .pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|c| c["name"] == container));
        if ephemeral {
            println!(
                "Session ended, the ephemeral container will not be restarted but may be reattached using 'kubectl attach {name} -c {container} -i -t' if it is still running"
            );
        } else if pod.pointer("/spec/restartPolicy").and_then(Value::as_str) == Some("Always") {
            println!(
                "Session ended, resume using 'kubectl attach {name} -c {container} -i -t' command when the pod is running"
            );
        }
    }
    conclude(outcome, stdin)
}

/// Upstream's `logOpts` of attach sessions (debug, run): the container's whole log, as
/// `kubectl logs` prints it.
pub(crate) async fn print_logs(
    factory: &Factory,
    namespace: &str,
    name: &str,
    container: &str,
) -> anyhow::Result<()> {
    use std::io::Write;
    let path = crate::resource::with_query(
        &format!("/api/v1/namespaces/{namespace}/pods/{name}/log"),
        &[("container".to_owned(), container.to_owned())],
    );
    let text = factory
        .request_text(http::Method::GET, &path, None, Some("*/*"))
        .await?;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
