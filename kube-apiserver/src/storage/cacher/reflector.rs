//! The cacher's one task: it follows the backend watch, applies each change to the store and
//! dispatches it to the watchers, sends bookmarks, and re-watches or re-lists when the backend
//! watch ends.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use futures::future::join_all;
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::{Instant, MissedTickBehavior};

use super::event::{CacheEvent, WatchEvent};
use super::watcher::Watcher;
use super::{Cacher, Progress};
use crate::storage::backend::{Event, StorageError, WatchStream};
use crate::storage::codec::decode;

impl Cacher {
    /// Runs until shutdown, then ends every watcher.
    pub(super) async fn run(self: Arc<Self>, mut stream: WatchStream) {
        let tick = self
            .config
            .progress_bookmark_period
            .min(self.config.bookmark_period)
            .max(Duration::from_millis(1));
        let mut ticker = tokio::time::interval_at(Instant::now() + tick, tick);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_heartbeat = Instant::now();
        loop {
            let item = tokio::select! {
                biased;
                _ = self.shutdown.cancelled() => break,
                item = stream.next() => item,
                _ = ticker.tick() => {
                    let heartbeat = last_heartbeat.elapsed() >= self.config.bookmark_period;
                    if heartbeat {
                        last_heartbeat = Instant::now();
                    }
                    self.send_bookmarks(heartbeat);
                    continue;
                }
            };
            let next = match item {
                Some(Ok(event)) => {
                    self.process(&event).await;
                    continue;
                }
                Some(Err(error @ StorageError::Compacted { .. })) => self.relist(error).await,
                Some(Err(error)) => {
                    tracing::warn!(prefix = %self.prefix, %error, "watch cache: backend watch failed, re-watching");
                    self.rewatch().await
                }
                None => {
                    tracing::warn!(prefix = %self.prefix, "watch cache: backend watch ended, re-watching");
                    self.rewatch().await
                }
            };
            match next {
                Some(next) => stream = next,
                None => break,
            }
        }
        self.progress.send_modify(|p| p.ready = false);
        let watchers = std::mem::take(&mut self.inner.write().watchers);
        for watcher in watchers.iter() {
            watcher.stop.cancel();
        }
    }

    /// Applies one backend change and hands it to every interested watcher.
    async fn process(&self, event: &Event) {
        // Decoding is the costly part: keep it out of the lock readers wait on.
        let decoded = match event {
            Event::Put { kv, .. } => Some(decode(kv)),
            Event::Delete { .. } | Event::Progress { .. } => None,
        };
        let (change, watchers, revision) = {
            let mut inner = self.inner.write();
            let change = inner.store.apply(event, decoded);
            (change, inner.watchers.clone(), inner.store.revision())
        };
        self.progress.send_modify(|p| p.revision = revision);
        if let Some(change) = change {
            self.dispatch(&change, &watchers).await;
        }
    }

    /// Queues `change` for every watcher it concerns without waiting for any of them; then
    /// gives those whose queue is full a short grace, all at once, and drops the ones still
    /// full after it (as upstream's dispatchTimeoutBudget does).
    async fn dispatch(&self, change: &CacheEvent, watchers: &[Arc<Watcher>]) {
        let mut blocked = Vec::new();
        let mut gone = Vec::new();
        for watcher in watchers {
            let Some(event) = change.for_watcher(&watcher.prefix, &watcher.filter) else {
                if watcher.bookmarks {
                    watcher.behind.store(true, Ordering::Relaxed);
                }
                continue;
            };
            watcher.behind.store(false, Ordering::Relaxed);
            match watcher.input.try_send(event) {
                Ok(()) => {}
                Err(TrySendError::Full(event)) => blocked.push((watcher, event)),
                Err(TrySendError::Closed(_)) => gone.push(watcher.id),
            }
        }
        if !blocked.is_empty() {
            let grace = self.config.slow_watcher_grace;
            let waits = blocked.into_iter().map(|(watcher, event)| async move {
                let sent = tokio::time::timeout(grace, watcher.input.send(event)).await;
                (watcher, matches!(sent, Ok(Ok(()))))
            });
            for (watcher, sent) in join_all(waits).await {
                if !sent {
                    tracing::warn!(prefix = %self.prefix, watcher = watcher.id, "watch cache: dropping a watcher too slow to keep up");
                    gone.push(watcher.id);
                }
            }
        }
        if !gone.is_empty() {
            self.remove_watchers(&gone);
        }
    }

    /// Bookmarks at the cache revision: to every bookmark watcher on a `heartbeat`, otherwise
    /// to those that had changes filtered out since they were last sent something. A bookmark
    /// that does not fit in a watcher's queue is skipped, never waited for.
    fn send_bookmarks(&self, heartbeat: bool) {
        let (watchers, revision) = {
            let inner = self.inner.read();
            (inner.watchers.clone(), inner.store.revision())
        };
        let mut gone = Vec::new();
        for watcher in watchers.iter() {
            if watcher.input.is_closed() {
                gone.push(watcher.id);
                continue;
            }
            if !watcher.bookmarks {
                continue;
            }
            let behind = watcher.behind.swap(false, Ordering::Relaxed);
            if !heartbeat && !behind {
                continue;
            }
            let sent = watcher.input.try_send(WatchEvent::Bookmark(revision));
            if sent.is_err() && behind {
                watcher.behind.store(true, Ordering::Relaxed);
            }
        }
        if !gone.is_empty() {
            self.remove_watchers(&gone);
        }
    }

    fn remove_watchers(&self, ids: &[u64]) {
        let mut inner = self.inner.write();
        let (removed, kept): (Vec<_>, Vec<_>) = inner
            .watchers
            .iter()
            .cloned()
            .partition(|watcher| ids.contains(&watcher.id));
        inner.watchers = Arc::new(kept);
        for watcher in removed {
            watcher.stop.cancel();
        }
    }

    /// Watches the backend again from the cache's revision, after a backoff; re-lists if that
    /// history is gone. None on shutdown.
    async fn rewatch(&self) -> Option<WatchStream> {
        let mut backoff = self.config.min_backoff;
        loop {
            if !self.sleep(backoff).await {
                return None;
            }
            let revision = self.inner.read().store.revision();
            match self.backend.watch(&self.prefix, revision).await {
                Ok(stream) => return Some(stream),
                Err(error @ StorageError::Compacted { .. }) => {
                    return self.relist(error).await;
                }
                Err(error) => {
                    tracing::warn!(prefix = %self.prefix, %error, "watch cache: re-watch failed");
                    backoff = (backoff * 2).min(self.config.max_backoff);
                }
            }
        }
    }

    /// Starts over from a fresh list: the changes between the cache's revision and the list's
    /// are lost, so every watcher is ended with `error` (clients re-list, as after a 410), and
    /// the cache is not ready until the list and the new watch succeed. None on shutdown.
    async fn relist(&self, error: StorageError) -> Option<WatchStream> {
        tracing::warn!(prefix = %self.prefix, %error, "watch cache: history lost, re-listing");
        self.progress.send_modify(|p| p.ready = false);
        let watchers = std::mem::take(&mut self.inner.write().watchers);
        for watcher in watchers.iter() {
            // A watcher that cannot take the error is closed at once; the others close after
            // delivering it, when their queue's sender (this last handle) is dropped.
            if watcher
                .input
                .try_send(WatchEvent::Error(error.clone()))
                .is_err()
            {
                watcher.stop.cancel();
            }
        }
        drop(watchers);

        let mut backoff = self.config.min_backoff;
        loop {
            let attempt = async {
                let listed = self.backend.list(&self.prefix, None, 0, None).await?;
                let stream = self.backend.watch(&self.prefix, listed.revision).await?;
                Ok::<_, StorageError>((listed, stream))
            };
            let attempt = tokio::select! {
                _ = self.shutdown.cancelled() => return None,
                attempt = attempt => attempt,
            };
            match attempt {
                Ok((listed, stream)) => {
                    self.inner
                        .write()
                        .store
                        .replace(&listed.kvs, listed.revision);
                    self.progress.send_replace(Progress {
                        revision: listed.revision,
                        ready: true,
                    });
                    return Some(stream);
                }
                Err(error) => {
                    tracing::warn!(prefix = %self.prefix, %error, "watch cache: re-list failed");
                    if !self.sleep(backoff).await {
                        return None;
                    }
                    backoff = (backoff * 2).min(self.config.max_backoff);
                }
            }
        }
    }

    /// False if shutdown came first.
    async fn sleep(&self, duration: Duration) -> bool {
        tokio::select! {
            _ = self.shutdown.cancelled() => false,
            _ = tokio::time::sleep(duration) => true,
        }
    }
}
