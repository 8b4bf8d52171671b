//! The kubelet API on `--port` (10250): `/pods`, `/healthz`, `/containerLogs`, `/exec`,
//! `/attach`, `/portForward`, `/run`, `/stats/summary`, `/metrics`, `/metrics/resource`;
//! authenticated (client certificates, TokenReview) and authorized (SubjectAccessReview); and
//! the read-only port. Owner: the server engineer.
//!
//! Wiring (the core, in the run phase): `let host = Arc::new(KubeletHost::new(kubelet))`, then
//! `server::start(&config, host, debug_handlers, Some(client), shutdown)` starts the secure
//! port (TLS with `authentication.x509.clientCAFile`, TokenReview/SubjectAccessReview through
//! `client`) and the read-only port; `debug_handlers` supplies `/healthz` (add a `syncloop`
//! check to it) and `/configz`. [`KubeletServer`], [`start_secure`] and [`start_read_only`]
//! are the pieces, for other wirings.

pub mod attributes;
pub mod auth;
pub mod cri_log;
pub mod host;
pub mod http;
mod kubelet_host;
mod logs;
mod pods;
pub mod query;
pub mod review;
mod run;
pub mod stats;
mod streaming;

pub use auth::{AuthConfig, AuthorizationMode, ServerAuth, UserInfo};
pub use host::{HostInterface, RuntimeApi};
pub use kubelet_host::KubeletHost;
pub use review::{ApiReviewer, Reviewer};
pub use run::start;

use self::http::{Body, not_found, with_type};
use ::http::{Method, Request, Response, StatusCode};
use anyhow::Context;
use component_base::debug::DebugHandlers;
use component_base::serving::{RunningServer, SecureServingOptions, serve, tls_config_with};
use hyper::body::Incoming;
use stats::CpuSampler;
use std::convert::Infallible;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The kubelet's HTTP API; cloning shares everything.
#[derive(Clone)]
pub struct KubeletServer {
    inner: Arc<Inner>,
}

struct Inner {
    host: Arc<dyn HostInterface>,
    /// `/healthz` checks (the core adds `syncloop`), `/configz`.
    debug: DebugHandlers,
    /// None on the read-only port, which neither authenticates nor serves the debugging
    /// endpoints (logs, exec, attach, port-forward, run, configz).
    auth: Option<Arc<ServerAuth>>,
    sampler: Arc<CpuSampler>,
}

impl KubeletServer {
    /// The secure port's server.
    pub fn new(host: Arc<dyn HostInterface>, debug: DebugHandlers, auth: ServerAuth) -> Self {
        Self::build(host, debug, Some(Arc::new(auth)))
    }

    /// The read-only port's server (`readOnlyPort`): no authentication, read endpoints only.
    pub fn read_only(host: Arc<dyn HostInterface>, debug: DebugHandlers) -> Self {
        Self::build(host, debug, None)
    }

    fn build(
        host: Arc<dyn HostInterface>,
        debug: DebugHandlers,
        auth: Option<Arc<ServerAuth>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                host,
                debug,
                auth,
                sampler: Arc::new(CpuSampler::default()),
            }),
        }
    }

    /// A hyper service over [`handle`](Self::handle), for `component_base::serving::serve`.
    pub fn service(
        self,
    ) -> impl hyper::service::Service<
        Request<Incoming>,
        Response = Response<Body>,
        Error = Infallible,
        Future = impl Send,
    > + Clone
    + Send
    + Sync
    + 'static {
        hyper::service::service_fn(move |req| {
            let server = self.clone();
            async move { Ok::<_, Infallible>(server.handle(req).await) }
        })
    }

    /// Authenticates and authorizes (secure port), then answers.
    pub async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let inner = &self.inner;
        if let Some(auth) = &inner.auth {
            let user = match auth.authenticate(req.extensions(), req.headers()).await {
                Ok(user) => user,
                Err(response) => return response,
            };
            let node = inner.host.node_name();
            if let Err(response) = auth
                .authorize(&user, req.method(), req.uri().path(), &node)
                .await
            {
                return response;
            }
        }
        self.route(req).await
    }

    async fn route(&self, req: Request<Incoming>) -> Response<Body> {
        let inner = &self.inner;
        let host = &inner.host;
        let path = req.uri().path().to_string();
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let get = matches!(*req.method(), Method::GET | Method::HEAD);
        let debugging = inner.auth.is_some();
        let (first, rest) = segments
            .split_first()
            .map(|(f, r)| (*f, r))
            .unwrap_or(("", &[]));
        // The endpoints' trailing slash is optional, as upstream's router allows.
        let rest: Vec<&str> = match rest {
            [inner @ .., ""] => inner.to_vec(),
            r => r.to_vec(),
        };
        match (first, rest.as_slice()) {
            ("healthz", _) if get => {
                let health = inner
                    .debug
                    .health
                    .serve_path(&path, req.uri().query())
                    .await;
                match health {
                    Some(h) => with_type(
                        StatusCode::from_u16(h.status).unwrap_or(StatusCode::OK),
                        "text/plain; charset=utf-8",
                        http::full(h.body),
                    ),
                    None => not_found(),
                }
            }
            ("pods", []) if get => pods::pods(host),
            ("runningpods", []) if get => pods::running_pods(host).await,
            ("spec", []) if get => pods::spec(),
            ("stats", ["summary"]) if get => stats::serve_summary(host, &inner.sampler).await,
            ("metrics", []) if get => with_type(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                http::full(component_base::metrics::render()),
            ),
            ("metrics", ["resource"]) if get => {
                stats::serve_resource_metrics(host, &inner.sampler).await
            }
            ("configz", []) if get && debugging => http::json(&inner.debug.configz.to_json()),
            ("containerLogs", [ns, pod, container]) if get && debugging => {
                logs::serve(host, ns, pod, container, req.uri().query()).await
            }
            ("exec" | "attach", rest) if debugging && streaming_method(req.method()) => {
                let kind = if first == "exec" {
                    streaming::Kind::Exec
                } else {
                    streaming::Kind::Attach
                };
                let Some(target) = streaming::Target::parse(rest, true) else {
                    return not_found();
                };
                let target = owned(target);
                streaming::exec_or_attach(host, kind, target.borrow(), req).await
            }
            ("portForward", rest) if debugging && streaming_method(req.method()) => {
                let Some(target) = streaming::Target::parse(rest, false) else {
                    return not_found();
                };
                let target = owned(target);
                streaming::port_forward(host, target.borrow(), req).await
            }
            ("run", rest) if debugging && req.method() == Method::POST => {
                let Some(target) = streaming::Target::parse(rest, true) else {
                    return not_found();
                };
                streaming::run(host, target, &req).await
            }
            _ => not_found(),
        }
    }
}

fn streaming_method(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::POST)
}

/// A path target that outlives the request it was parsed from (the request moves into the
/// proxy).
struct OwnedTarget {
    namespace: String,
    pod: String,
    uid: Option<String>,
    container: String,
}

fn owned(t: streaming::Target<'_>) -> OwnedTarget {
    OwnedTarget {
        namespace: t.namespace.to_string(),
        pod: t.pod.to_string(),
        uid: t.uid.map(str::to_string),
        container: t.container.to_string(),
    }
}

impl OwnedTarget {
    fn borrow(&self) -> streaming::Target<'_> {
        streaming::Target {
            namespace: &self.namespace,
            pod: &self.pod,
            uid: self.uid.as_deref(),
            container: &self.container,
        }
    }
}

/// Serves `server` over TLS on the secure port, asking clients for certificates signed by
/// `authentication.x509.clientCAFile`; None when the port is 0.
pub async fn start_secure(
    serving: &SecureServingOptions<10250>,
    server: KubeletServer,
    shutdown: CancellationToken,
) -> anyhow::Result<Option<RunningServer>> {
    let Some(addr) = serving.listen_addr() else {
        return Ok(None);
    };
    let auth = server
        .inner
        .auth
        .clone()
        .context("start_secure needs the secure server (KubeletServer::new)")?;
    let settings = auth.tls_settings(serving.tls_settings()?)?;
    let tls = tls_config_with(serving.serving_cert("kubelet")?, &settings)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("failed to listen on {addr}"))?;
    let running = serve(listener, Some(tls), server.service(), shutdown)?;
    tracing::info!(address = %running.local_addr, "kubelet API serving securely");
    Ok(Some(running))
}

/// Serves the read-only port (plain HTTP) on `addr`.
pub async fn start_read_only(
    addr: std::net::SocketAddr,
    server: KubeletServer,
    shutdown: CancellationToken,
) -> anyhow::Result<RunningServer> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("failed to listen on --read-only-port {addr}"))?;
    let running = serve(listener, None, server.service(), shutdown)?;
    tracing::info!(address = %running.local_addr, "kubelet read-only API serving");
    Ok(running)
}

#[cfg(test)]
mod tests;
