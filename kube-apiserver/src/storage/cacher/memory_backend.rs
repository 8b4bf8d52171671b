//! A small in-memory `Backend` for the cacher's tests: a `BTreeMap`, a revision counter, the
//! history of events (for watches from the past) and a channel per live watch. It counts watch
//! calls and can break or refuse watches, to exercise the cacher's recovery.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::storage::backend::{
    Backend, Event, KeyValue, ListResult, Revision, StorageError, WatchStream,
};

type LiveWatch = (String, mpsc::UnboundedSender<Result<Event, StorageError>>);

#[derive(Default)]
struct Mem {
    kvs: BTreeMap<String, KeyValue>,
    revision: Revision,
    history: Vec<Event>,
    compacted: Revision,
    live: Vec<LiveWatch>,
    refuse_watches: bool,
}

impl Mem {
    fn commit(&mut self, event: Event) {
        self.live.retain(|(prefix, tx)| {
            !event.key().starts_with(prefix.as_str()) || tx.send(Ok(event.clone())).is_ok()
        });
        self.history.push(event);
    }
}

#[derive(Default)]
pub(super) struct MemoryBackend {
    mem: Mutex<Mem>,
    watch_calls: AtomicUsize,
}

impl MemoryBackend {
    /// How many times `watch` was called (successful or not).
    pub fn watch_calls(&self) -> usize {
        self.watch_calls.load(Ordering::SeqCst)
    }

    /// Ends every live watch with an error, as a dropped connection to etcd would.
    pub fn break_watches(&self) {
        let mut mem = self.mem.lock();
        for (_, tx) in mem.live.drain(..) {
            let _ = tx.send(Err(StorageError::Unavailable("watch broken".into())));
        }
    }

    /// Makes `watch` fail with `Unavailable` (true) or work again (false).
    pub fn refuse_watches(&self, refuse: bool) {
        self.mem.lock().refuse_watches = refuse;
    }

    /// How many watches are open (their stream not dropped).
    pub fn live_watches(&self) -> usize {
        let mut mem = self.mem.lock();
        mem.live.retain(|(_, tx)| !tx.is_closed());
        mem.live.len()
    }
}

fn stream_of(
    replay: Vec<Event>,
    rx: mpsc::UnboundedReceiver<Result<Event, StorageError>>,
) -> WatchStream {
    let live = futures::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
        Some((item, rx))
    });
    Box::pin(futures::stream::iter(replay.into_iter().map(Ok)).chain(live))
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<Option<KeyValue>, StorageError> {
        if revision.is_some() {
            return Err(StorageError::Internal(
                "the test backend reads the present only".into(),
            ));
        }
        Ok(self.mem.lock().kvs.get(key).cloned())
    }

    async fn list(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
        revision: Option<Revision>,
    ) -> Result<ListResult, StorageError> {
        if revision.is_some() || start.is_some() || limit != 0 {
            return Err(StorageError::Internal(
                "the test backend lists the present, unpaginated, only".into(),
            ));
        }
        let mem = self.mem.lock();
        let kvs = mem
            .kvs
            .range(prefix.to_owned()..)
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(_, kv)| kv.clone())
            .collect();
        Ok(ListResult {
            kvs,
            revision: mem.revision,
            more: false,
            remaining: 0,
        })
    }

    async fn count(&self, prefix: &str) -> Result<i64, StorageError> {
        let mem = self.mem.lock();
        let n = mem.kvs.keys().filter(|k| k.starts_with(prefix)).count();
        Ok(n as i64)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        let mut mem = self.mem.lock();
        if mem.kvs.contains_key(key) {
            return Err(StorageError::AlreadyExists { key: key.into() });
        }
        mem.revision += 1;
        let kv = KeyValue {
            key: key.into(),
            value,
            create_revision: mem.revision,
            mod_revision: mem.revision,
        };
        mem.kvs.insert(key.into(), kv.clone());
        mem.commit(Event::Put {
            kv: kv.clone(),
            prev: None,
        });
        Ok(kv)
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let mut mem = self.mem.lock();
        let Some(prev) = mem.kvs.get(key).cloned() else {
            return Err(StorageError::NotFound { key: key.into() });
        };
        if prev.mod_revision != expected {
            return Err(StorageError::Conflict {
                key: key.into(),
                expected,
                current: Some(prev),
            });
        }
        mem.revision += 1;
        let kv = KeyValue {
            key: key.into(),
            value,
            create_revision: prev.create_revision,
            mod_revision: mem.revision,
        };
        mem.kvs.insert(key.into(), kv.clone());
        mem.commit(Event::Put {
            kv: kv.clone(),
            prev: Some(prev),
        });
        Ok(kv)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let mut mem = self.mem.lock();
        let Some(prev) = mem.kvs.get(key).cloned() else {
            return Err(StorageError::NotFound { key: key.into() });
        };
        if let Some(expected) = expected
            && prev.mod_revision != expected
        {
            return Err(StorageError::Conflict {
                key: key.into(),
                expected,
                current: Some(prev),
            });
        }
        mem.revision += 1;
        let revision = mem.revision;
        mem.kvs.remove(key);
        mem.commit(Event::Delete {
            key: key.into(),
            revision,
            prev: prev.clone(),
        });
        Ok((prev, revision))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.watch_calls.fetch_add(1, Ordering::SeqCst);
        let mut mem = self.mem.lock();
        if mem.refuse_watches {
            return Err(StorageError::Unavailable("watches refused".into()));
        }
        if after + 1 < mem.compacted {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: mem.compacted,
            });
        }
        let replay = mem
            .history
            .iter()
            .filter(|e| e.revision() > after && e.key().starts_with(prefix))
            .cloned()
            .collect();
        let (tx, rx) = mpsc::unbounded_channel();
        mem.live.push((prefix.into(), tx));
        Ok(stream_of(replay, rx))
    }

    async fn request_progress(&self) -> Result<(), StorageError> {
        let mut mem = self.mem.lock();
        let revision = mem.revision;
        mem.live
            .retain(|(_, tx)| tx.send(Ok(Event::Progress { revision })).is_ok());
        Ok(())
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.mem.lock().revision)
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let mut mem = self.mem.lock();
        mem.history.retain(|e| e.revision() >= revision);
        mem.compacted = mem.compacted.max(revision);
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.mem.lock().compacted)
    }
}
