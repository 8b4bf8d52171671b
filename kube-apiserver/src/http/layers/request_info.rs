//! Parses what a request is about once and stores it as a request extension for every later
//! layer and the handler (upstream's `WithRequestInfo`).

use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use http::{Request, Response};
use tower::{Layer, Service};

use crate::http::request_info::RequestInfo;
use crate::http::response::Body;
use crate::http::status::ApiError;

/// Adds [`RequestInfoService`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestInfoLayer;

impl<S> Layer<S> for RequestInfoLayer {
    type Service = RequestInfoService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RequestInfoService { inner }
    }
}

/// Inserts the [`RequestInfo`] extension; a path that cannot be understood (`/api/v1/watch`)
/// is answered 404 here. (Upstream answers 500 for it; a bad path is the client's error.)
#[derive(Debug, Clone)]
pub struct RequestInfoService<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for RequestInfoService<S>
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

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        match RequestInfo::from_request(&req) {
            Ok(info) => {
                req.extensions_mut().insert(info);
                self.inner.call(req).boxed()
            }
            Err(e) => {
                tracing::debug!(error = %e, "unparsable request path");
                futures::future::ready(Ok(ApiError::path_not_found().into_response())).boxed()
            }
        }
    }
}
