//! The endpoints every daemon serves: `/healthz`, `/livez`, `/readyz` (and their checks),
//! `/metrics`, `/configz` and `/version`.

use crate::configz::Configz;
use crate::healthz::Health;
use crate::serving::SecureServingOptions;
use bytes::Bytes;
use http::{Method, StatusCode, header};
use http_body_util::Full;
use hyper::{Request, Response};
use std::convert::Infallible;
use tokio_util::sync::CancellationToken;

/// Routes the common endpoints; cloning shares the health checks and configz.
#[derive(Clone, Default)]
pub struct DebugHandlers {
    pub health: Health,
    pub configz: Configz,
}

impl DebugHandlers {
    /// Answers a request; every other path is a 404.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "405 method not allowed\n");
        }
        let path = req.uri().path();
        if let Some(health) = self.health.serve_path(path, req.uri().query()).await {
            let status = StatusCode::from_u16(health.status).unwrap_or(StatusCode::OK);
            return text(status, health.body);
        }
        match path {
            "/metrics" => with_type(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                crate::metrics::render(),
            ),
            "/configz" => json(&self.configz.to_json()),
            "/version" => json(&crate::version::info()),
            _ => text(StatusCode::NOT_FOUND, "404 page not found\n"),
        }
    }

    /// Serves these endpoints on the secure port until `shutdown` is cancelled; from then on
    /// readiness fails and open connections drain before this returns.
    pub async fn serve_until_shutdown<const PORT: u16>(
        self,
        serving: &SecureServingOptions<PORT>,
        pair_name: &str,
        shutdown: CancellationToken,
    ) -> anyhow::Result<()> {
        let server = serving
            .start(pair_name, self.clone().service(), shutdown.clone())
            .await?;
        shutdown.cancelled().await;
        self.health.mark_shutting_down();
        if let Some(server) = server {
            server.wait().await;
        }
        Ok(())
    }

    /// A hyper service over [`handle`](Self::handle), for [`crate::serving::serve`].
    pub fn service(
        self,
    ) -> impl hyper::service::Service<
        Request<hyper::body::Incoming>,
        Response = Response<Full<Bytes>>,
        Error = Infallible,
        Future = impl Send,
    > + Clone
    + Send
    + Sync
    + 'static {
        hyper::service::service_fn(move |req| {
            let handlers = self.clone();
            async move { Ok::<_, Infallible>(handlers.handle(req).await) }
        })
    }
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Full<Bytes>> {
    with_type(status, "text/plain; charset=utf-8", body.into())
}

fn json<T: serde::Serialize>(value: &T) -> Response<Full<Bytes>> {
    match serde_json::to_string_pretty(value) {
        Ok(body) => with_type(StatusCode::OK, "application/json", body),
        Err(err) => text(StatusCode::INTERNAL_SERVER_ERROR, err.to_string()),
    }
}

fn with_type(
    status: StatusCode,
    content_type: &'static str,
    body: String,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    response
}
