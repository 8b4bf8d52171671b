//! A delaying queue whose retries are paced by a [`RateLimiter`].

use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;

use super::delaying::DelayingQueue;
use super::queue::Queue;
use super::rate_limiters::{RateLimiter, default_controller_rate_limiter};

/// A [`DelayingQueue`] with [`RateLimitingQueue::add_rate_limited`]; `Queue`'s and
/// `DelayingQueue`'s methods are available through `Deref`.
pub struct RateLimitingQueue<K> {
    delaying: DelayingQueue<K>,
    limiter: Arc<dyn RateLimiter<K>>,
}

impl<K> Clone for RateLimitingQueue<K> {
    fn clone(&self) -> Self {
        Self {
            delaying: self.delaying.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<K> Deref for RateLimitingQueue<K> {
    type Target = DelayingQueue<K>;
    fn deref(&self) -> &DelayingQueue<K> {
        &self.delaying
    }
}

impl<K> RateLimitingQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An anonymous queue paced by `limiter`.
    ///
    /// # Panics
    /// Outside a Tokio runtime (the delaying part spawns a timer task).
    pub fn new(limiter: Arc<dyn RateLimiter<K>>) -> Self {
        Self::with_queue(Queue::new(), limiter)
    }

    /// A queue with `workqueue_*` metrics labelled `name`, paced by `limiter`.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn named(name: &str, limiter: Arc<dyn RateLimiter<K>>) -> Self {
        Self::with_queue(Queue::named(name), limiter)
    }

    /// A named queue with [`default_controller_rate_limiter`], what controllers use.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn default_controller(name: &str) -> Self {
        Self::named(name, Arc::new(default_controller_rate_limiter()))
    }

    fn with_queue(queue: Queue<K>, limiter: Arc<dyn RateLimiter<K>>) -> Self {
        Self {
            delaying: DelayingQueue::with_queue(queue),
            limiter,
        }
    }

    /// Adds `key` after the delay the rate limiter decides (counting one more failure).
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.limiter.when(&key);
        self.delaying.add_after(key, delay);
    }

    /// Clears the limiter's memory of `key`'s failures; call it once the key succeeds.
    /// It does not remove the key from the queue.
    pub fn forget(&self, key: &K) {
        self.limiter.forget(key);
    }

    /// How many times `key` has been rate limited since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> usize {
        self.limiter.num_requeues(key)
    }
}
