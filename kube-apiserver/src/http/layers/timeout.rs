//! Upstream's request deadline (`--request-timeout`, `WithRequestDeadline` and
//! `WithTimeoutForNonLongRunningRequests`): a request that is not long-running gets at most the
//! server's timeout, or the `?timeout=` it asks for when that is shorter, and is answered 504
//! `Timeout` when it runs out. Without it one stuck handler keeps its client waiting for ever
//! (and a client with no read timeout of its own, such as kube-client's default, never retries).

use std::task::{Context, Poll};
use std::time::Duration;

use component_base::duration::GoDuration;
use futures::future::{BoxFuture, FutureExt};
use http::{Request, Response};
use tower::{Layer, Service};

use crate::http::request_info::{RequestInfo, parse_query};
use crate::http::response::Body;
use crate::http::status::ApiError;

/// Upstream's default `--request-timeout`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Adds [`RequestTimeout`]; a zero timeout turns it off.
#[derive(Debug, Clone, Copy)]
pub struct RequestTimeoutLayer {
    timeout: Duration,
}

impl RequestTimeoutLayer {
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl<S> Layer<S> for RequestTimeoutLayer {
    type Service = RequestTimeout<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RequestTimeout {
            inner,
            timeout: self.timeout,
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct RequestTimeout<S> {
    inner: S,
    timeout: Duration,
}

/// The deadline of a request: None when it has none (long-running, or the layer is off);
/// Err for a `timeout` parameter that is not a Go duration.
fn deadline(
    default: Duration,
    info: Option<&RequestInfo>,
    query: Option<&str>,
) -> Result<Option<Duration>, ApiError> {
    if default.is_zero() || info.is_some_and(RequestInfo::is_long_running) {
        return Ok(None);
    }
    let asked = query
        .map(parse_query)
        .unwrap_or_default()
        .into_iter()
        .find(|(k, _)| k == "timeout")
        .map(|(_, v)| v);
    let Some(asked) = asked.filter(|v| !v.is_empty()) else {
        return Ok(Some(default));
    };
    let asked: GoDuration = asked.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid timeout specified in the request URL: {asked:?}"
        ))
    })?;
    Ok(Some(asked.0.min(default)))
}

impl<S, B> Service<Request<B>> for RequestTimeout<S>
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
        let limit = deadline(
            self.timeout,
            req.extensions().get::<RequestInfo>(),
            req.uri().query(),
        );
        let limit = match limit {
            Ok(Some(limit)) => limit,
            Ok(None) => return self.inner.call(req).boxed(),
            Err(err) => return futures::future::ready(Ok(err.into_response())).boxed(),
        };
        let fut = self.inner.call(req);
        async move {
            match tokio::time::timeout(limit, fut).await {
                Ok(result) => result,
                Err(_) => {
                    metrics::counter!("apiserver_request_timeouts_total").increment(1);
                    Ok(ApiError::timeout(
                        "request did not complete within requested timeout - context deadline exceeded",
                        0,
                    )
                    .into_response())
                }
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str, query: Option<&str>) -> RequestInfo {
        RequestInfo::parse(method, path, query).expect("parses")
    }

    /// The server's timeout, the request, its query, the deadline it gets.
    type Case<'a> = (
        Duration,
        Option<&'a RequestInfo>,
        Option<&'a str>,
        Option<Duration>,
    );

    #[test]
    fn deadlines() {
        let minute = Duration::from_secs(60);
        let get = info("GET", "/api/v1/namespaces/ns/pods/p", None);
        let watch = info("GET", "/api/v1/pods", Some("watch=true"));
        let cases: [Case; 6] = [
            (minute, Some(&get), None, Some(minute)),
            (
                minute,
                Some(&get),
                Some("timeout=5s"),
                Some(Duration::from_secs(5)),
            ),
            // Asking for more than the server allows gets the server's.
            (minute, Some(&get), Some("timeout=10m"), Some(minute)),
            (minute, Some(&watch), Some("watch=true"), None),
            (Duration::ZERO, Some(&get), None, None),
            // Without request info (a misbuilt stack) the request still gets a deadline.
            (minute, None, Some("timeout="), Some(minute)),
        ];
        for (default, info, query, want) in cases {
            assert_eq!(
                deadline(default, info, query).ok().flatten(),
                want,
                "{query:?}"
            );
        }
        let bad = deadline(minute, Some(&get), Some("timeout=soon")).unwrap_err();
        assert_eq!(bad.code(), 400);
    }
}
