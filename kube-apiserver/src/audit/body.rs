//! Bodies seen by auditing without being held up by it.
//!
//! - [`TapRequestBodies`] wraps the whole request path (outside the generic stack, where the
//!   server knows its body type) so each request body can copy what the handler reads from it
//!   into a [`RequestTap`]; the audit layer arms the tap only for audited writes. The handler
//!   still reads the body itself, under its own 3 MiB limit; the tap stops copying at that
//!   limit, and nothing is copied from reads or watches.
//! - [`OnComplete`] runs a closure when a streamed response body ends or is dropped: the
//!   `ResponseComplete` event of a watch is written when the watch ends.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use parking_lot::Mutex;
use tower::Service;

use crate::http::body::MAX_REQUEST_BODY_BYTES;
use crate::http::response::{Body, BoxError};

/// What a request body has delivered so far, once armed. A request extension.
#[derive(Debug, Clone, Default)]
pub struct RequestTap(Arc<TapState>);

#[derive(Debug, Default)]
struct TapState {
    armed: AtomicBool,
    bytes: Mutex<TapBytes>,
}

#[derive(Debug, Default)]
struct TapBytes {
    data: Vec<u8>,
    overflow: bool,
}

impl RequestTap {
    /// Starts copying the body's data.
    pub fn arm(&self) {
        self.0.armed.store(true, Ordering::Release);
    }

    fn record(&self, data: &[u8]) {
        if !self.0.armed.load(Ordering::Acquire) {
            return;
        }
        let mut bytes = self.0.bytes.lock();
        if bytes.overflow || bytes.data.len() + data.len() > MAX_REQUEST_BODY_BYTES {
            // The handler refuses such a body with 413; its prefix is no object.
            bytes.overflow = true;
            bytes.data = Vec::new();
            return;
        }
        bytes.data.extend_from_slice(data);
    }

    /// The whole body, if the tap was armed and the body stayed within the limit.
    pub fn take(&self) -> Option<Vec<u8>> {
        if !self.0.armed.load(Ordering::Acquire) {
            return None;
        }
        let mut bytes = self.0.bytes.lock();
        (!bytes.overflow && !bytes.data.is_empty()).then(|| std::mem::take(&mut bytes.data))
    }
}

/// A request body copying its data frames into a tap (when there is one).
#[derive(Debug)]
pub struct TapBody<B> {
    inner: B,
    tap: Option<RequestTap>,
}

impl<B> TapBody<B> {
    /// Wraps `inner`; without a tap it only forwards.
    pub fn new(inner: B, tap: Option<RequestTap>) -> Self {
        TapBody { inner, tap }
    }
}

impl<B> HttpBody for TapBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let (Some(tap), Poll::Ready(Some(Ok(frame)))) = (&this.tap, &polled)
            && let Some(data) = frame.data_ref()
        {
            tap.record(data);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Gives every request a [`TapBody`] and its [`RequestTap`] extension when auditing is on;
/// otherwise bodies only pass through.
#[derive(Debug, Clone)]
pub struct TapRequestBodies<S> {
    inner: S,
    enabled: bool,
}

impl<S> TapRequestBodies<S> {
    /// Wraps `inner`; `enabled` is whether anything is audited.
    pub fn new(inner: S, enabled: bool) -> Self {
        TapRequestBodies { inner, enabled }
    }
}

impl<S, B> Service<Request<B>> for TapRequestBodies<S>
where
    S: Service<Request<TapBody<B>>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if !self.enabled {
            return self.inner.call(req.map(|b| TapBody::new(b, None)));
        }
        let tap = RequestTap::default();
        let (mut parts, body) = req.into_parts();
        parts.extensions.insert(tap.clone());
        self.inner
            .call(Request::from_parts(parts, TapBody::new(body, Some(tap))))
    }
}

/// A response body that runs a closure once, when it ends or is dropped.
pub struct OnComplete {
    inner: Body,
    done: Option<Box<dyn FnOnce() + Send>>,
}

impl OnComplete {
    /// Wraps `inner`, boxed again as a response [`Body`].
    pub fn wrap(inner: Body, done: impl FnOnce() + Send + 'static) -> Body {
        http_body_util::BodyExt::boxed_unsync(OnComplete {
            inner,
            done: Some(Box::new(done)),
        })
    }

    fn finish(&mut self) {
        if let Some(done) = self.done.take() {
            done();
        }
    }
}

impl HttpBody for OnComplete {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.finish();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for OnComplete {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};
    use std::sync::atomic::AtomicUsize;

    #[tokio::test]
    async fn tap_copies_only_when_armed_and_within_the_limit() {
        let tap = RequestTap::default();
        let body = TapBody::new(
            Full::new(Bytes::from_static(b"{\"a\":1}")),
            Some(tap.clone()),
        );
        body.collect().await.expect("body");
        assert_eq!(tap.take(), None, "not armed");

        let tap = RequestTap::default();
        tap.arm();
        let body = TapBody::new(
            Full::new(Bytes::from_static(b"{\"a\":1}")),
            Some(tap.clone()),
        );
        let read = body.collect().await.expect("body").to_bytes();
        assert_eq!(
            &read[..],
            b"{\"a\":1}",
            "the handler still reads everything"
        );
        assert_eq!(tap.take().as_deref(), Some(&b"{\"a\":1}"[..]));

        let tap = RequestTap::default();
        tap.arm();
        let big = Bytes::from(vec![b' '; MAX_REQUEST_BODY_BYTES + 1]);
        TapBody::new(Full::new(big), Some(tap.clone()))
            .collect()
            .await
            .expect("body");
        assert_eq!(tap.take(), None, "over the limit");
    }

    #[tokio::test]
    async fn on_complete_runs_once_at_the_end_or_on_drop() {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let body = OnComplete::wrap(crate::http::response::full("abc"), move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        body.collect().await.expect("body");
        assert_eq!(count.load(Ordering::SeqCst), 1);

        let c = count.clone();
        let body = OnComplete::wrap(crate::http::response::full("abc"), move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        drop(body);
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }
}
