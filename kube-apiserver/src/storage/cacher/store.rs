//! The cache's data: the current objects of the resource and a ring of its recent changes.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use super::event::{CacheEvent, Filter, WatchEvent};
use crate::storage::backend::{Event, KeyValue, Revision, StorageError};
use crate::storage::codec::decode;

/// Current objects by key, the revision they are consistent with, and the last `capacity`
/// changes. A watch can start after any revision from `oldest` on: every change after
/// `oldest` is still in the ring.
pub(super) struct Store {
    objects: BTreeMap<String, Arc<Value>>,
    revision: Revision,
    ring: VecDeque<Arc<CacheEvent>>,
    capacity: usize,
    oldest: Revision,
}

impl Store {
    pub fn new(capacity: usize) -> Self {
        Store {
            objects: BTreeMap::new(),
            revision: 0,
            ring: VecDeque::new(),
            capacity: capacity.max(1),
            oldest: 0,
        }
    }

    /// The revision of the last change (or list) the cache has seen.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Starts over from a list of the prefix at `revision`: the history before it is gone, so
    /// watches can only start from `revision` on.
    pub fn replace(&mut self, kvs: &[KeyValue], revision: Revision) {
        self.objects.clear();
        for kv in kvs {
            match decode(kv) {
                Ok(object) => {
                    self.objects.insert(kv.key.clone(), Arc::new(object));
                }
                // One unreadable value must not stop the whole resource from being served.
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "watch cache: skipping undecodable object")
                }
            }
        }
        self.ring.clear();
        self.revision = revision;
        self.oldest = revision;
    }

    /// Applies a change from the backend watch; `decoded` is the new object of a put, decoded
    /// by the caller before taking the lock. None when there is nothing to tell watchers: a
    /// change the cache has already seen, or a value that cannot be decoded (logged; the
    /// revision still advances).
    pub fn apply(
        &mut self,
        event: &Event,
        decoded: Option<Result<Value, StorageError>>,
    ) -> Option<Arc<CacheEvent>> {
        let revision = event.revision();
        if revision <= self.revision {
            return None;
        }
        self.revision = revision;
        let change = match event {
            Event::Put { kv, .. } => match decoded.unwrap_or_else(|| decode(kv)) {
                Ok(object) => {
                    let object = Arc::new(object);
                    let prev = self.objects.insert(kv.key.clone(), object.clone());
                    CacheEvent::new(kv.key.clone(), revision, Some(object), prev)
                }
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "watch cache: skipping undecodable change");
                    return None;
                }
            },
            // Nothing changed under the prefix up to here: only the revision moves.
            Event::Progress { .. } => return None,
            Event::Delete { key, prev, .. } => {
                let prev = match self.objects.remove(key) {
                    Some(prev) => prev,
                    // Not cached (it could not be decoded when written): use the backend's copy.
                    None => match decode(prev) {
                        Ok(object) => Arc::new(object),
                        Err(_) => return None,
                    },
                };
                CacheEvent::new(key.clone(), revision, None, Some(prev))
            }
        };
        let change = Arc::new(change);
        if self.ring.len() == self.capacity
            && let Some(evicted) = self.ring.pop_front()
        {
            self.oldest = evicted.revision;
        }
        self.ring.push_back(change.clone());
        Some(change)
    }

    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        self.objects.get(key).cloned()
    }

    /// The objects under `prefix` passing `filter`, in key order.
    pub fn list(
        &self,
        prefix: &str,
        filter: &(dyn Fn(&Value) -> bool + Send + Sync),
    ) -> Vec<Arc<Value>> {
        self.objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(_, object)| filter(object))
            .map(|(_, object)| object.clone())
            .collect()
    }

    /// What a watcher of `prefix` with `filter` starting after `after` must be sent first:
    /// the changes after it still in the ring. `Compacted` when some of them are gone.
    pub fn events_after(
        &self,
        after: Revision,
        prefix: &str,
        filter: &Filter,
    ) -> Result<Vec<WatchEvent>, StorageError> {
        if after < self.oldest {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: self.oldest,
            });
        }
        let first = self.ring.partition_point(|change| change.revision <= after);
        Ok(self
            .ring
            .range(first..)
            .filter_map(|change| change.for_watcher(prefix, filter))
            .collect())
    }

    /// The synthetic `Added` events of a watch from the current state.
    pub fn initial_events(&self, prefix: &str, filter: &Filter) -> Vec<WatchEvent> {
        self.list(prefix, filter.as_ref())
            .into_iter()
            .map(WatchEvent::Added)
            .collect()
    }
}
