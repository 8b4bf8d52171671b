//! `kubectl logs`: one pod's container(s), a workload's chosen pod, or every pod a selector
//! matches; followed streams run concurrently and interleave by line, as upstream.

mod query;

pub use query::parse_duration;

use crate::app::options::GlobalOptions;
use crate::errors::ApiError;
use crate::factory::Factory;
use crate::remotecommand::pods;
use clap::Args;
use futures::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use query::LogQuery;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

const USAGE: &str = "expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\nPOD or TYPE/NAME is a required argument for the logs command\nSee 'kubectl logs -h' for help and examples";

/// Flags of `kubectl logs`.
#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    /// (POD | TYPE/NAME) [CONTAINER]
    pub args: Vec<String>,
    /// Specify if the logs should be streamed.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Print the logs of this container
    #[arg(short = 'c', long, value_name = "string")]
    pub container: Option<String>,
    /// Get all containers' logs in the pod(s).
    #[arg(long)]
    pub all_containers: bool,
    /// If true, print the logs for the previous instance of the container in a pod if it exists.
    #[arg(short = 'p', long)]
    pub previous: bool,
    /// Only return logs newer than a relative duration like 5s, 2m, or 3h.
    #[arg(long, value_name = "duration")]
    pub since: Option<String>,
    /// Only return logs after a specific date (RFC3339).
    #[arg(long, value_name = "string")]
    pub since_time: Option<String>,
    /// Lines of recent log file to display. Defaults to -1 with no selector, showing all log
    /// lines otherwise 10, if a selector is provided.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int")]
    pub tail: i64,
    /// Include timestamps on each line in the log output
    #[arg(long)]
    pub timestamps: bool,
    /// Maximum bytes of logs to return. Defaults to no limit.
    #[arg(long, allow_negative_numbers = true, value_name = "int")]
    pub limit_bytes: Option<i64>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Specify maximum number of concurrent logs to follow when using by a selector.
    #[arg(long, default_value_t = 5, value_name = "int")]
    pub max_log_requests: usize,
    /// Prefix each log line with the log source (pod name and container name)
    #[arg(long)]
    pub prefix: bool,
    /// Get logs from all pod(s). Sets prefix to true.
    #[arg(long)]
    pub all_pods: bool,
    /// If watching / following pod logs, allow for any errors that occur to be non-fatal
    #[arg(long)]
    pub ignore_errors: bool,
    /// The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one
    /// pod is running
    #[arg(long, value_name = "duration", default_value = "20s")]
    pub pod_running_timeout: String,
}

/// One container's log request.
struct Source {
    pod: String,
    container: String,
}

pub async fn run(global: &GlobalOptions, args: &LogsArgs) -> anyhow::Result<()> {
    let selector = args.selector.as_deref().filter(|s| !s.is_empty());
    let (target, inline_container) = match (args.args.as_slice(), selector) {
        ([], Some(_)) => (None, None),
        ([_], Some(_)) => anyhow::bail!(
            "only a selector (-l) or a POD name is allowed\nSee 'kubectl logs -h' for help and examples"
        ),
        ([one], None) => (Some(one.as_str()), None),
        ([one, two], _) => (Some(one.as_str()), Some(two.as_str())),
        _ => anyhow::bail!("{USAGE}"),
    };
    let logq = validate(args, inline_container, selector.is_some())?;
    let container = args
        .container
        .as_deref()
        .filter(|c| !c.is_empty())
        .or(inline_container);
    let factory = Factory::new(global).await?;
    let ns = factory.namespace().to_owned();
    let targets: Vec<Value> = match target {
        Some(t) => {
            let timeout = pods::running_timeout(&args.pod_running_timeout, "logs")?;
            let mut found = pods::pods_for(&factory, t, timeout).await?;
            if !args.all_pods && found.len() > 1 {
                eprintln!(
                    "Found {} pods, using pod/{}",
                    found.len(),
                    found[0]["metadata"]["name"].as_str().unwrap_or("")
                );
                found.truncate(1);
            }
            found
        }
        None => {
            let list = factory
                .get(&crate::resource::with_query(
                    &format!("/api/v1/namespaces/{ns}/pods"),
                    &[(
                        "labelSelector".to_owned(),
                        selector.unwrap_or("").to_owned(),
                    )],
                ))
                .await?;
            list["items"].as_array().cloned().unwrap_or_default()
        }
    };
    let mut sources = Vec::new();
    for pod in &targets {
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let containers = if args.all_containers {
            pods::all_container_names(pod)
                .split(", ")
                .filter(|c| !c.is_empty())
                .map(|c| {
                    c.trim_end_matches(" (init)")
                        .trim_end_matches(" (ephem)")
                        .to_owned()
                })
                .collect()
        } else {
            match container {
                Some(c) => {
                    // Upstream checks the name against the pod before asking the server.
                    if pods::default_container(pod, Some(c), true).is_err() {
                        anyhow::bail!("container {c} is not valid for pod {pod_name}");
                    }
                    vec![c.to_owned()]
                }
                None => vec![pods::default_container(pod, None, false)?],
            }
        };
        sources.extend(containers.into_iter().map(|container| Source {
            pod: pod_name.clone(),
            container,
        }));
    }
    let prefix = args.prefix || args.all_pods;
    if args.follow && sources.len() > 1 {
        if sources.len() > args.max_log_requests {
            anyhow::bail!(
                "you are attempting to follow {} log streams, but maximum allowed concurrency is {}, use --max-log-requests to increase the limit",
                sources.len(),
                args.max_log_requests
            );
        }
        let streams = sources.iter().map(|s| {
            let factory = &factory;
            let logq = &logq;
            let ns = &ns;
            async move { copy_log(factory, ns, s, logq, prefix, true).await }
        });
        let results = futures::future::join_all(streams).await;
        for r in results {
            if let Err(err) = r
                && !args.ignore_errors
            {
                return Err(err);
            }
        }
        return Ok(());
    }
    for s in &sources {
        copy_log(&factory, &ns, s, &logq, prefix, false).await?;
    }
    Ok(())
}

fn validate(
    args: &LogsArgs,
    inline_container: Option<&str>,
    by_selector: bool,
) -> anyhow::Result<LogQuery> {
    if args.since_time.is_some() && args.since.is_some() {
        anyhow::bail!("at most one of `sinceTime` or `sinceSeconds` may be specified");
    }
    if args.all_containers
        && let Some(c) = args.container.as_deref().or(inline_container)
    {
        anyhow::bail!("--all-containers=true should not be specified with container name {c}");
    }
    if args.container.is_some() && inline_container.is_some() {
        anyhow::bail!("only one of -c or an inline [CONTAINER] arg is allowed");
    }
    if args.limit_bytes.is_some_and(|b| b < 0) {
        anyhow::bail!("--limit-bytes must be greater than 0");
    }
    let since_seconds = match &args.since {
        Some(s) => {
            let secs = parse_duration(s).map_err(|e| {
                anyhow::anyhow!(
                    "invalid argument \"{s}\" for \"--since\" flag: {e}\nSee 'kubectl logs --help' for usage."
                )
            })?;
            anyhow::ensure!(secs >= 0.0, "--since must be greater than 0");
            Some(secs.ceil() as i64)
        }
        None => None,
    };
    if args.tail < -1 {
        anyhow::bail!("--tail must be greater than or equal to -1");
    }
    let tail = if args.tail == -1 && by_selector {
        10
    } else {
        args.tail
    };
    Ok(LogQuery {
        follow: args.follow,
        previous: args.previous,
        timestamps: args.timestamps,
        since_seconds,
        since_time: args.since_time.as_deref().map(since_time).transpose()?,
        tail_lines: (tail != -1).then_some(tail),
        limit_bytes: args.limit_bytes.filter(|b| *b > 0),
    })
}

/// `--since-time` as the server takes it: RFC3339 in UTC, whole seconds (a `metav1.Time`).
fn since_time(text: &str) -> anyhow::Result<String> {
    let ts: jiff::Timestamp = text.parse().map_err(|_| {
        anyhow::anyhow!("parsing time \"{text}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"{text}\" as \"2006\"")
    })?;
    Ok(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// Streams one container's log to stdout; with `by_line`, whole lines at a time so that
/// concurrent streams interleave cleanly.
async fn copy_log(
    factory: &Factory,
    ns: &str,
    source: &Source,
    logq: &LogQuery,
    prefix: bool,
    by_line: bool,
) -> anyhow::Result<()> {
    let path = crate::resource::with_query(
        &format!("/api/v1/namespaces/{ns}/pods/{}/log", source.pod),
        &logq.pairs(&source.container),
    );
    let request = Request::builder()
        .method(Method::GET)
        .uri(path)
        .body(kube::client::Body::empty())?;
    let response = factory
        .send_raw(request)
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    if response.status() != StatusCode::OK {
        let code = response.status().as_u16();
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        let mut err = ApiError::from_response(code, &body);
        // The kubelet's plain-text reasons end in a newline, which upstream does not double.
        err.message = err.message.trim_end().to_owned();
        return Err(err.into());
    }
    let label = prefix.then(|| format!("[pod/{}/{}] ", source.pod, source.container));
    let mut body = response.into_body().into_data_stream();
    let mut out = tokio::io::stdout();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|err| anyhow::anyhow!("{err}"))?;
        if label.is_none() && !by_line {
            out.write_all(&chunk).await?;
            out.flush().await?;
            continue;
        }
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            write_line(&mut out, label.as_deref(), &line).await?;
        }
    }
    if !pending.is_empty() {
        write_line(&mut out, label.as_deref(), &pending).await?;
    }
    Ok(())
}

async fn write_line(
    out: &mut tokio::io::Stdout,
    label: Option<&str>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 64);
    if let Some(l) = label {
        buf.extend_from_slice(l.as_bytes());
    }
    buf.extend_from_slice(line);
    out.write_all(&buf).await?;
    out.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_times_become_utc_seconds() {
        let cases = [
            ("2024-01-01T01:00:00+01:00", Ok("2024-01-01T00:00:00Z")),
            ("2024-01-01T00:00:00.75Z", Ok("2024-01-01T00:00:00Z")),
            (
                "foo",
                Err(
                    "parsing time \"foo\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"foo\" as \"2006\"",
                ),
            ),
        ];
        for (input, want) in cases {
            let got = since_time(input).map_err(|e| e.to_string());
            assert_eq!(
                got,
                want.map(str::to_owned).map_err(str::to_owned),
                "{input}"
            );
        }
    }
}
