//! Running one probe: exec through the runtime, httpGet, tcpSocket and gRPC health checks.
//! Each returns a verdict with its output, or an error when the probe could not be run at all
//! (the worker then throws the attempt away, as upstream).

use super::{grpc, httpclient};
use crate::container::ContainerId;
use crate::kuberuntime::RuntimeManager;
use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{Container, HTTPGetAction, PodStatus, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::time::Duration;

/// How much of an HTTP probe's body is kept as its output.
const MAX_BODY: usize = 10 * 1024;
const MAX_REDIRECTS: usize = 10;

/// A probe's verdict: success (warnings included) or failure, with what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub success: bool,
    /// Upstream's `probe.Warning`: a success the kubelet reports as a `ProbeWarning` event.
    pub warning: bool,
    pub output: String,
}

impl Verdict {
    fn ok(output: impl Into<String>) -> Self {
        Self {
            success: true,
            warning: false,
            output: output.into(),
        }
    }
    fn warn(output: impl Into<String>) -> Self {
        Self {
            success: true,
            warning: true,
            output: output.into(),
        }
    }
    fn fail(output: impl Into<String>) -> Self {
        Self {
            success: false,
            warning: false,
            output: output.into(),
        }
    }
}

pub fn timeout_of(probe: &Probe) -> Duration {
    Duration::from_secs(probe.timeout_seconds.unwrap_or(1).max(1) as u64)
}

/// A port given by number or by the name of one of the container's ports.
pub fn resolve_port(port: &IntOrString, container: &Container) -> anyhow::Result<u16> {
    let n = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => match s.parse::<i32>() {
            Ok(n) => n,
            Err(_) => container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(s.as_str()))
                .map(|p| p.container_port)
                .with_context(|| format!("couldn't find port {s:?} in the container's ports"))?,
        },
    };
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .with_context(|| format!("invalid port number: {n}"))
}

fn pod_ip(status: &PodStatus) -> anyhow::Result<String> {
    match status.pod_ip.as_deref() {
        Some(ip) if !ip.is_empty() => Ok(ip.to_string()),
        _ => bail!("the pod has no IP yet"),
    }
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Expands `$(VAR)` from the container's literal env (`$$` escapes), as upstream's exec probes
/// do with static variables; unknown references stay as written.
pub fn expand_static(s: &str, container: &Container) -> String {
    let lookup = |name: &str| {
        container
            .env
            .iter()
            .flatten()
            .rev()
            .find(|e| e.name == name && e.value_from.is_none())
            .map(|e| e.value.clone().unwrap_or_default())
    };
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        if let Some(t) = tail.strip_prefix('$') {
            out.push('$');
            rest = t;
        } else if let Some(t) = tail.strip_prefix('(')
            && let Some(end) = t.find(')')
        {
            match lookup(&t[..end]) {
                Some(v) => out.push_str(&v),
                None => out.push_str(&rest[i..i + 2 + end + 1]),
            }
            rest = &t[end + 1..];
        } else {
            out.push('$');
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Runs the probe once against the container.
pub async fn run(
    probe: &Probe,
    status: &PodStatus,
    container: &Container,
    id: &ContainerId,
    runtime: Option<&RuntimeManager>,
) -> anyhow::Result<Verdict> {
    let timeout = timeout_of(probe);
    if let Some(exec) = &probe.exec {
        let runtime = runtime.context("no container runtime to run exec probes with")?;
        let cmd: Vec<String> = exec
            .command
            .iter()
            .flatten()
            .map(|c| expand_static(c, container))
            .collect();
        return match runtime.exec_sync(id, &cmd, timeout).await {
            Ok(r) if r.exit_code == 0 => Ok(Verdict::ok(output_of(&r.stdout, &r.stderr))),
            Ok(r) => Ok(Verdict::fail(output_of(&r.stdout, &r.stderr))),
            Err(e) => {
                let msg = format!("{e:#}").to_ascii_lowercase();
                if msg.contains("deadline") || msg.contains("timed out") || msg.contains("timeout")
                {
                    Ok(Verdict::fail(format!(
                        "command {cmd:?} timed out after {}s",
                        timeout.as_secs()
                    )))
                } else {
                    Err(e)
                }
            }
        };
    }
    if let Some(action) = &probe.http_get {
        return http_probe(action, status, container, timeout).await;
    }
    if let Some(action) = &probe.tcp_socket {
        let port = resolve_port(&action.port, container)?;
        let host = match action.host.as_deref() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => pod_ip(status)?,
        };
        return Ok(tcp_probe(&host, port, timeout).await);
    }
    if let Some(action) = &probe.grpc {
        let port = u16::try_from(action.port)
            .ok()
            .filter(|p| *p > 0)
            .with_context(|| format!("invalid port number: {}", action.port))?;
        let host = pod_ip(status)?;
        let service = action.service.clone().unwrap_or_default();
        return Ok(grpc::check(&host, port, &service, timeout).await);
    }
    bail!("missing probe handler for container {}", container.name)
}

fn output_of(stdout: &[u8], stderr: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(stdout).to_string();
    s.push_str(&String::from_utf8_lossy(stderr));
    s
}

pub async fn tcp_probe(host: &str, port: u16, timeout: Duration) -> Verdict {
    let addr = host_port(host, port);
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&addr)).await {
        Ok(Ok(_)) => Verdict::ok(""),
        Ok(Err(e)) => Verdict::fail(format!("dial tcp {addr}: {e}")),
        Err(_) => Verdict::fail(format!("dial tcp {addr}: i/o timeout")),
    }
}

/// The probe's URL: host from the action or the pod IP, path with a leading slash.
pub fn http_url(
    action: &HTTPGetAction,
    status: &PodStatus,
    container: &Container,
) -> anyhow::Result<String> {
    let scheme = action
        .scheme
        .as_deref()
        .unwrap_or("HTTP")
        .to_ascii_lowercase();
    let host = match action.host.as_deref() {
        Some(h) if !h.is_empty() => h.to_string(),
        _ => pod_ip(status)?,
    };
    let port = resolve_port(&action.port, container)?;
    let path = action.path.as_deref().unwrap_or("");
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    Ok(format!("{scheme}://{}{path}", host_port(&host, port)))
}

async fn http_probe(
    action: &HTTPGetAction,
    status: &PodStatus,
    container: &Container,
    timeout: Duration,
) -> anyhow::Result<Verdict> {
    let url = http_url(action, status, container)?;
    let headers: Vec<(String, String)> = action
        .http_headers
        .iter()
        .flatten()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    Ok(http_get(&url, &headers, timeout).await)
}

/// GETs the URL, following redirects on the same host (up to 10): 2xx is success, a 3xx left
/// unfollowed (another host, or no Location) is success with a warning, anything else fails.
pub async fn http_get(url: &str, headers: &[(String, String)], timeout: Duration) -> Verdict {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut uri: http::Uri = match url.parse() {
        Ok(u) => u,
        Err(e) => return Verdict::fail(format!("invalid URL {url:?}: {e}")),
    };
    let first_host = uri.host().unwrap_or("").to_string();
    let mut redirects = 0;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let resp = match httpclient::get(&uri, headers, left, MAX_BODY).await {
            Ok(r) => r,
            Err(e) => return Verdict::fail(format!("{e:#}")),
        };
        let code = resp.status.as_u16();
        let body = String::from_utf8_lossy(&resp.body).to_string();
        if resp.status.is_redirection()
            && let Some(next) = resp
                .headers
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| resolve_location(&uri, l))
        {
            if next.host().unwrap_or("") != first_host {
                return Verdict::warn(format!("Probe terminated redirects, Response body: {body}"));
            }
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Verdict::fail(format!(
                    "Get {url:?}: stopped after {MAX_REDIRECTS} redirects"
                ));
            }
            uri = next;
            continue;
        }
        return if (300..400).contains(&code) {
            // A redirect without a usable Location ends the probe as upstream's: a warning.
            Verdict::warn(format!("Probe terminated redirects, Response body: {body}"))
        } else if (200..300).contains(&code) {
            Verdict::ok(body)
        } else {
            Verdict::fail(format!("HTTP probe failed with statuscode: {code}"))
        };
    }
}

/// A Location header against the request's URL (absolute, or a path on the same origin).
fn resolve_location(base: &http::Uri, location: &str) -> Option<http::Uri> {
    if location.contains("://") {
        return location.parse().ok();
    }
    let path = if location.starts_with('/') {
        location.to_string()
    } else {
        let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
        format!("{dir}/{location}")
    };
    format!("{}://{}{path}", base.scheme_str()?, base.authority()?)
        .parse()
        .ok()
}
