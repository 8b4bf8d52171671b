//! What a watcher of the cache receives, and how one change in the key space becomes (or does
//! not become) an event for a given watcher.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::storage::backend::{Revision, StorageError};
use crate::storage::codec::set_resource_version;

/// Which objects a watcher or a list wants (label and field selectors, compiled by the caller).
pub type Filter = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// A filter that keeps everything.
pub fn everything() -> Filter {
    Arc::new(|_| true)
}

/// One event on a watch served by the cache. Objects are shared with the cache, never copied.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(Arc<Value>),
    Modified(Arc<Value>),
    /// The last state of the object, its resourceVersion set to the revision of the deletion
    /// (or of the update after which it stopped matching the watcher's filter).
    Deleted(Arc<Value>),
    /// Every event up to this revision has been sent: a client may resume from here.
    Bookmark(Revision),
    /// The end of the synthetic events of [`WatchStart::InitialState`] when `end_bookmark` was
    /// asked for (upstream's bookmark annotated `k8s.io/initial-events-end`).
    InitialEventsEnd(Revision),
    /// The watch cannot go on (its position was lost when the cache re-listed); the channel
    /// closes after it. The REST layer sends it as an `ERROR` event (410 for `Compacted`).
    Error(StorageError),
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Every change with a revision greater than this one, then live ones.
    After(Revision),
    /// An `Added` for every current object, then live changes; with `end_bookmark`
    /// (`sendInitialEvents=true`) an [`WatchEvent::InitialEventsEnd`] in between.
    InitialState { end_bookmark: bool },
}

/// One change to an object under the cache's prefix, decoded once and shared by every watcher.
#[derive(Debug)]
pub(super) struct CacheEvent {
    pub key: String,
    pub revision: Revision,
    /// The object after the change; None for a deletion.
    pub object: Option<Arc<Value>>,
    /// The object before the change, as the cache held it; None for a creation.
    pub prev: Option<Arc<Value>>,
    /// `prev` with the resourceVersion of this change: made on first need only, since most
    /// updates never turn into a `Deleted` for anyone.
    prev_at_revision: OnceLock<Arc<Value>>,
}

impl CacheEvent {
    pub fn new(
        key: String,
        revision: Revision,
        object: Option<Arc<Value>>,
        prev: Option<Arc<Value>>,
    ) -> Self {
        CacheEvent {
            key,
            revision,
            object,
            prev,
            prev_at_revision: OnceLock::new(),
        }
    }

    fn prev_at_revision(&self) -> Option<Arc<Value>> {
        let prev = self.prev.as_ref()?;
        let stamped = self.prev_at_revision.get_or_init(|| {
            let mut object = Value::clone(prev);
            set_resource_version(&mut object, self.revision);
            Arc::new(object)
        });
        Some(stamped.clone())
    }

    /// What a watcher of `prefix` with `filter` sees of this change, by upstream's cacheWatcher
    /// rules: the filter is applied to the old and the new state; an object entering the filter
    /// is `Added`, staying in it `Modified`, leaving it (or being deleted) `Deleted` carrying the
    /// old state stamped with this change's revision.
    pub fn for_watcher(&self, prefix: &str, filter: &Filter) -> Option<WatchEvent> {
        if !self.key.starts_with(prefix) {
            return None;
        }
        let new_passes = self.object.as_ref().filter(|object| filter(object));
        let old_passes = self.prev.as_ref().is_some_and(|prev| filter(prev));
        match (new_passes, old_passes) {
            (Some(object), false) => Some(WatchEvent::Added(object.clone())),
            (Some(object), true) => Some(WatchEvent::Modified(object.clone())),
            (None, true) => self.prev_at_revision().map(WatchEvent::Deleted),
            (None, false) => None,
        }
    }
}
