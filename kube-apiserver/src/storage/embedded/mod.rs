//! The embedded backend: a single-node revisioned key space on local disk, on redb.
//!
//! Same semantics as etcd's MVCC store: one revision counter (an empty store is at revision 1,
//! the first write gets 2), every version of every key kept until compacted, reads and watches
//! at any kept revision. A read at revision 0 or less reads the latest state, as etcd does.
//!
//! redb is synchronous, so every transaction runs on tokio's blocking pool. Writers are
//! serialized by one mutex held across the transaction and the broadcast of its event, so live
//! events leave in revision order. A write is acknowledged only after its transaction committed
//! with `Durability::Immediate` (fsync).
//!
//! Watches replay history from the `changes` table, then follow a broadcast channel of live
//! events. A watcher that falls more than the channel's capacity behind gets
//! `Unavailable("watcher too slow")` and its stream ends; writers never wait for watchers.

mod read;
mod tables;
mod watch;
mod write;

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use redb::Database;
use tokio::sync::broadcast;

use self::read::Snapshot;
use self::tables::db_err;
use self::write::{Tables, in_write_txn};
use crate::storage::backend::{
    Backend, Event, KeyValue, ListResult, Revision, StorageError, WatchStream,
};

/// The file the store lives in, inside the directory given to [`EmbeddedBackend::open`].
pub const DB_FILE: &str = "kv.redb";

/// How many live events a watcher may fall behind before its watch is ended.
pub const DEFAULT_WATCH_BUFFER: usize = 4096;

/// The embedded backend. Cheap to clone; clones share the database.
#[derive(Clone)]
pub struct EmbeddedBackend {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    /// One writer at a time, across commit and broadcast (see the module comment).
    writer: Mutex<()>,
    events: broadcast::Sender<Event>,
}

impl EmbeddedBackend {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StorageError> {
        Self::open_with_watch_buffer(dir, DEFAULT_WATCH_BUFFER)
    }

    /// Opens the store with a given watch buffer (see [`DEFAULT_WATCH_BUFFER`]).
    pub fn open_with_watch_buffer(dir: &Path, watch_buffer: usize) -> Result<Self, StorageError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StorageError::Internal(format!("embedded store: creating {}: {e}", dir.display()))
        })?;
        let db = Database::create(dir.join(DB_FILE)).map_err(db_err)?;
        in_write_txn(&db, |t| t.initialize())?;
        let (events, _) = broadcast::channel(watch_buffer.max(1));
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                writer: Mutex::new(()),
                events,
            }),
        })
    }

    /// Runs a read on a fresh snapshot, off the async threads.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Snapshot) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&Snapshot::open(&inner.db)?))
            .await
            .map_err(join_err)?
    }

    /// Runs a write transaction, then publishes its event, off the async threads.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Tables<'_>) -> Result<(T, Option<Event>), StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            // The mutex guards no data, so a poisoned one is still a valid lock.
            let _writer = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
            let (out, event) = in_write_txn(&inner.db, f)?;
            if let Some(event) = event {
                // No receivers is not an error: nobody is watching.
                let _ = inner.events.send(event);
            }
            Ok(out)
        })
        .await
        .map_err(join_err)?
    }
}

fn join_err(e: tokio::task::JoinError) -> StorageError {
    StorageError::Internal(format!("embedded store: task failed: {e}"))
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<Option<KeyValue>, StorageError> {
        let key = key.to_owned();
        self.read(move |s| s.get(&key, revision)).await
    }

    async fn list(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
        revision: Option<Revision>,
    ) -> Result<ListResult, StorageError> {
        let prefix = prefix.to_owned();
        let start = start.map(str::to_owned);
        self.read(move |s| s.list(&prefix, start.as_deref(), limit, revision))
            .await
    }

    async fn count(&self, prefix: &str) -> Result<i64, StorageError> {
        let prefix = prefix.to_owned();
        self.read(move |s| s.count(&prefix)).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        let key = key.to_owned();
        self.write(move |t| {
            let (kv, event) = t.create(&key, &value)?;
            Ok((kv, Some(event)))
        })
        .await
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let key = key.to_owned();
        self.write(move |t| {
            let (kv, event) = t.update(&key, &value, expected)?;
            Ok((kv, Some(event)))
        })
        .await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let key = key.to_owned();
        self.write(move |t| {
            let (out, event) = t.delete(&key, expected)?;
            Ok((out, Some(event)))
        })
        .await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        // Subscribe before reading the snapshot: every event committed after the snapshot is
        // then sure to arrive live, and live ones the snapshot already holds are dropped.
        let live = self.inner.events.subscribe();
        let replay_prefix = prefix.to_owned();
        let (replay, snapshot_revision) = self
            .read(move |s| Ok((s.events_after(&replay_prefix, after)?, s.revision)))
            .await?;
        Ok(watch::stream(
            prefix.to_owned(),
            replay,
            live,
            snapshot_revision.max(after),
        ))
    }

    async fn request_progress(&self) -> Result<(), StorageError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            // Under the writer lock, the marker follows every committed write's event on the
            // broadcast, so a watch that forwards it has delivered everything before it.
            let _writer = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
            let revision = Snapshot::open(&inner.db)?.revision;
            let _ = inner.events.send(Event::Progress { revision });
            Ok(())
        })
        .await
        .map_err(join_err)?
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.read(|s| Ok(s.revision)).await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.write(move |t| Ok((t.compact(revision)?, None))).await
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.read(|s| Ok(s.compacted)).await
    }
}
