//! The revisioned key-value space every storage backend provides (shared/DESIGN.md section 1).
//!
//! One counter, the revision, orders every write in the whole key space, strictly increasing, as
//! etcd's. An object's `metadata.resourceVersion` is the revision of its last write
//! (`mod_revision`). History is kept until compacted, so reads at a past revision and watches
//! from a past revision work until then.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

/// A point in the history of the key space.
pub type Revision = i64;

/// One stored value and the revisions that created and last modified it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// The revision of the write that created the key (since its last deletion).
    pub create_revision: Revision,
    /// The revision of the last write to the key.
    pub mod_revision: Revision,
}

/// A change in the key space, as a watch delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The key was created (`prev` None) or updated (`prev` the value before), at `kv.mod_revision`.
    Put {
        kv: KeyValue,
        prev: Option<KeyValue>,
    },
    /// The key was deleted at `revision`; `prev` is the value it had.
    Delete {
        key: String,
        revision: Revision,
        prev: KeyValue,
    },
    /// Every change under the watch's prefix up to `revision` has been delivered (etcd's
    /// progress notification), sent after [`Backend::request_progress`]. It lets a watch cache
    /// know it is current even when the newest writes were to other prefixes.
    Progress { revision: Revision },
}

impl Event {
    /// The revision at which the change happened.
    pub fn revision(&self) -> Revision {
        match self {
            Event::Put { kv, .. } => kv.mod_revision,
            Event::Delete { revision, .. } | Event::Progress { revision } => *revision,
        }
    }

    /// The key that changed (empty for a progress notification).
    pub fn key(&self) -> &str {
        match self {
            Event::Put { kv, .. } => &kv.key,
            Event::Delete { key, .. } => key,
            Event::Progress { .. } => "",
        }
    }
}

/// A page of a range read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListResult {
    /// The values, in ascending key order.
    pub kvs: Vec<KeyValue>,
    /// The revision the read was served at (the snapshot every page of a paginated list shares).
    pub revision: Revision,
    /// Whether keys remain after the last one returned.
    pub more: bool,
    /// How many keys remain after this page (0 when `more` is false).
    pub remaining: i64,
}

/// What went wrong in storage. The apiserver maps these to upstream's HTTP statuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    #[error("key not found: {key}")]
    NotFound { key: String },
    #[error("key already exists: {key}")]
    AlreadyExists { key: String },
    /// A compare-and-swap lost: the key's mod_revision is not the expected one. `current` is
    /// the value now stored (None if the key is gone), so callers can retry without a read.
    #[error("conflict on {key}: expected revision {expected}")]
    Conflict {
        key: String,
        expected: Revision,
        current: Option<KeyValue>,
    },
    /// The revision asked for is older than the oldest kept (410 Gone, reason Expired upstream).
    #[error("required revision {requested} has been compacted (oldest kept: {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    /// The revision asked for is newer than the store's current one.
    #[error("revision {requested} is in the future (current: {current})")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    /// The backend cannot be reached or failed to answer (503 upstream).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Anything else the backend reported.
    #[error("storage error: {0}")]
    Internal(String),
}

/// The stream a watch delivers: events in revision order; an error ends it.
pub type WatchStream = BoxStream<'static, Result<Event, StorageError>>;

/// A revisioned key-value store. Implementations: `embedded` (redb) and `etcd`.
///
/// Every write is durable before it is acknowledged. Keys are UTF-8 paths such as
/// `/registry/pods/default/web-0`; a prefix read or watch covers every key starting with it.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The value of `key` now (`revision` None) or as it was at `revision`.
    ///
    /// For every read: a `revision` of 0 or less means "now" (etcd's reading); one below the
    /// compacted revision is `Compacted`, one above the current revision `FutureRevision`.
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<Option<KeyValue>, StorageError>;

    /// Keys starting with `prefix`, from `start` (inclusive, a key under `prefix`; the continue
    /// point of a paginated list) in ascending order, at most `limit` (0 = no limit), now
    /// (`revision` None) or as of `revision`.
    async fn list(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
        revision: Option<Revision>,
    ) -> Result<ListResult, StorageError>;

    /// How many keys start with `prefix` now.
    async fn count(&self, prefix: &str) -> Result<i64, StorageError>;

    /// Creates `key`; fails with `AlreadyExists` if it exists.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError>;

    /// Replaces `key` if its mod_revision is `expected` (compare-and-swap); `NotFound` if it
    /// does not exist, `Conflict` if it was modified since.
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError>;

    /// Deletes `key`, if `expected` is given only when its mod_revision matches. Returns the
    /// deleted value and the revision of the deletion.
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError>;

    /// Changes to keys starting with `prefix` made after revision `after` (events with a revision
    /// greater than `after`), in order, then live ones. `Compacted` if history from `after` on is
    /// no longer kept: `after + 1` below the compacted revision. With etcd a compaction racing
    /// the start can only be told on the stream, so `Compacted` may also come as its first item.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError>;

    /// Asks every open watch to send an [`Event::Progress`] once it has delivered everything up
    /// to the store's current revision. Best effort: a watch that is behind answers later.
    async fn request_progress(&self) -> Result<(), StorageError>;

    /// The store's current revision (the revision of the last write).
    async fn current_revision(&self) -> Result<Revision, StorageError>;

    /// Forgets the history before `revision`: reads and watches at older revisions fail with
    /// `Compacted` from then on. Current values are kept. `Compacted` if `revision` is not above
    /// the compacted revision already, `FutureRevision` if it is above the current one.
    async fn compact(&self, revision: Revision) -> Result<(), StorageError>;

    /// The oldest revision whose history is still kept.
    async fn compacted_revision(&self) -> Result<Revision, StorageError>;
}
