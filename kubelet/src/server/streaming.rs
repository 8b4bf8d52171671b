//! `/exec`, `/attach`, `/portForward` and `/run`: the container is found through the runtime,
//! the runtime's streaming server is asked for a URL, and the client's upgrade request (SPDY
//! or WebSocket) is proxied to it, the 101 relayed and the bytes copied both ways, as
//! upstream's kubelet does by default.

use super::host::HostInterface;
use super::http::{Body, BoxError, empty, error, full, with_type};
use super::query::StreamQuery;
use crate::container::{ContainerId, ContainerState, SandboxState};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;

/// How long `/run` lets a command run (upstream's runtime request timeout).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exec,
    Attach,
}

/// The path's `{namespace}/{pod}[/{uid}]/{container}` segments.
pub struct Target<'a> {
    pub namespace: &'a str,
    pub pod: &'a str,
    pub uid: Option<&'a str>,
    pub container: &'a str,
}

impl<'a> Target<'a> {
    /// From the segments after the endpoint name; None when there are too few or too many.
    pub fn parse(segments: &[&'a str], with_container: bool) -> Option<Self> {
        let (namespace, pod, uid, container) = match (with_container, segments) {
            (true, [ns, pod, container]) => (*ns, *pod, None, *container),
            (true, [ns, pod, uid, container]) => (*ns, *pod, Some(*uid), *container),
            (false, [ns, pod]) => (*ns, *pod, None, ""),
            (false, [ns, pod, uid]) => (*ns, *pod, Some(*uid), ""),
            _ => return None,
        };
        if namespace.is_empty() || pod.is_empty() || (with_container && container.is_empty()) {
            return None;
        }
        Some(Self {
            namespace,
            pod,
            uid,
            container,
        })
    }
}

/// The pod's uid, checked against the path's when it names one.
/// A refusal: the status and message to answer with.
type Refusal = (StatusCode, String);

fn refuse((status, message): Refusal) -> Response<Body> {
    error(status, message)
}

fn pod_uid(host: &Arc<dyn HostInterface>, t: &Target<'_>) -> Result<String, Refusal> {
    let missing = || (StatusCode::NOT_FOUND, "pod does not exist".to_string());
    let pod = host.pod_by_name(t.namespace, t.pod).ok_or_else(missing)?;
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    if t.uid.is_some_and(|u| u != uid) {
        return Err(missing());
    }
    Ok(uid)
}

/// The running container's id (upstream's `findContainer` over running pods).
async fn running_container(
    host: &Arc<dyn HostInterface>,
    t: &Target<'_>,
) -> Result<ContainerId, Refusal> {
    let uid = pod_uid(host, t)?;
    let status = host
        .runtime()
        .get_pod_status(&uid, t.pod, t.namespace)
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")))?;
    status
        .attempts(t.container)
        .find(|c| c.state == ContainerState::Running)
        .map(|c| c.id.clone())
        .ok_or_else(|| {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("container not found ({:?})", t.container),
            )
        })
}

/// The `tty` of the target container in the pod's spec (regular, init or ephemeral).
fn spec_tty(host: &Arc<dyn HostInterface>, t: &Target<'_>) -> Result<bool, Refusal> {
    let not_found = || {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "container {} not found in pod {}_{}",
                t.container, t.pod, t.namespace
            ),
        )
    };
    let pod = host
        .pod_by_name(t.namespace, t.pod)
        .ok_or_else(|| (StatusCode::NOT_FOUND, "pod does not exist".to_string()))?;
    let spec = pod.spec.as_ref().ok_or_else(not_found)?;
    let regular = spec.containers.iter().map(|c| (&c.name, c.tty));
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| (&c.name, c.tty));
    let ephemeral = (spec.ephemeral_containers.iter().flatten()).map(|c| (&c.name, c.tty));
    regular
        .chain(init)
        .chain(ephemeral)
        .find(|(name, _)| name.as_str() == t.container)
        .map(|(_, tty)| tty.unwrap_or(false))
        .ok_or_else(not_found)
}

pub async fn exec_or_attach(
    host: &Arc<dyn HostInterface>,
    kind: Kind,
    t: Target<'_>,
    req: Request<Incoming>,
) -> Response<Body> {
    let mut q = match StreamQuery::parse(req.uri().query()) {
        Ok(q) => q,
        Err(msg) => return error(StatusCode::BAD_REQUEST, msg),
    };
    // A terminal carries stderr on stdout; the runtime refuses a request for both (upstream's
    // remotecommand options drop stderr the same way, before the check below).
    if q.tty {
        q.stderr = false;
    }
    if !q.stdin && !q.stdout && !q.stderr {
        return error(
            StatusCode::BAD_REQUEST,
            "you must specify at least 1 of stdin, stdout, stderr",
        );
    }
    if kind == Kind::Exec && q.command.is_empty() {
        return error(StatusCode::BAD_REQUEST, "you must specify a command");
    }
    let id = match running_container(host, &t).await {
        Ok(id) => id,
        Err(refusal) => return refuse(refusal),
    };
    let runtime = host.runtime();
    let url = match kind {
        Kind::Exec => {
            runtime
                .get_exec(&id, &q.command, q.stdin, q.stdout, q.stderr, q.tty)
                .await
        }
        Kind::Attach => {
            // Whether the process has a terminal was fixed when it started: the runtime
            // copies output by the container's setting, and asked otherwise (a client
            // without -t to a `tty: true` container) it waits for a stderr that never
            // closes. Upstream's kubelet takes the spec's `tty` too.
            let tty = match spec_tty(host, &t) {
                Ok(tty) => tty,
                Err(refusal) => return refuse(refusal),
            };
            runtime
                .get_attach(&id, q.stdin, q.stdout, q.stderr, tty)
                .await
        }
    };
    match url {
        Ok(url) => proxy(&url, req).await,
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    }
}

pub async fn port_forward(
    host: &Arc<dyn HostInterface>,
    t: Target<'_>,
    req: Request<Incoming>,
) -> Response<Body> {
    let q = match StreamQuery::parse(req.uri().query()) {
        Ok(q) => q,
        Err(msg) => return error(StatusCode::BAD_REQUEST, msg),
    };
    let uid = match pod_uid(host, &t) {
        Ok(uid) => uid,
        Err(refusal) => return refuse(refusal),
    };
    let runtime = host.runtime();
    let sandbox = match runtime.get_pods(false).await {
        Ok(pods) => pods.into_iter().find(|p| p.uid == uid).and_then(|p| {
            p.sandboxes
                .into_iter()
                .find(|(_, state)| *state == SandboxState::Ready)
                .map(|(id, _)| id)
        }),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    };
    let Some(sandbox) = sandbox else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("pod not found ({:?})", format!("{}_{}", t.pod, t.namespace)),
        );
    };
    match runtime.get_port_forward(&sandbox, &q.ports).await {
        Ok(url) => proxy(&url, req).await,
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    }
}

/// `POST /run/...?cmd=...`: the command's output (stdout then stderr), as upstream's legacy
/// endpoint (the command is split on spaces).
pub async fn run(
    host: &Arc<dyn HostInterface>,
    t: Target<'_>,
    req: &Request<Incoming>,
) -> Response<Body> {
    let cmd = super::http::query_pairs(req.uri().query())
        .into_iter()
        .find(|(k, _)| k == "cmd")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let cmd: Vec<String> = cmd.split(' ').map(str::to_string).collect();
    let id = match running_container(host, &t).await {
        Ok(id) => id,
        Err(refusal) => return refuse(refusal),
    };
    match host.runtime().exec_sync(&id, &cmd, RUN_TIMEOUT).await {
        Ok(out) if out.exit_code == 0 => {
            let mut data = out.stdout;
            data.extend_from_slice(&out.stderr);
            with_type(StatusCode::OK, "application/json", full(data))
        }
        Ok(out) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "command '{}' exited with {}: {}",
                cmd.join(" "),
                out.exit_code,
                String::from_utf8_lossy(&out.stderr)
            ),
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    }
}

/// Headers describing one hop, or credentials meant for the kubelet, never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "authorization",
    "host",
];

fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// Copies `from` without hop-by-hop headers; an upgrade keeps `Connection` and `Upgrade`.
pub fn forwarded_headers(from: &HeaderMap, upgrade: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in from {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) && !(upgrade && matches!(n, "connection" | "upgrade")) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Splits `http://host:port/path?query` into the address and the path with query.
pub fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("unsupported streaming URL {url:?}: only http is supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(format!("streaming URL {url:?} has no host"));
    }
    Ok((authority.to_string(), path.to_string()))
}

/// Sends the client's (upgrade) request to the runtime's streaming server and relays the
/// answer; on 101 both upgraded connections are spliced.
async fn proxy(url: &str, mut req: Request<Incoming>) -> Response<Body> {
    let (authority, path) = match split_url(url) {
        Ok(parts) => parts,
        Err(msg) => return error(StatusCode::INTERNAL_SERVER_ERROR, msg),
    };
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let body = if upgrade {
        Empty::<Bytes>::new()
            .map_err(|never| -> BoxError { match never {} })
            .boxed_unsync()
    } else {
        body.map_err(|e| -> BoxError { Box::new(e) }).boxed_unsync()
    };
    let mut out = match Request::builder()
        .method(parts.method)
        .uri(path.as_str())
        .body(body)
    {
        Ok(r) => r,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    *out.headers_mut() = forwarded_headers(&parts.headers, upgrade);
    if let Ok(host) = HeaderValue::from_str(&authority) {
        out.headers_mut().insert(header::HOST, host);
    }
    let response = match send(&authority, out).await {
        Ok(r) => r,
        Err(msg) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("error dialing the runtime's streaming server: {msg}"),
            );
        }
    };
    relay(response, client_upgrade)
}

async fn send(
    authority: &str,
    req: Request<http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>>,
) -> Result<Response<Incoming>, String> {
    let tcp = tokio::time::timeout(DIAL_TIMEOUT, tokio::net::TcpStream::connect(authority))
        .await
        .map_err(|_| format!("dial tcp {authority}: i/o timeout"))?
        .map_err(|e| format!("dial tcp {authority}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "streaming server connection ended");
        }
    });
    sender.send_request(req).await.map_err(|e| e.to_string())
}

fn relay(
    mut response: Response<Incoming>,
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
) -> Response<Body> {
    let switching = response.status() == StatusCode::SWITCHING_PROTOCOLS;
    if switching && let Some(client_upgrade) = client_upgrade {
        let backend_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            let (client, backend) = match tokio::try_join!(client_upgrade, backend_upgrade) {
                Ok(both) => both,
                Err(e) => {
                    tracing::debug!(error = %e, "upgrading a streaming connection failed");
                    return;
                }
            };
            let mut client = TokioIo::new(client);
            let mut backend = TokioIo::new(backend);
            if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
                tracing::debug!(error = %e, "streaming connection ended");
            }
        });
    }
    let (parts, body) = response.into_parts();
    let mut out = Response::new(if switching {
        empty()
    } else {
        body.map_err(|e| -> BoxError { Box::new(e) }).boxed_unsync()
    });
    *out.status_mut() = parts.status;
    *out.headers_mut() = forwarded_headers(&parts.headers, switching);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_and_without_uid() {
        let t = Target::parse(&["ns", "p", "c"], true).unwrap();
        assert_eq!(
            (t.namespace, t.pod, t.uid, t.container),
            ("ns", "p", None, "c")
        );
        let t = Target::parse(&["ns", "p", "u", "c"], true).unwrap();
        assert_eq!(t.uid, Some("u"));
        let t = Target::parse(&["ns", "p"], false).unwrap();
        assert_eq!((t.namespace, t.pod), ("ns", "p"));
        assert!(Target::parse(&["ns"], true).is_none());
        assert!(Target::parse(&["ns", "p"], true).is_none());
        assert!(Target::parse(&["ns", "", "c"], true).is_none());
        assert!(Target::parse(&["a", "b", "c", "d", "e"], true).is_none());
    }

    #[test]
    fn streaming_urls_split() {
        type Case<'a> = (&'a str, Result<(&'a str, &'a str), ()>);
        let cases: &[Case] = &[
            (
                "http://127.0.0.1:4321/exec/abc?x=1",
                Ok(("127.0.0.1:4321", "/exec/abc?x=1")),
            ),
            ("http://[::1]:80", Ok(("[::1]:80", "/"))),
            ("https://127.0.0.1:1/exec/x", Err(())),
            ("http:///x", Err(())),
        ];
        for (url, want) in cases {
            let got = split_url(url).map_err(|_| ());
            let want = want.map(|(a, p)| (a.to_string(), p.to_string()));
            assert_eq!(got, want, "{url}");
        }
    }

    #[test]
    fn upgrades_keep_their_handshake_headers() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, "Upgrade".parse().unwrap());
        h.insert(header::UPGRADE, "SPDY/3.1".parse().unwrap());
        h.insert(header::AUTHORIZATION, "Bearer t".parse().unwrap());
        h.append(
            "x-stream-protocol-version",
            "v4.channel.k8s.io".parse().unwrap(),
        );
        h.append(
            "x-stream-protocol-version",
            "v3.channel.k8s.io".parse().unwrap(),
        );
        assert!(is_upgrade(&h));
        let out = forwarded_headers(&h, true);
        assert_eq!(out.get_all("x-stream-protocol-version").iter().count(), 2);
        assert!(out.contains_key(header::UPGRADE));
        assert!(!out.contains_key(header::AUTHORIZATION));
        let plain = forwarded_headers(&h, false);
        assert!(!plain.contains_key(header::UPGRADE));
    }
}
