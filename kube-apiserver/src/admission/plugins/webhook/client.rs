//! Calling a webhook: HTTPS POST of the review, the server's certificate verified against the
//! webhook's `caBundle`.
//!
//! A `service` reference is resolved here to one of the service's ready endpoints (from the
//! Endpoints object, else its EndpointSlices) because the apiserver is not on the cluster
//! network and has no proxy to reach a cluster IP; the certificate is still verified for the
//! name upstream uses, `<service>.<namespace>.svc`. Upstream does the same only with
//! `--enable-aggregator-routing`; it picks a random endpoint, we take the first ready one.

use super::config::Endpoint;
use crate::registry::ObjectLookup;
use bytes::Bytes;
use http::{Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Where and how to send one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as upstream names it in errors, with the `timeout` query client-go adds.
    pub url: String,
    /// The name the serving certificate must carry (DNS name or IP).
    pub server_name: String,
    /// The host and port to connect to.
    pub connect: (String, u16),
    /// Path and query of the request.
    pub path: String,
    /// The `Host` header.
    pub authority: String,
}

/// Go's rendering of a whole-second duration (timeouts are 1 to 30 seconds).
fn go_seconds(timeout: Duration) -> String {
    format!("{}s", timeout.as_secs())
}

fn with_timeout_query(path: &str, timeout: Duration) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}timeout={}", go_seconds(timeout))
}

/// Resolves the webhook's endpoint to a target. Errors are the reason after
/// `failed to call webhook: `.
pub fn resolve(
    endpoint: &Endpoint,
    timeout: Duration,
    lookup: &dyn ObjectLookup,
) -> Result<Target, String> {
    match endpoint {
        Endpoint::Url(url) => {
            let uri: Uri = url.parse().map_err(|e| format!("parse \"{url}\": {e}"))?;
            if uri.scheme_str() != Some("https") {
                return Err(format!(
                    "unsupported protocol scheme \"{}\"",
                    uri.scheme_str().unwrap_or_default()
                ));
            }
            let host = uri.host().unwrap_or_default();
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let port = uri.port_u16().unwrap_or(443);
            let path = uri
                .path_and_query()
                .map(|p| p.as_str())
                .filter(|p| !p.is_empty())
                .unwrap_or("/");
            let path = with_timeout_query(path, timeout);
            let authority = uri
                .authority()
                .map(|a| a.as_str().to_string())
                .unwrap_or_default();
            Ok(Target {
                url: format!("https://{authority}{path}"),
                server_name: bare.to_string(),
                connect: (bare.to_string(), port),
                path,
                authority,
            })
        }
        Endpoint::Service {
            namespace,
            name,
            path,
            port,
        } => {
            let host = format!("{name}.{namespace}.svc");
            let authority = format!("{host}:{port}");
            let path = if path.starts_with('/') {
                path.clone()
            } else {
                format!("/{path}")
            };
            let path = with_timeout_query(&path, timeout);
            let connect = service_address(namespace, name, *port, lookup)?;
            Ok(Target {
                url: format!("https://{authority}{path}"),
                server_name: host,
                connect,
                path,
                authority,
            })
        }
    }
}

/// The address behind port `port` of service `namespace/name`.
fn service_address(
    namespace: &str,
    name: &str,
    port: u16,
    lookup: &dyn ObjectLookup,
) -> Result<(String, u16), String> {
    let service = lookup
        .get("", "services", Some(namespace), name)
        .ok_or_else(|| format!("services \"{name}\" not found"))?;
    let spec = &service["spec"];
    if spec["type"] == "ExternalName" {
        let external = spec["externalName"].as_str().unwrap_or_default();
        return Ok((external.to_string(), port));
    }
    let service_port = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_u64() == Some(u64::from(port)))
        .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
    let port_name = service_port["name"].as_str().unwrap_or_default();
    let no_endpoints = || format!("no endpoints available for service \"{name}\"");
    match lookup.get("", "endpoints", Some(namespace), name) {
        Some(endpoints) => from_endpoints(&endpoints, port_name).ok_or_else(no_endpoints),
        None => {
            let slices = lookup.list(
                "discovery.k8s.io",
                "endpointslices",
                Some(namespace),
                &|s| s["metadata"]["labels"]["kubernetes.io/service-name"].as_str() == Some(name),
            );
            slices
                .iter()
                .find_map(|s| from_slice(s, port_name))
                .ok_or_else(no_endpoints)
        }
    }
}

/// The first ready address of the subset serving the service port named `port_name`.
fn from_endpoints(endpoints: &Value, port_name: &str) -> Option<(String, u16)> {
    endpoints["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|subset| {
            let port = subset["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?;
            let port = u16::try_from(port["port"].as_u64()?).ok()?;
            let ip = subset["addresses"].as_array()?.first()?["ip"].as_str()?;
            Some((ip.to_string(), port))
        })
}

/// The same from an EndpointSlice: endpoints whose `ready` condition is not false.
fn from_slice(slice: &Value, port_name: &str) -> Option<(String, u16)> {
    let port = slice["ports"]
        .as_array()?
        .iter()
        .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?;
    let port = u16::try_from(port["port"].as_u64()?).ok()?;
    let ip = slice["endpoints"]
        .as_array()?
        .iter()
        .filter(|e| e["conditions"]["ready"] != Value::Bool(false))
        .find_map(|e| e["addresses"].as_array()?.first()?.as_str())?;
    Some((ip.to_string(), port))
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// What makes two calls share a connection: the same address, name and trust.
#[derive(Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    connect: (String, u16),
    server_name: String,
    ca_bundle: Option<Vec<u8>>,
}

/// Idle connections kept per target, as Go's transport keeps a few per host.
const MAX_IDLE_PER_TARGET: usize = 8;
/// Distinct bundles or targets kept before starting afresh (bundles rotate, webhooks move).
const MAX_KEYS: usize = 64;

/// The HTTPS client of a webhook plugin: one rustls configuration per distinct `caBundle`, so
/// every call does not re-parse the bundle, and kept-alive connections per target, so every
/// call does not pay a TLS handshake.
#[derive(Default)]
pub struct WebhookClient {
    configs: Mutex<HashMap<Option<Vec<u8>>, Arc<ClientConfig>>>,
    idle: Mutex<HashMap<PoolKey, Vec<Sender>>>,
}

impl std::fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookClient")
            .field("configs", &self.configs.lock().len())
            .field("idle_targets", &self.idle.lock().len())
            .finish()
    }
}

impl WebhookClient {
    /// The TLS configuration trusting `ca_bundle`, or the system roots without one.
    fn tls(&self, ca_bundle: Option<&[u8]>) -> Result<Arc<ClientConfig>, String> {
        let key = ca_bundle.map(<[u8]>::to_vec);
        if let Some(config) = self.configs.lock().get(&key) {
            return Ok(config.clone());
        }
        let mut roots = RootCertStore::empty();
        match ca_bundle {
            Some(pem) => {
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert =
                        cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
                    roots
                        .add(cert)
                        .map_err(|e| format!("unable to load root certificates: {e}"))?;
                }
            }
            None => {
                // Unparsable system certificates are skipped, as Go's loader skips them.
                roots.add_parsable_certificates(system_roots().iter().cloned());
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let config = Arc::new(config);
        let mut configs = self.configs.lock();
        if configs.len() >= MAX_KEYS {
            configs.clear();
        }
        configs.insert(key, config.clone());
        Ok(config)
    }

    /// POSTs `body` to `target` within `timeout`; the response body of a 2xx answer. Errors
    /// read as Go's client reports them: `Post "<url>": <cause>`.
    pub async fn post(
        &self,
        target: &Target,
        ca_bundle: Option<&[u8]>,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, String> {
        let call = self.exchange(target, ca_bundle, body);
        let outcome = match tokio::time::timeout(timeout, call).await {
            Ok(outcome) => outcome,
            Err(_) => Err("context deadline exceeded".to_string()),
        };
        outcome.map_err(|cause| format!("Post \"{}\": {cause}", target.url))
    }

    async fn exchange(
        &self,
        target: &Target,
        ca_bundle: Option<&[u8]>,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let key = PoolKey {
            connect: target.connect.clone(),
            server_name: target.server_name.clone(),
            ca_bundle: ca_bundle.map(<[u8]>::to_vec),
        };
        let mut request = Request::post(target.path.as_str())
            .header(header::HOST, target.authority.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, */*")
            .header(header::USER_AGENT, "kube-apiserver-admission")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        // Idle connections first. One the server has closed hands the request back unsent, so
        // it goes on the next connection: never twice on the wire.
        while let Some(mut sender) = self.take_idle(&key) {
            if sender.ready().await.is_err() {
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => return self.finish(key, sender, response).await,
                Err(mut e) => match e.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(e.into_error().to_string()),
                },
            }
        }
        let mut sender = self.connect(target, ca_bundle).await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        self.finish(key, sender, response).await
    }

    fn take_idle(&self, key: &PoolKey) -> Option<Sender> {
        let mut idle = self.idle.lock();
        let senders = idle.get_mut(key)?;
        std::iter::from_fn(|| senders.pop()).find(|s| !s.is_closed())
    }

    /// A new TLS connection to the target.
    async fn connect(&self, target: &Target, ca_bundle: Option<&[u8]>) -> Result<Sender, String> {
        let tls = self.tls(ca_bundle)?;
        let server_name = ServerName::try_from(target.server_name.clone())
            .map_err(|e| format!("invalid server name \"{}\": {e}", target.server_name))?;
        let (host, port) = &target.connect;
        let dial = |e: std::io::Error| {
            let cause = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
                _ => e.to_string(),
            };
            format!("dial tcp {}: {cause}", join_host_port(host, *port))
        };
        let tcp = TcpStream::connect((host.as_str(), *port))
            .await
            .map_err(dial)?;
        let _ = tcp.set_nodelay(true);
        let stream = TlsConnector::from(tls)
            .connect(server_name, tcp)
            .await
            .map_err(|e| format!("tls: {e}"))?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            // The connection's errors reach the request using it.
            let _ = conn.await;
        });
        Ok(sender)
    }

    /// Reads the answer, then keeps the connection for the next call (a call cut short, by
    /// its timeout or an error, drops it instead).
    async fn finish(
        &self,
        key: PoolKey,
        sender: Sender,
        response: http::Response<hyper::body::Incoming>,
    ) -> Result<Vec<u8>, String> {
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes()
            .to_vec();
        {
            let mut idle = self.idle.lock();
            if idle.len() >= MAX_KEYS && !idle.contains_key(&key) {
                idle.clear();
            }
            let senders = idle.entry(key).or_default();
            if senders.len() < MAX_IDLE_PER_TARGET {
                senders.push(sender);
            }
        }
        if status.is_success() {
            Ok(body)
        } else {
            Err(unsuccessful(status, &body))
        }
    }

    /// Connections kept for reuse (tests).
    #[cfg(test)]
    pub(crate) fn idle_connections(&self) -> usize {
        self.idle.lock().values().map(Vec::len).sum()
    }
}

/// The system's trusted roots, read once per process.
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        for error in &loaded.errors {
            tracing::warn!(%error, "reading the system root certificates");
        }
        loaded.certs
    })
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A non-2xx answer, as client-go reads one: the message of a `Status` body, else its generic
/// wording for the code.
fn unsuccessful(status: StatusCode, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && v["kind"] == "Status"
        && let Some(message) = v["message"].as_str().filter(|m| !m.is_empty())
    {
        return message.to_string();
    }
    match status.as_u16() {
        400 => "the server rejected our request for an unknown reason".to_string(),
        404 => "the server could not find the requested resource".to_string(),
        500 => format!(
            "an error on the server ({:?}) has prevented the request from succeeding",
            String::from_utf8_lossy(body).trim()
        ),
        code => {
            format!(
                "the server responded with the status code {code} but did not return more information"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::plugins::webhook::matching::tests::FakeLookup;
    use serde_json::json;

    const TEN: Duration = Duration::from_secs(10);

    #[test]
    fn urls_get_the_timeout_query() {
        let lookup = FakeLookup::default();
        let t = resolve(
            &Endpoint::Url("https://hook.example.com:8443/validate".into()),
            TEN,
            &lookup,
        )
        .unwrap();
        assert_eq!(t.url, "https://hook.example.com:8443/validate?timeout=10s");
        assert_eq!(t.connect, ("hook.example.com".to_string(), 8443));
        assert_eq!(t.server_name, "hook.example.com");
        assert_eq!(t.path, "/validate?timeout=10s");
        let t = resolve(&Endpoint::Url("https://[::1]/x?a=b".into()), TEN, &lookup).unwrap();
        assert_eq!(t.connect, ("::1".to_string(), 443));
        assert_eq!(t.path, "/x?a=b&timeout=10s");
        let t = resolve(&Endpoint::Url("https://h".into()), TEN, &lookup).unwrap();
        assert_eq!(t.path, "/?timeout=10s");
        assert_eq!(
            resolve(&Endpoint::Url("http://h/x".into()), TEN, &lookup).unwrap_err(),
            "unsupported protocol scheme \"http\""
        );
    }

    fn service(ports: Value) -> Value {
        json!({"metadata": {"name": "hooks", "namespace": "sys"}, "spec": {"ports": ports}})
    }

    fn svc_endpoint(port: u16) -> Endpoint {
        Endpoint::Service {
            namespace: "sys".into(),
            name: "hooks".into(),
            path: "/mutate".into(),
            port,
        }
    }

    #[test]
    fn services_resolve_to_a_ready_endpoint() {
        let lookup = FakeLookup::default()
            .with(
                "",
                "services",
                service(json!([{"name": "https", "port": 443, "targetPort": 8443},
                               {"name": "metrics", "port": 9090}])),
            )
            .with(
                "",
                "endpoints",
                json!({"metadata": {"name": "hooks", "namespace": "sys"}, "subsets": [
                    {"addresses": [{"ip": "10.0.0.9"}], "ports": [{"name": "metrics", "port": 9090}]},
                    {"notReadyAddresses": [{"ip": "10.0.0.7"}], "ports": [{"name": "https", "port": 8443}]},
                    {"addresses": [{"ip": "10.0.0.8"}], "ports": [{"name": "https", "port": 8443}]},
                ]}),
            );
        let t = resolve(&svc_endpoint(443), TEN, &lookup).unwrap();
        assert_eq!(t.connect, ("10.0.0.8".to_string(), 8443));
        assert_eq!(t.server_name, "hooks.sys.svc");
        assert_eq!(t.url, "https://hooks.sys.svc:443/mutate?timeout=10s");
        assert_eq!(
            resolve(&svc_endpoint(444), TEN, &lookup).unwrap_err(),
            "no service port 444 found for service \"hooks\""
        );
        let empty = FakeLookup::default();
        assert_eq!(
            resolve(&svc_endpoint(443), TEN, &empty).unwrap_err(),
            "services \"hooks\" not found"
        );
    }

    #[test]
    fn endpoint_slices_serve_when_there_is_no_endpoints_object() {
        let slice = |ready: bool, ip: &str| {
            json!({"metadata": {"name": format!("hooks-{ip}"), "namespace": "sys",
                                "labels": {"kubernetes.io/service-name": "hooks"}},
                   "ports": [{"port": 8443}],
                   "endpoints": [{"addresses": [ip], "conditions": {"ready": ready}}]})
        };
        let lookup = FakeLookup::default()
            .with(
                "",
                "services",
                service(json!([{"port": 443, "targetPort": 8443}])),
            )
            .with(
                "discovery.k8s.io",
                "endpointslices",
                slice(false, "10.0.0.1"),
            )
            .with(
                "discovery.k8s.io",
                "endpointslices",
                slice(true, "10.0.0.2"),
            );
        let t = resolve(&svc_endpoint(443), TEN, &lookup).unwrap();
        assert_eq!(t.connect, ("10.0.0.2".to_string(), 8443));

        let none_ready = FakeLookup::default()
            .with("", "services", service(json!([{"port": 443}])))
            .with(
                "discovery.k8s.io",
                "endpointslices",
                slice(false, "10.0.0.1"),
            );
        assert_eq!(
            resolve(&svc_endpoint(443), TEN, &none_ready).unwrap_err(),
            "no endpoints available for service \"hooks\""
        );
    }

    #[test]
    fn configurations_are_cached_per_bundle() {
        let client = WebhookClient::default();
        let a = client.tls(None).unwrap();
        assert!(Arc::ptr_eq(&a, &client.tls(None).unwrap()));
        let bad = client.tls(Some(
            b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n",
        ));
        assert!(bad.is_err());
        assert_eq!(client.configs.lock().len(), 1);
    }

    #[test]
    fn unsuccessful_answers_read_as_client_go_reads_them() {
        let status = br#"{"kind":"Status","message":"boom"}"#;
        assert_eq!(unsuccessful(StatusCode::BAD_GATEWAY, status), "boom");
        assert_eq!(
            unsuccessful(StatusCode::INTERNAL_SERVER_ERROR, b"oops\n"),
            "an error on the server (\"oops\") has prevented the request from succeeding"
        );
        assert_eq!(
            unsuccessful(StatusCode::IM_A_TEAPOT, b""),
            "the server responded with the status code 418 but did not return more information"
        );
    }
}
