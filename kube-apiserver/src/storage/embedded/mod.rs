//! The embedded backend: a single-node revisioned key space on local disk, on redb.
//!
//! Same semantics as etcd's MVCC store: one revision counter (an empty store is at revision 1,
//! the first write gets 2), every version of every key kept until compacted, reads and watches
//! at any kept revision. A read at revision 0 or less reads the latest state, as etcd does.
//!
//! redb is synchronous, so every transaction runs on tokio's blocking pool. Writers are
//! serialized by one mutex held across the transaction and the broadcast of its events, so live
//! events leave in revision order. A write is acknowledged only after a transaction holding it
//! committed with `Durability::Immediate` (fsync).
//!
//! Group commit: writes queue up, and one blocking task at a time (started by the write that
//! finds none running) applies every queued write in one transaction, each at its own
//! revision, and commits once, until the queue is empty. Under
//! concurrent writers a commit (and its fsync) serves many writes instead of one; a lone write
//! commits alone, as before. A write that fails its own check (a conflict, an existing key)
//! changes nothing and fails alone; a failure of the database itself aborts the transaction
//! and fails every write in it.
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

use tokio::sync::oneshot;

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
    queue: Mutex<Queue>,
    events: broadcast::Sender<Event>,
}

/// Writes waiting for the next transaction, in arrival order.
#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// A [`Committer`] is running or about to: it will take what is queued.
    committing: bool,
}

/// The blocking task that commits queued writes. Started only when none runs, so concurrent
/// writes do not each wake a blocking thread to find the queue already taken.
struct Committer {
    inner: Arc<Inner>,
    /// Still responsible for the queue: a committer dropped unfinished (it panicked, or its
    /// task never ran because the runtime shut down) fails what is queued rather than leave
    /// it unanswered with no committer to come.
    armed: bool,
}

impl Committer {
    fn run(mut self) {
        let mut batch = match self.take_batch() {
            Some(batch) => batch,
            None => return,
        };
        loop {
            let replies = {
                let _writer = lock(&self.inner.writer);
                self.inner.commit_batch(batch)
            };
            let Some(next) = self.take_batch() else {
                // The store is released before the last writers hear back, so a caller that
                // drops the backend after its write can reopen the same directory at once.
                drop(self);
                for reply in replies {
                    reply();
                }
                return;
            };
            for reply in replies {
                reply();
            }
            batch = next;
        }
    }

    /// The next writes to commit; None (and the committer done) when nothing is queued.
    fn take_batch(&mut self) -> Option<Vec<Job>> {
        let mut queue = lock(&self.inner.queue);
        if queue.jobs.is_empty() {
            queue.committing = false;
            self.armed = false;
            return None;
        }
        let take = queue.jobs.len().min(MAX_BATCH);
        Some(queue.jobs.drain(..take).collect())
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        if self.armed {
            let mut queue = lock(&self.inner.queue);
            queue.committing = false;
            // Dropping a job drops its reply channel: its writer gets an error.
            queue.jobs.clear();
        }
    }
}

/// The most writes one transaction takes, so a commit's latency stays bounded under a flood.
const MAX_BATCH: usize = 256;

/// One queued write: run with the batch's tables (or the error that prevented the batch), it
/// stages its outcome.
type Job = Box<dyn FnOnce(Result<&mut Tables<'_>, &StorageError>) -> Staged + Send>;

/// A write applied to the batch's transaction, waiting for the commit.
struct Staged {
    event: Option<Event>,
    /// A failure of the database itself (not of the write's own checks): the transaction
    /// cannot be committed.
    fatal: Option<StorageError>,
    /// Answers the writer once the batch's fate is known: Ok when its transaction committed.
    reply: Box<dyn FnOnce(Result<(), StorageError>) + Send>,
}

/// Whether a write's error leaves the transaction as it was: these are all found by a write's
/// checks before it changes anything.
fn fails_alone(err: &StorageError) -> bool {
    matches!(
        err,
        StorageError::NotFound { .. }
            | StorageError::AlreadyExists { .. }
            | StorageError::Conflict { .. }
            | StorageError::Compacted { .. }
            | StorageError::FutureRevision { .. }
    )
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
                queue: Mutex::new(Queue::default()),
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

    /// Queues a write for the next transaction, starts a [`Committer`] if none runs, and
    /// answers once the write is durable (or failed); its event is published at the commit.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Tables<'_>) -> Result<(T, Option<Event>), StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |tables| match tables.map(f) {
            Ok(Ok((out, event))) => Staged {
                event,
                fatal: None,
                reply: Box::new(move |committed| {
                    let _ = tx.send(committed.map(|()| out));
                }),
            },
            Ok(Err(err)) => Staged {
                event: None,
                fatal: (!fails_alone(&err)).then(|| err.clone()),
                reply: Box::new(move |_| {
                    let _ = tx.send(Err(err));
                }),
            },
            Err(batch_err) => {
                let _ = tx.send(Err(batch_err.clone()));
                Staged {
                    event: None,
                    fatal: None,
                    reply: Box::new(|_| {}),
                }
            }
        });
        let start = {
            let mut queue = lock(&self.inner.queue);
            queue.jobs.push(job);
            !std::mem::replace(&mut queue.committing, true)
        };
        if start {
            let committer = Committer {
                inner: self.inner.clone(),
                armed: true,
            };
            // Not awaited: the reply comes through `rx`, from whichever committer takes the
            // write.
            drop(tokio::task::spawn_blocking(move || committer.run()));
        }
        rx.await.unwrap_or_else(|_| {
            Err(StorageError::Internal(
                "embedded store: a write was dropped unanswered".into(),
            ))
        })
    }
}

/// Locks a mutex; the ones here guard nothing a panic could leave half-changed.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    /// Applies `batch` in one transaction and publishes its events once it committed; returns
    /// the answers to its writers, which the caller sends.
    fn commit_batch(&self, batch: Vec<Job>) -> Vec<Box<dyn FnOnce() + Send>> {
        let txn = match self.db.begin_write().map_err(db_err) {
            Ok(txn) => txn,
            Err(err) => {
                for job in batch {
                    job(Err(&err));
                }
                return Vec::new();
            }
        };
        let mut staged = Vec::with_capacity(batch.len());
        let mut fatal = None;
        {
            let mut tables = Tables::open(&txn);
            let mut jobs = batch.into_iter();
            for job in jobs.by_ref() {
                let tables = match &mut tables {
                    Ok(tables) => Ok(tables),
                    Err(err) => Err(&*err),
                };
                let done = job(tables);
                let failed = done.fatal.clone();
                staged.push(done);
                if failed.is_some() {
                    fatal = failed;
                    break;
                }
            }
            let prevented = match (&tables, &fatal) {
                (Err(err), _) | (_, Some(err)) => Some(err.clone()),
                _ => None,
            };
            if let Some(err) = prevented {
                for job in jobs {
                    job(Err(&err));
                }
                if fatal.is_none() {
                    fatal = Some(err);
                }
            }
        }
        let outcome = match fatal {
            Some(err) => {
                let _ = txn.abort();
                Err(err)
            }
            None => txn.commit().map_err(db_err),
        };
        let mut replies: Vec<Box<dyn FnOnce() + Send>> = Vec::with_capacity(staged.len());
        for done in staged {
            if outcome.is_ok()
                && let Some(event) = done.event
            {
                // No receivers is not an error: nobody is watching.
                let _ = self.events.send(event);
            }
            let outcome = outcome.clone();
            let reply = done.reply;
            replies.push(Box::new(move || reply(outcome)));
        }
        replies
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
            let _writer = lock(&inner.writer);
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
