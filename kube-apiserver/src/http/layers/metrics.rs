//! Request metrics and the access log: `apiserver_request_total` and
//! `apiserver_request_duration_seconds` with upstream's labels (through the `metrics` facade;
//! component-base installs the Prometheus recorder), and one `vlog!(3)` line per request in the
//! spirit of upstream's httplog (no audit).

use std::task::{Context, Poll};
use std::time::Instant;

use component_base::vlog;
use futures::future::{BoxFuture, FutureExt};
use http::{Method, Request, Response, header};
use tower::{Layer, Service};

use crate::http::negotiation::MEDIA_APPLY_PATCH;
use crate::http::request_info::RequestInfo;
use crate::http::response::Body;

/// The `component` label of requests served by the apiserver itself.
pub const COMPONENT: &str = "apiserver";

/// Adds [`Metrics`].
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsLayer;

impl<S> Layer<S> for MetricsLayer {
    type Service = Metrics<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Metrics { inner }
    }
}

/// See the module documentation. Durations run until the response head is ready (for a watch,
/// until it starts streaming).
#[derive(Debug, Clone)]
pub struct Metrics<S> {
    inner: S,
}

/// The labels of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLabels {
    /// Upstream's reported verb: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`,
    /// `DELETE`, ...
    pub verb: String,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// `resource`, `namespace`, `cluster` or empty.
    pub scope: String,
}

impl RequestLabels {
    /// The labels upstream's `MonitorRequest` derives for a request.
    pub fn new(method: &Method, content_type: Option<&str>, info: Option<&RequestInfo>) -> Self {
        let mut verb = method.as_str().to_ascii_uppercase();
        if let Some(info) = info.filter(|i| i.is_resource_request) {
            if info.verb == "watch" {
                verb = "WATCH".to_string();
            } else if info.verb == "list" {
                verb = "LIST".to_string();
            } else if verb == "HEAD" {
                verb = "GET".to_string();
            } else if verb == "PATCH"
                && content_type.is_some_and(|ct| ct.starts_with(MEDIA_APPLY_PATCH))
            {
                verb = "APPLY".to_string();
            }
            return RequestLabels {
                verb,
                group: info.api_group.clone(),
                version: info.api_version.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone(),
                scope: info.scope().to_string(),
            };
        }
        RequestLabels {
            verb,
            group: String::new(),
            version: String::new(),
            resource: String::new(),
            subresource: String::new(),
            scope: String::new(),
        }
    }
}

impl<S, B> Service<Request<B>> for Metrics<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let start = Instant::now();
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let labels = RequestLabels::new(
            req.method(),
            content_type,
            req.extensions().get::<RequestInfo>(),
        );
        let method = req.method().clone();
        let uri = req.uri().clone();
        let user_agent = req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let fut = self.inner.call(req);
        async move {
            let result = fut.await;
            let elapsed = start.elapsed();
            // An error from the inner service never reaches the client as a response; hyper
            // drops the connection, which is what upstream records as code 0.
            let code = result.as_ref().map_or(0, |r| r.status().as_u16());
            record(&labels, code, elapsed.as_secs_f64());
            vlog!(
                3,
                verb = %method,
                uri = %uri,
                latency = ?elapsed,
                user_agent = %user_agent,
                resp = code,
                "HTTP"
            );
            result
        }
        .boxed()
    }
}

fn record(l: &RequestLabels, code: u16, seconds: f64) {
    metrics::counter!(
        "apiserver_request_total",
        "verb" => l.verb.clone(),
        "group" => l.group.clone(),
        "version" => l.version.clone(),
        "resource" => l.resource.clone(),
        "subresource" => l.subresource.clone(),
        "scope" => l.scope.clone(),
        "component" => COMPONENT,
        "code" => code.to_string(),
    )
    .increment(1);
    metrics::histogram!(
        "apiserver_request_duration_seconds",
        "verb" => l.verb.clone(),
        "group" => l.group.clone(),
        "version" => l.version.clone(),
        "resource" => l.resource.clone(),
        "subresource" => l.subresource.clone(),
        "scope" => l.scope.clone(),
        "component" => COMPONENT,
    )
    .record(seconds);
}
