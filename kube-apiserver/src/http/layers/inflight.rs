//! Upstream's max-in-flight filter (`--max-requests-inflight`, `--max-mutating-requests-inflight`):
//! at most that many read-only and mutating requests run at once; one more is refused at once
//! with 429 and `Retry-After: 1` rather than queued. Long-running requests (watch, exec, logs,
//! proxy...) are not counted, and `system:masters` is never refused.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use http::{Request, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service};

use crate::http::auth::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::http::request_info::RequestInfo;
use crate::http::response::Body;
use crate::http::status::ApiError;

/// Upstream's default `--max-requests-inflight`.
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 400;
/// Upstream's default `--max-mutating-requests-inflight`.
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: usize = 200;
/// The message of the 429, as upstream's.
pub const TOO_MANY_REQUESTS_MESSAGE: &str = "Too many requests, please try again later.";

/// Adds [`InFlightLimit`]. Clones share the same limits.
#[derive(Debug, Clone)]
pub struct InFlightLimitLayer {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl InFlightLimitLayer {
    /// Limits of `max_read_only` and `max_mutating` concurrent requests; 0 means no limit.
    pub fn new(max_read_only: usize, max_mutating: usize) -> Self {
        let sem = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        InFlightLimitLayer {
            read_only: sem(max_read_only),
            mutating: sem(max_mutating),
        }
    }
}

impl<S> Layer<S> for InFlightLimitLayer {
    type Service = InFlightLimit<S>;
    fn layer(&self, inner: S) -> Self::Service {
        InFlightLimit {
            inner,
            limits: self.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct InFlightLimit<S> {
    inner: S,
    limits: InFlightLimitLayer,
}

impl<S, B> Service<Request<B>> for InFlightLimit<S>
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
        let info = req.extensions().get::<RequestInfo>();
        // Without request info (a misbuilt stack) count the request as mutating, the stricter.
        if info.is_some_and(RequestInfo::is_long_running) {
            return self.inner.call(req).boxed();
        }
        let read_only = info.is_some_and(RequestInfo::is_read_only);
        let (sem, kind) = if read_only {
            (&self.limits.read_only, "readOnly")
        } else {
            (&self.limits.mutating, "mutating")
        };
        let Some(sem) = sem else {
            return self.inner.call(req).boxed();
        };
        match sem.clone().try_acquire_owned() {
            Ok(permit) => {
                let gauge =
                    metrics::gauge!("apiserver_current_inflight_requests", "request_kind" => kind);
                gauge.increment(1.0);
                // Released on completion and also when the client goes away mid-request.
                let guard = InFlight {
                    gauge,
                    _permit: permit,
                };
                let fut = self.inner.call(req);
                async move {
                    let result = fut.await;
                    drop(guard);
                    result
                }
                .boxed()
            }
            Err(_) => {
                let privileged = req
                    .extensions()
                    .get::<UserInfo>()
                    .is_some_and(|u| u.in_group(SYSTEM_PRIVILEGED_GROUP));
                if privileged {
                    return self.inner.call(req).boxed();
                }
                metrics::counter!("apiserver_dropped_requests_total", "request_kind" => kind)
                    .increment(1);
                let err = ApiError::too_many_requests(TOO_MANY_REQUESTS_MESSAGE, 1);
                futures::future::ready(Ok(err.into_response())).boxed()
            }
        }
    }
}

/// A counted request: frees its slot and lowers the gauge when dropped.
struct InFlight {
    gauge: metrics::Gauge,
    _permit: OwnedSemaphorePermit,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.decrement(1.0);
    }
}
