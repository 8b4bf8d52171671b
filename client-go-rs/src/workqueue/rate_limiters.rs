//! Rate limiters deciding how long a key waits before it is retried.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Decides how long an item should wait before being retried (client-go's `RateLimiter`).
pub trait RateLimiter<K>: Send + Sync {
    /// The delay before `item` may be retried; each call counts as one more failure.
    fn when(&self, item: &K) -> Duration;
    /// Stops tracking `item` (it succeeded, or it was given up on).
    fn forget(&self, item: &K);
    /// How many times `item` has been rate limited since it was last forgotten.
    fn num_requeues(&self, item: &K) -> usize;
}

/// Invalid limiter parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateLimiterError {
    /// The token bucket's rate must be a positive, finite number of tokens per second.
    #[error("rate must be positive and finite, got {0}")]
    InvalidRate(f64),
    /// A bucket that can never hold a token would block for ever.
    #[error("burst must be at least 1")]
    ZeroBurst,
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`.
pub struct ItemExponentialFailureRateLimiter<K> {
    failures: Mutex<HashMap<K, u32>>,
    base: Duration,
    max: Duration,
}

impl<K: Eq + Hash + Clone> ItemExponentialFailureRateLimiter<K> {
    /// Backoff starting at `base`, doubling on each failure, never above `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            base,
            max,
        }
    }
}

impl<K: Eq + Hash + Clone> Default for ItemExponentialFailureRateLimiter<K> {
    /// client-go's defaults: 5 ms to 1000 s.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(1000))
    }
}

impl<K: Eq + Hash + Clone + Send + Sync> RateLimiter<K> for ItemExponentialFailureRateLimiter<K> {
    fn when(&self, item: &K) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            let n = failures.entry(item.clone()).or_insert(0);
            let exp = *n;
            *n = n.saturating_add(1);
            exp
        };
        if exp >= 64 {
            return self.max;
        }
        let nanos = self.base.as_nanos().saturating_mul(1u128 << exp);
        if nanos >= self.max.as_nanos() {
            return self.max;
        }
        // nanos < max, so the seconds fit in a u64.
        let secs = (nanos / 1_000_000_000) as u64;
        Duration::new(secs, (nanos % 1_000_000_000) as u32)
    }

    fn forget(&self, item: &K) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &K) -> usize {
        self.failures.lock().get(item).map_or(0, |&n| n as usize)
    }
}

/// An overall token bucket shared by all items, with golang.org/x/time/rate's reservation
/// semantics: every call takes a token, going into debt if needed, and waits until the debt
/// would be paid back at `qps`.
pub struct BucketRateLimiter {
    qps: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

impl BucketRateLimiter {
    /// A bucket refilled at `qps` tokens per second, holding at most `burst`; it starts full.
    pub fn new(qps: f64, burst: u32) -> Result<Self, RateLimiterError> {
        if !(qps.is_finite() && qps > 0.0) {
            return Err(RateLimiterError::InvalidRate(qps));
        }
        if burst == 0 {
            return Err(RateLimiterError::ZeroBurst);
        }
        Ok(Self {
            qps,
            burst: f64::from(burst),
            bucket: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: Instant::now(),
            }),
        })
    }

    /// The delay for one more token, taking it.
    pub fn reserve(&self) -> Duration {
        let mut b = self.bucket.lock();
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        b.last = now;
        b.tokens -= 1.0;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.tokens / self.qps)
        }
    }
}

impl Default for BucketRateLimiter {
    /// client-go's default controller bucket: 10 qps, burst 100.
    fn default() -> Self {
        Self {
            qps: 10.0,
            burst: 100.0,
            bucket: Mutex::new(Bucket {
                tokens: 100.0,
                last: Instant::now(),
            }),
        }
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _item: &K) -> Duration {
        self.reserve()
    }
    fn forget(&self, _item: &K) {}
    fn num_requeues(&self, _item: &K) -> usize {
        0
    }
}

/// `fast` delay for the first `max_fast_attempts` failures of an item, `slow` afterwards.
pub struct ItemFastSlowRateLimiter<K> {
    failures: Mutex<HashMap<K, usize>>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: usize,
}

impl<K: Eq + Hash + Clone> ItemFastSlowRateLimiter<K> {
    /// See the type's documentation.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: usize) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            fast,
            slow,
            max_fast_attempts,
        }
    }
}

impl<K: Eq + Hash + Clone + Send + Sync> RateLimiter<K> for ItemFastSlowRateLimiter<K> {
    fn when(&self, item: &K) -> Duration {
        let mut failures = self.failures.lock();
        let n = failures.entry(item.clone()).or_insert(0);
        *n = n.saturating_add(1);
        if *n <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }
    fn forget(&self, item: &K) {
        self.failures.lock().remove(item);
    }
    fn num_requeues(&self, item: &K) -> usize {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// The longest delay of several limiters (all of them are consulted, so all count the failure).
pub struct MaxOfRateLimiter<K> {
    limiters: Vec<Arc<dyn RateLimiter<K>>>,
}

impl<K> MaxOfRateLimiter<K> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<K>>>) -> Self {
        Self { limiters }
    }
}

impl<K> RateLimiter<K> for MaxOfRateLimiter<K> {
    fn when(&self, item: &K) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }
    fn forget(&self, item: &K) {
        for l in &self.limiters {
            l.forget(item);
        }
    }
    fn num_requeues(&self, item: &K) -> usize {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max_wait`.
pub struct WithMaxWaitRateLimiter<K> {
    limiter: Arc<dyn RateLimiter<K>>,
    max_wait: Duration,
}

impl<K> WithMaxWaitRateLimiter<K> {
    /// Wraps `limiter`, never waiting longer than `max_wait`.
    pub fn new(limiter: Arc<dyn RateLimiter<K>>, max_wait: Duration) -> Self {
        Self { limiter, max_wait }
    }
}

impl<K> RateLimiter<K> for WithMaxWaitRateLimiter<K> {
    fn when(&self, item: &K) -> Duration {
        self.limiter.when(item).min(self.max_wait)
    }
    fn forget(&self, item: &K) {
        self.limiter.forget(item);
    }
    fn num_requeues(&self, item: &K) -> usize {
        self.limiter.num_requeues(item)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the max of per-item exponential backoff
/// (5 ms to 1000 s) and an overall bucket of 10 qps with a burst of 100.
pub fn default_controller_rate_limiter<K>() -> MaxOfRateLimiter<K>
where
    K: Eq + Hash + Clone + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Arc::new(ItemExponentialFailureRateLimiter::<K>::default()),
        Arc::new(BucketRateLimiter::default()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn exponential_doubles_per_item_and_caps() {
        let l = ItemExponentialFailureRateLimiter::new(ms(5), Duration::from_secs(1000));
        let got: Vec<_> = (0..5).map(|_| l.when(&"a")).collect();
        assert_eq!(got, vec![ms(5), ms(10), ms(20), ms(40), ms(80)]);
        assert_eq!(l.num_requeues(&"a"), 5);
        // Another item has its own count.
        assert_eq!(l.when(&"b"), ms(5));
        // 5ms * 2^18 = 1310.72 s > 1000 s, and far beyond 64 doublings it stays capped.
        for _ in 5..18 {
            l.when(&"a");
        }
        assert_eq!(l.when(&"a"), Duration::from_secs(1000));
        for _ in 0..100 {
            l.when(&"a");
        }
        assert_eq!(l.when(&"a"), Duration::from_secs(1000));
    }

    #[test]
    fn exponential_forget_resets() {
        let l = ItemExponentialFailureRateLimiter::new(ms(1), ms(1000));
        l.when(&1);
        l.when(&1);
        assert_eq!(l.when(&1), ms(4));
        l.forget(&1);
        assert_eq!(l.num_requeues(&1), 0);
        assert_eq!(l.when(&1), ms(1));
    }

    #[test]
    fn fast_slow() {
        let l = ItemFastSlowRateLimiter::new(ms(5), Duration::from_secs(10), 3);
        let got: Vec<_> = (0..5).map(|_| l.when(&"x")).collect();
        assert_eq!(
            got,
            vec![
                ms(5),
                ms(5),
                ms(5),
                Duration::from_secs(10),
                Duration::from_secs(10)
            ]
        );
        assert_eq!(l.num_requeues(&"x"), 5);
        l.forget(&"x");
        assert_eq!(l.when(&"x"), ms(5));
    }

    #[test]
    fn bucket_rejects_bad_parameters() {
        assert!(matches!(
            BucketRateLimiter::new(0.0, 1),
            Err(RateLimiterError::InvalidRate(_))
        ));
        assert!(matches!(
            BucketRateLimiter::new(f64::NAN, 1),
            Err(RateLimiterError::InvalidRate(_))
        ));
        assert!(matches!(
            BucketRateLimiter::new(1.0, 0),
            Err(RateLimiterError::ZeroBurst)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_burst_then_rate() {
        let l = BucketRateLimiter::new(10.0, 3).unwrap();
        let w = |l: &BucketRateLimiter| RateLimiter::<u8>::when(l, &0);
        assert_eq!(w(&l), Duration::ZERO);
        assert_eq!(w(&l), Duration::ZERO);
        assert_eq!(w(&l), Duration::ZERO);
        // Past the burst each call waits one more tenth of a second.
        let close = |d: Duration, want: u64| d.abs_diff(ms(want)) < Duration::from_micros(10);
        assert!(close(w(&l), 100));
        assert!(close(w(&l), 200));
        // 250 ms pay the debt of 2 tokens back to 0.5: the next call owes half a token.
        tokio::time::advance(ms(250)).await;
        assert!(close(w(&l), 50));
        // A long pause refills the bucket only up to the burst.
        tokio::time::advance(Duration::from_secs(10)).await;
        for _ in 0..3 {
            assert_eq!(w(&l), Duration::ZERO);
        }
        assert!(close(w(&l), 100));
    }

    #[tokio::test(start_paused = true)]
    async fn max_of_takes_the_longest_and_forgets_all() {
        let exp: Arc<dyn RateLimiter<&str>> =
            Arc::new(ItemExponentialFailureRateLimiter::new(ms(1), ms(1000)));
        let fast_slow: Arc<dyn RateLimiter<&str>> =
            Arc::new(ItemFastSlowRateLimiter::new(ms(3), ms(100), 2));
        let l = MaxOfRateLimiter::new(vec![exp, fast_slow]);
        let got: Vec<_> = (0..5).map(|_| l.when(&"k")).collect();
        // exp: 1,2,4,8,16; fast/slow: 3,3,100,100,100.
        assert_eq!(got, vec![ms(3), ms(3), ms(100), ms(100), ms(100)]);
        assert_eq!(l.num_requeues(&"k"), 5);
        l.forget(&"k");
        assert_eq!(l.num_requeues(&"k"), 0);
        assert_eq!(l.when(&"k"), ms(3));
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_exponential_under_a_bucket() {
        let l = default_controller_rate_limiter::<u32>();
        assert_eq!(l.when(&1), ms(5));
        assert_eq!(l.when(&1), ms(10));
        // Spend the rest of the burst of 100 on other items: the bucket then dominates.
        for i in 2..100 {
            l.when(&i);
        }
        let d = l.when(&1000);
        assert!(d > ms(5) && d <= ms(100), "{d:?}");
    }

    #[test]
    fn with_max_wait_caps() {
        let inner: Arc<dyn RateLimiter<u8>> =
            Arc::new(ItemExponentialFailureRateLimiter::new(ms(10), ms(10_000)));
        let l = WithMaxWaitRateLimiter::new(inner, ms(25));
        assert_eq!(l.when(&0), ms(10));
        assert_eq!(l.when(&0), ms(20));
        assert_eq!(l.when(&0), ms(25));
        assert_eq!(l.num_requeues(&0), 3);
    }
}
