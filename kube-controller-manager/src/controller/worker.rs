//! The worker loop every queue-driven controller runs: pop a key, sync it, requeue it with
//! backoff on error, forget its failures on success.

use client_go_rs::informers::{InformerObject, SharedInformer};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use std::fmt::Display;
use std::hash::Hash;
use tokio_util::sync::CancellationToken;

/// Runs `workers` concurrent workers over `queue` until `shutdown`, then shuts the queue down
/// and waits for the in-flight syncs. A key is never synced by two workers at once (the
/// queue guarantees it).
pub async fn run_workers<K, F, Fut>(
    name: &str,
    queue: RateLimitingQueue<K>,
    workers: usize,
    shutdown: CancellationToken,
    sync: F,
) where
    K: Clone + Eq + Hash + Display + Send + Sync + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let sync = sync.clone();
        let name = name.to_string();
        tasks.spawn(async move {
            while let Some(key) = queue.get().await {
                match sync(key.clone()).await {
                    Ok(()) => queue.forget(&key),
                    Err(err) => {
                        tracing::warn!(controller = %name, %key, "sync failed, requeued: {err:#}");
                        queue.add_rate_limited(key.clone());
                    }
                }
                queue.done(&key);
            }
        });
    }
    shutdown.cancelled().await;
    queue.shut_down();
    while tasks.join_next().await.is_some() {}
}

/// An informer whatever its object type, so one controller can wait on several kinds.
pub trait CacheSync: Send + Sync {
    fn wait_for_cache_sync<'a>(&'a self, shutdown: &'a CancellationToken) -> BoxFuture<'a, bool>;
}

impl<T: InformerObject> CacheSync for SharedInformer<T> {
    fn wait_for_cache_sync<'a>(&'a self, shutdown: &'a CancellationToken) -> BoxFuture<'a, bool> {
        Box::pin(SharedInformer::wait_for_cache_sync(self, shutdown))
    }
}

/// [`run_workers`] once every cache in `caches` has synced, as upstream's
/// `WaitForNamedCacheSync` then `wait.Until(worker)`: syncing against a partial cache would
/// act on objects that merely have not been listed yet. Returns at once on shutdown.
pub async fn run_workers_when_synced<K, F, Fut>(
    name: &str,
    caches: &[&dyn CacheSync],
    queue: RateLimitingQueue<K>,
    workers: usize,
    shutdown: CancellationToken,
    sync: F,
) where
    K: Clone + Eq + Hash + Display + Send + Sync + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    for cache in caches {
        if !cache.wait_for_cache_sync(&shutdown).await {
            return;
        }
    }
    run_workers(name, queue, workers, shutdown, sync).await;
}

/// Every key queued now, sorted, each marked done: what a handler test asserts on.
#[cfg(test)]
pub async fn drain_sorted(queue: &RateLimitingQueue<String>) -> Vec<String> {
    let mut keys = Vec::new();
    while !queue.is_empty() {
        if let Some(k) = queue.get().await {
            queue.done(&k);
            keys.push(k);
        }
    }
    keys.sort();
    keys
}
