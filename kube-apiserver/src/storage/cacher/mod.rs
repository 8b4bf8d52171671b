//! The watch cache of one resource, as upstream's cacher (k8s.io/apiserver/pkg/storage/cacher):
//! the current objects under a prefix such as `/registry/pods/` plus a ring of their recent
//! changes, kept up to date by ONE backend watch, serving lists, gets and any number of
//! watchers.
//!
//! Objects are decoded once and shared as `Arc<Value>` by the cache, lists and every watcher.
//! Each watcher has a small queue filled by the single dispatcher and drained by its own task;
//! a watcher whose queue stays full longer than a grace is dropped, so one slow client cannot
//! hold the others back. When the backend watch breaks the cache re-watches from its revision;
//! when that history is compacted it re-lists, and every watcher is ended with an error (their
//! positions can no longer be served exactly), as upstream terminates its watchers.

mod config;
mod event;
mod reflector;
mod store;
mod watcher;

#[cfg(test)]
mod memory_backend;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use config::CacherConfig;
pub use event::{Filter, WatchEvent, WatchStart, everything};

use super::backend::{Backend, Revision, StorageError};
use store::Store;
use watcher::Watcher;

/// The watch cache of one resource prefix.
pub struct Cacher {
    backend: Arc<dyn Backend>,
    prefix: String,
    config: CacherConfig,
    inner: RwLock<Inner>,
    /// The cache's revision and readiness, for those waiting for it to catch up.
    progress: watch::Sender<Progress>,
    next_watcher: AtomicU64,
    shutdown: CancellationToken,
}

struct Inner {
    store: Store,
    /// Copied on write, so that the dispatcher takes a snapshot in O(1) in the same critical
    /// section as the change it dispatches: a watcher registered later got that change from
    /// the ring, one registered earlier gets it from the dispatcher, never both.
    watchers: Arc<Vec<Arc<Watcher>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Progress {
    revision: Revision,
    ready: bool,
}

/// How often a cache waiting to reach a revision asks the backend for progress.
const PROGRESS_REQUEST_INTERVAL: Duration = Duration::from_millis(100);

impl Cacher {
    /// Lists `prefix` from the backend, watches it from that list's revision, and keeps the
    /// cache up to date until `shutdown` is cancelled. Fails if the first list or watch fails.
    pub async fn start(
        backend: Arc<dyn Backend>,
        prefix: String,
        shutdown: CancellationToken,
    ) -> Result<Arc<Self>, StorageError> {
        Self::start_with(backend, prefix, CacherConfig::default(), shutdown).await
    }

    /// [`Cacher::start`] with other settings than upstream's.
    pub async fn start_with(
        backend: Arc<dyn Backend>,
        prefix: String,
        config: CacherConfig,
        shutdown: CancellationToken,
    ) -> Result<Arc<Self>, StorageError> {
        let listed = backend.list(&prefix, None, 0, None).await?;
        let stream = backend.watch(&prefix, listed.revision).await?;
        let mut store = Store::new(config.history_capacity);
        store.replace(&listed.kvs, listed.revision);
        let (progress, _) = watch::channel(Progress {
            revision: listed.revision,
            ready: true,
        });
        let cacher = Arc::new(Cacher {
            backend,
            prefix,
            config,
            inner: RwLock::new(Inner {
                store,
                watchers: Arc::new(Vec::new()),
            }),
            progress,
            next_watcher: AtomicU64::new(1),
            shutdown,
        });
        tokio::spawn(cacher.clone().run(stream));
        Ok(cacher)
    }

    /// The prefix this cache holds.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The revision of the last change (or list) the cache has seen.
    pub fn revision(&self) -> Revision {
        self.progress.borrow().revision
    }

    /// Whether the cache is serving: false while it re-lists and after shutdown.
    pub fn is_ready(&self) -> bool {
        self.progress.borrow().ready && !self.shutdown.is_cancelled()
    }

    /// For consistent reads: waits until the cache has caught up to `revision` (the backend's
    /// current revision, read by the caller). `FutureRevision` after the freshness timeout
    /// (`Unavailable` if the cache is not ready); the caller then reads from the backend.
    ///
    /// The cache only learns of revisions through changes under its prefix: when the newest
    /// writes are elsewhere in the key space, this waits for the timeout. Upstream asks etcd
    /// for a progress notification here; the `Backend` trait has no such call yet.
    pub async fn wait_until_fresh(&self, revision: Revision) -> Result<(), StorageError> {
        self.wait_for_revision(revision).await
    }

    /// The cached object at `key`.
    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        self.inner.read().store.get(key)
    }

    /// The cached objects under `prefix` (the cache's prefix or one below it, such as
    /// `/registry/pods/default/`) passing `filter`, in key order, and the revision they are
    /// consistent with.
    pub fn list(&self, prefix: &str, filter: &Filter) -> (Vec<Arc<Value>>, Revision) {
        let inner = self.inner.read();
        (
            inner.store.list(prefix, filter.as_ref()),
            inner.store.revision(),
        )
    }

    /// The cached objects under `prefix` passing `filter`, for callers with a borrowed filter.
    pub fn list_with(
        &self,
        prefix: &str,
        filter: &(dyn Fn(&Value) -> bool + Send + Sync),
    ) -> Vec<Arc<Value>> {
        self.inner.read().store.list(prefix, filter)
    }

    /// A watcher of the keys under `prefix` whose objects pass `filter`, from `start`, with
    /// periodic bookmarks if `bookmarks`. `After` a revision older than the history kept is
    /// `Compacted`; one newer than the cache is waited for, then `FutureRevision`. The channel
    /// closes when the watcher is dropped for being slow, at shutdown, or after an
    /// [`WatchEvent::Error`].
    pub async fn watch(
        &self,
        prefix: &str,
        start: WatchStart,
        filter: Filter,
        bookmarks: bool,
    ) -> Result<mpsc::Receiver<WatchEvent>, StorageError> {
        if !prefix.starts_with(&self.prefix) {
            return Err(StorageError::Internal(format!(
                "watch of {prefix} asked of the cache of {}",
                self.prefix
            )));
        }
        let after = match start {
            WatchStart::After(revision) => revision,
            WatchStart::InitialState { .. } => 0,
        };
        let (input_tx, input_rx) = mpsc::channel(self.config.watcher_buffer.max(1));
        let (output_tx, output_rx) = mpsc::channel(self.config.watcher_buffer.max(1));
        let stop = self.shutdown.child_token();
        let watcher = Watcher {
            id: self.next_watcher.fetch_add(1, Ordering::Relaxed),
            prefix: prefix.to_owned(),
            filter,
            bookmarks,
            input: input_tx,
            stop: stop.clone(),
            behind: AtomicBool::new(false),
        };
        let initial = loop {
            self.wait_for_revision(after).await?;
            let mut inner = self.inner.write();
            // A re-list may have begun since the wait: its watchers are being ended and the
            // store is about to be replaced, so wait for the new one.
            if !self.progress.borrow().ready {
                continue;
            }
            let store = &inner.store;
            let initial = match start {
                WatchStart::After(revision) => {
                    store.events_after(revision, prefix, &watcher.filter)?
                }
                WatchStart::InitialState { end_bookmark } => {
                    let mut events = store.initial_events(prefix, &watcher.filter);
                    if end_bookmark {
                        events.push(WatchEvent::InitialEventsEnd(store.revision()));
                    }
                    events
                }
            };
            let mut watchers = Vec::clone(&inner.watchers);
            watchers.push(Arc::new(watcher));
            inner.watchers = Arc::new(watchers);
            break initial;
        };
        watcher::spawn(initial, input_rx, output_tx, stop);
        Ok(output_rx)
    }

    /// The current objects of the whole prefix and a watch of every change after them, for
    /// in-process followers (RBAC, the CRD controller): the state is read up to the
    /// end-of-initial-events marker, so no change falls between the snapshot and the watch.
    pub async fn snapshot_and_watch(
        &self,
    ) -> Result<(Vec<Arc<Value>>, mpsc::Receiver<WatchEvent>), StorageError> {
        let mut events = self
            .watch(
                &self.prefix,
                WatchStart::InitialState { end_bookmark: true },
                everything(),
                false,
            )
            .await?;
        let mut objects = Vec::new();
        loop {
            match events.recv().await {
                Some(WatchEvent::Added(v) | WatchEvent::Modified(v)) => objects.push(v),
                Some(WatchEvent::InitialEventsEnd(_)) => return Ok((objects, events)),
                Some(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => {}
                Some(WatchEvent::Error(err)) => return Err(err),
                None => {
                    return Err(StorageError::Internal(
                        "the watch ended before its initial events".into(),
                    ));
                }
            }
        }
    }

    /// How many watchers the cache is serving.
    pub fn watcher_count(&self) -> usize {
        self.inner.read().watchers.len()
    }

    /// Waits until the cache is ready and at `revision` or past it.
    async fn wait_for_revision(&self, revision: Revision) -> Result<(), StorageError> {
        if self.shutdown.is_cancelled() {
            return Err(StorageError::Unavailable("watch cache is shut down".into()));
        }
        let mut progress = self.progress.subscribe();
        let caught_up = progress.wait_for(|p| p.ready && p.revision >= revision);
        // The cache learns of revisions only through changes under its prefix: when the newest
        // writes were elsewhere, ask the backend to confirm it has sent everything, and again
        // while waiting (etcd answers only a watch that has caught up).
        let backend = self.backend.clone();
        let ask_progress = async move {
            loop {
                if let Err(err) = backend.request_progress().await {
                    tracing::debug!(%err, "progress request failed");
                }
                tokio::time::sleep(PROGRESS_REQUEST_INTERVAL).await;
            }
        };
        let waited = tokio::time::timeout(self.config.freshness_timeout, async {
            if self.progress.borrow().revision >= revision {
                return caught_up.await.map(|_| ());
            }
            tokio::select! {
                done = caught_up => done.map(|_| ()),
                () = ask_progress => Ok(()),
            }
        })
        .await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            _ => {
                let now = *self.progress.borrow();
                if now.ready {
                    Err(StorageError::FutureRevision {
                        requested: revision,
                        current: now.revision,
                    })
                } else {
                    Err(StorageError::Unavailable(format!(
                        "watch cache of {} is not ready",
                        self.prefix
                    )))
                }
            }
        }
    }
}
