//! Work queues with client-go's semantics: [`Queue`] (deduplicated FIFO that never gives one
//! key to two workers), [`DelayingQueue`] (`add_after`) and [`RateLimitingQueue`]
//! (`add_rate_limited` / `forget` with per-item backoff under an overall token bucket).
//!
//! A controller's loop:
//! ```no_run
//! # async fn sync(_: &str) -> Result<(), ()> { Ok(()) }
//! # async fn run() {
//! use client_go_rs::workqueue::RateLimitingQueue;
//! let queue = RateLimitingQueue::<String>::default_controller("deployment");
//! while let Some(key) = queue.get().await {
//!     match sync(&key).await {
//!         Ok(()) => queue.forget(&key),
//!         Err(()) => queue.add_rate_limited(key.clone()),
//!     }
//!     queue.done(&key);
//! }
//! # }
//! ```

mod delaying;
mod metrics;
mod queue;
mod rate_limiters;
mod rate_limiting;

pub use delaying::DelayingQueue;
pub use queue::Queue;
pub use rate_limiters::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, RateLimiterError, WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;
