//! Client-side rate limiting (client-go's QPS/burst token bucket) as a tower layer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tower::{Layer, Service};

/// A token bucket refilled at `qps` tokens per second up to `burst`, where a caller may take a
/// token in advance and wait until it is due (as Go's `rate.Limiter.Wait`).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket at `now`. `burst` is at least 1.
    pub fn new(qps: f32, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps: f64::from(qps),
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes a token at `now`; returns how long the caller must wait before using it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 || self.qps <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

/// Delays requests so that they start at most `qps` per second, with bursts of `burst`.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    bucket: Arc<Mutex<TokenBucket>>,
}

impl RateLimitLayer {
    /// A limiter shared by every service this layer wraps.
    pub fn new(qps: f32, burst: u32) -> Self {
        Self {
            bucket: Arc::new(Mutex::new(TokenBucket::new(qps, burst, Instant::now()))),
        }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            bucket: self.bucket.clone(),
            reserved: false,
            delay: None,
        }
    }
}

/// The service [`RateLimitLayer`] builds: not ready until its token is due.
pub struct RateLimited<S> {
    inner: S,
    bucket: Arc<Mutex<TokenBucket>>,
    /// A token is taken for the next call (taken once per call, however often we are polled).
    reserved: bool,
    delay: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for RateLimited<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimited")
            .field("inner", &self.inner)
            .field("reserved", &self.reserved)
            .finish()
    }
}

impl<S, Req> Service<Req> for RateLimited<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !self.reserved {
            self.reserved = true;
            let wait = self.bucket.lock().reserve(Instant::now());
            if !wait.is_zero() {
                self.delay = Some(Box::pin(tokio::time::sleep(wait)));
            }
        }
        if let Some(delay) = self.delay.as_mut() {
            ready!(delay.as_mut().poll(cx));
            self.delay = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.reserved = false;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_qps() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(5.0, 2, t0);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        // Bucket empty: the third token is due in 1/5 s, the fourth in 2/5 s.
        assert_eq!(b.reserve(t0), Duration::from_millis(200));
        assert_eq!(b.reserve(t0), Duration::from_millis(400));
        // One second later 5 tokens were added, 2 of which repay the debt; burst caps the rest.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(b.reserve(t1), Duration::ZERO);
        assert_eq!(b.reserve(t1), Duration::ZERO);
        assert_eq!(b.reserve(t1), Duration::from_millis(200));
    }

    #[test]
    fn idle_refill_is_capped_by_burst() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 3, t0);
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(b.reserve(later), Duration::ZERO);
        }
        assert_eq!(b.reserve(later), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn layer_delays_calls_beyond_burst() {
        use tower::ServiceExt;
        let layer = RateLimitLayer::new(1.0, 1);
        let mut svc = layer.layer(tower::service_fn(|x: u32| async move { Ok::<_, ()>(x) }));
        let start = tokio::time::Instant::now();
        assert_eq!(svc.ready().await.expect("ready").call(1).await, Ok(1));
        assert_eq!(svc.ready().await.expect("ready").call(2).await, Ok(2));
        // With the clock paused, time only advances by the sleep the limiter asked for.
        assert!(tokio::time::Instant::now() - start >= Duration::from_millis(900));
    }
}
