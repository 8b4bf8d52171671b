//! `componentstatuses` (core v1, deprecated since v1.19): read-only objects computed on every
//! request by probing the control plane, as upstream's apiserver does:
//!
//! - `scheduler`: `GET https://127.0.0.1:10259/healthz`, `controller-manager`:
//!   `GET https://127.0.0.1:10257/healthz` (the components' default secure ports, which
//!   upstream assumes too), over TLS without verifying the certificate;
//! - `etcd-0`: the health of the storage. Upstream probes its etcd client (one `etcd-<n>` per
//!   storage configuration, not per `--etcd-servers` entry); here it is one round trip to the
//!   storage backend, whichever it is: etcd with `--etcd-servers`, else the embedded store,
//!   which is reported under the name upstream would show.
//!
//! Differences from upstream, on purpose: probes give up after [`PROBE_TIMEOUT`] (upstream
//! waits 20 s) so a `kubectl get cs` never hangs; a get of an unknown name is a 404 `NotFound`
//! (upstream answers 500 `Component not found: <name>`); items are listed in a fixed order
//! (upstream's order is random).

use super::encode::{ListMeta, convert, respond};
use super::query::Query;
use super::state::ApiState;
use crate::http::negotiation::{EndpointRestrictions, negotiate_output};
use crate::http::request_info::RequestInfo;
use crate::http::response::Body;
use crate::http::status::ApiError;
use crate::http::tls_client::ServerVerifier;
use crate::registry::fields::field_set;
use crate::tables::IncludeObject;
use api_types::registry;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How long one probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Upstream's probes read at most 10 KiB of a response body.
const MAX_BODY_BYTES: usize = 10 * 1024;
/// kube-scheduler's default secure port.
pub const SCHEDULER_PORT: u16 = 10259;
/// kube-controller-manager's default secure port.
pub const CONTROLLER_MANAGER_PORT: u16 = 10257;

/// What one component's health is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `GET https://<host>:<port><path>`, the certificate not verified.
    Https {
        host: String,
        port: u16,
        path: String,
    },
    /// One round trip to the storage backend.
    Storage,
}

/// The components upstream lists, by name, in the order they are shown.
pub fn components() -> Vec<(String, Probe)> {
    let local = |port| Probe::Https {
        host: "127.0.0.1".to_string(),
        port,
        path: "/healthz".to_string(),
    };
    vec![
        ("scheduler".to_string(), local(SCHEDULER_PORT)),
        (
            "controller-manager".to_string(),
            local(CONTROLLER_MANAGER_PORT),
        ),
        ("etcd-0".to_string(), Probe::Storage),
    ]
}

/// Whether a request is for `componentstatuses`, which has no storage and is served here.
pub fn handles(request: &RequestInfo) -> bool {
    request.is_resource_request
        && request.api_group.is_empty()
        && request.api_version == "v1"
        && request.resource == "componentstatuses"
}

/// The outcome of a probe, as upstream's `probe.Result` with its message and error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `True` (success), `False` (failure) or `Unknown`.
    pub status: &'static str,
    pub message: String,
    pub error: String,
}

impl Outcome {
    fn healthy(message: impl Into<String>) -> Self {
        Outcome {
            status: "True",
            message: message.into(),
            error: String::new(),
        }
    }

    fn failed(message: impl Into<String>, error: impl Into<String>) -> Self {
        Outcome {
            status: "False",
            message: message.into(),
            error: error.into(),
        }
    }

    /// The `ComponentStatus` object of component `name` (empty message and error omitted, as
    /// upstream's `omitempty` fields are).
    pub fn object(&self, name: &str) -> Value {
        let mut condition = json!({"type": "Healthy", "status": self.status});
        if !self.message.is_empty() {
            condition["message"] = json!(self.message);
        }
        if !self.error.is_empty() {
            condition["error"] = json!(self.error);
        }
        json!({
            "kind": "ComponentStatus",
            "apiVersion": "v1",
            "metadata": {"name": name},
            "conditions": [condition],
        })
    }
}

/// Serves get and list of `componentstatuses`; every other verb is refused as upstream does.
pub async fn serve<B>(
    state: &Arc<ApiState>,
    request: &RequestInfo,
    req: Request<B>,
) -> Result<Response<Body>, ApiError> {
    let info = registry::by_group_version_resource("", "v1", "componentstatuses")
        .ok_or_else(ApiError::path_not_found)?;
    // Cluster-scoped, and no subresources.
    if !request.namespace.is_empty() || !request.subresource.is_empty() {
        return Err(ApiError::path_not_found());
    }
    let query = Query::parse(req.uri().query());
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let media = negotiate_output(accept, EndpointRestrictions::RESOURCE)?;
    let include = IncludeObject::parse(query.get("includeObject").unwrap_or("")).ok_or_else(|| {
        ApiError::bad_request(
            "includeObject: Unsupported value: supported values: \"None\", \"Metadata\", \"Object\"",
        )
    })?;
    match request.verb.as_str() {
        "get" => {
            let (name, probe) = components()
                .into_iter()
                .find(|(name, _)| *name == request.name)
                .ok_or_else(|| ApiError::not_found("", info.plural, &request.name))?;
            let object = check(state, &probe).await.object(&name);
            let body = convert(info, object, None, &media, include);
            Ok(respond(StatusCode::OK, &body, &media))
        }
        "list" => {
            let options = query.list_options(info)?;
            let items: Vec<Value> = futures::future::join_all(
                components()
                    .into_iter()
                    .map(|(name, probe)| async move { check(state, &probe).await.object(&name) }),
            )
            .await
            .into_iter()
            // The objects have no labels, but selectors still apply (and may select none).
            .filter(|object| {
                let labels_ok = options
                    .label_selector
                    .as_ref()
                    .is_none_or(|selector| selector.matches(&BTreeMap::<String, String>::new()));
                let fields_ok = options
                    .field_selector
                    .as_ref()
                    .is_none_or(|selector| selector.matches(&field_set(info, object)));
                labels_ok && fields_ok
            })
            .collect();
            let list = json!({
                "kind": "ComponentStatusList",
                "apiVersion": "v1",
                "metadata": {},
                "items": items,
            });
            let body = convert(info, list, Some(&ListMeta::default()), &media, include);
            Ok(respond(StatusCode::OK, &body, &media))
        }
        verb => Err(ApiError::method_not_supported("", info.plural, verb)),
    }
}

/// Runs one probe within [`PROBE_TIMEOUT`].
pub async fn check(state: &ApiState, probe: &Probe) -> Outcome {
    match probe {
        Probe::Storage => {
            match tokio::time::timeout(PROBE_TIMEOUT, state.backend.current_revision()).await {
                Ok(Ok(_)) => Outcome::healthy("ok"),
                Ok(Err(err)) => Outcome::failed("", err.to_string()),
                Err(_) => Outcome::failed("", "context deadline exceeded"),
            }
        }
        Probe::Https { host, port, path } => https_probe(host, *port, path, PROBE_TIMEOUT).await,
    }
}

/// Upstream's HTTP prober: a 2xx answer is healthy with its body as the message, a 3xx is
/// `Unknown` (redirects are not followed), anything else, including a failure to connect, is
/// unhealthy with the reason as the message and no error.
pub async fn https_probe(host: &str, port: u16, path: &str, timeout: Duration) -> Outcome {
    let url = format!("https://{}{path}", join_host_port(host, port));
    let answer = match tokio::time::timeout(timeout, get(host, port, path)).await {
        Ok(answer) => answer,
        Err(_) => Err(
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                .to_string(),
        ),
    };
    match answer {
        Ok((code, body)) if (200..300).contains(&code) => Outcome::healthy(body),
        Ok((code, body)) if (300..400).contains(&code) => Outcome {
            status: "Unknown",
            message: format!("Probe terminated redirects, Response body: {body}"),
            error: String::new(),
        },
        Ok((code, _)) => Outcome::failed(format!("HTTP probe failed with statuscode: {code}"), ""),
        Err(cause) => Outcome::failed(format!("Get \"{url}\": {cause}"), ""),
    }
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One GET over TLS; the status code and (at most 10 KiB of) the body. Errors read as Go's.
async fn get(host: &str, port: u16, path: &str) -> Result<(u16, String), String> {
    let tcp = TcpStream::connect((host, port)).await.map_err(|e| {
        let cause = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
            _ => e.to_string(),
        };
        format!("dial tcp {}: {cause}", join_host_port(host, port))
    })?;
    let server_name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let stream = TlsConnector::from(insecure_tls())
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        // Its errors reach the request.
        let _ = conn.await;
    });
    let request = Request::get(path)
        .header(header::HOST, join_host_port(host, port))
        .header(header::USER_AGENT, "kube-probe/1.33")
        .header(header::ACCEPT, "*/*")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let code = response.status().as_u16();
    // A longer body is cut, as upstream's prober reads only so much.
    let mut body = Vec::new();
    let mut incoming = response.into_body();
    while let Some(frame) = incoming.frame().await {
        let Ok(frame) = frame else { break };
        if let Some(data) = frame.data_ref() {
            body.extend_from_slice(data);
            if body.len() >= MAX_BODY_BYTES {
                body.truncate(MAX_BODY_BYTES);
                break;
            }
        }
    }
    Ok((code, String::from_utf8_lossy(&body).into_owned()))
}

/// A client configuration that accepts any server certificate (Go's `InsecureSkipVerify`),
/// still checking the handshake's signatures against it.
fn insecure_tls() -> Arc<ClientConfig> {
    static CONFIG: std::sync::OnceLock<Arc<ClientConfig>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .expect("ring supports the default protocol versions")
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ServerVerifier::accept_any(provider)))
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_have_upstreams_shape() {
        let object = Outcome::healthy("ok").object("etcd-0");
        assert_eq!(
            object,
            json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": "etcd-0"},
                   "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
        );
        let failed = Outcome::failed("", "etcdserver: request timed out").object("etcd-0");
        assert_eq!(
            failed["conditions"][0],
            json!({"type": "Healthy", "status": "False", "error": "etcdserver: request timed out"})
        );
        let names: Vec<String> = components().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    }

    #[tokio::test]
    async fn a_closed_port_is_unhealthy_with_gos_message() {
        // Bind then drop, so nothing listens on the port.
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        let outcome = https_probe("127.0.0.1", port, "/healthz", Duration::from_secs(2)).await;
        assert_eq!(outcome.status, "False");
        assert_eq!(
            outcome.message,
            format!(
                "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
        assert_eq!(outcome.error, "");
    }

    #[tokio::test]
    async fn a_silent_server_times_out_quickly() {
        // Accepts connections but never answers the TLS handshake.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                open.push(stream);
            }
        });
        let started = std::time::Instant::now();
        let outcome = https_probe("127.0.0.1", port, "/healthz", Duration::from_millis(300)).await;
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(outcome.status, "False");
        assert!(
            outcome.message.ends_with(
                "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
            ),
            "{}",
            outcome.message
        );
        held.abort();
    }

    #[tokio::test]
    async fn a_healthy_tls_server_is_healthy_whatever_its_certificate() {
        let cert = rcgen::generate_simple_self_signed(vec!["somewhere-else".to_string()])
            .expect("certificate");
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        |req: Request<hyper::body::Incoming>| async move {
                            let (code, body) = if req.uri().path() == "/healthz" {
                                (200, "ok")
                            } else {
                                (500, "[-]poststarthook failed")
                            };
                            let mut response =
                                Response::new(http_body_util::Full::new(Bytes::from(body)));
                            *response.status_mut() = StatusCode::from_u16(code).expect("code");
                            Ok::<_, std::convert::Infallible>(response)
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let outcome = https_probe("127.0.0.1", port, "/healthz", Duration::from_secs(2)).await;
        assert_eq!(outcome, Outcome::healthy("ok"));
        let outcome = https_probe("127.0.0.1", port, "/livez", Duration::from_secs(2)).await;
        assert_eq!(
            outcome,
            Outcome::failed("HTTP probe failed with statuscode: 500", "")
        );
        server.abort();
    }
}
