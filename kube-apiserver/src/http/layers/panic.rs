//! Panic recovery, the outermost layer: a handler that panics answers 500 and the server keeps
//! serving (upstream's `WithPanicRecovery`).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use http::{Request, Response};
use tower::{Layer, Service};

use crate::http::response::Body;
use crate::http::status::ApiError;

/// The message upstream sends when a request made the apiserver panic.
pub const PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

/// Adds [`PanicRecovery`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PanicRecoveryLayer;

impl<S> Layer<S> for PanicRecoveryLayer {
    type Service = PanicRecovery<S>;
    fn layer(&self, inner: S) -> Self::Service {
        PanicRecovery { inner }
    }
}

/// Turns a panic while handling a request into a 500 `InternalError` Status.
#[derive(Debug, Clone)]
pub struct PanicRecovery<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for PanicRecovery<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let method = req.method().clone();
        let uri = req.uri().clone();
        let inner = &mut self.inner;
        // A handler may panic before returning its future as well as while it runs.
        let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| inner.call(req))) {
            Ok(fut) => fut,
            Err(payload) => {
                log_panic(&method, &uri, payload.as_ref());
                return Box::pin(async { Ok(panic_response()) });
            }
        };
        Box::pin(async move {
            match AssertUnwindSafe(fut).catch_unwind().await {
                Ok(result) => result,
                Err(payload) => {
                    log_panic(&method, &uri, payload.as_ref());
                    Ok(panic_response())
                }
            }
        })
    }
}

fn panic_response() -> Response<Body> {
    let mut err = ApiError::internal(PANIC_MESSAGE).into_status();
    err.message = Some(PANIC_MESSAGE.to_string());
    ApiError::from_status(err).into_response()
}

fn log_panic(method: &http::Method, uri: &http::Uri, payload: &(dyn Any + Send)) {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string());
    tracing::error!(%method, %uri, panic = %message, "apiserver panic'd");
}
