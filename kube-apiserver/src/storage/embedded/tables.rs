//! The redb tables the embedded backend keeps, and the conversions between their rows and the
//! backend's types.
//!
//! - `meta`: the current revision and the compacted revision.
//! - `latest`: key -> (create_revision, mod_revision, value), the current value of every live key,
//!   so current reads never scan history.
//! - `history`: (key, mod_revision) -> (create_revision, value), every version of every key kept
//!   since the last compaction; a deletion is a tombstone row with create_revision 0 (real
//!   revisions start at 2, as etcd's, so 0 never names a real write).
//! - `changes`: revision -> key, the log a watch replays from, in revision order.

use redb::TableDefinition;

use crate::storage::backend::{KeyValue, Revision, StorageError};

/// Counters, by name.
pub(super) const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
/// The current value of every live key.
pub(super) const LATEST: TableDefinition<&str, (i64, i64, &[u8])> = TableDefinition::new("latest");
/// Every kept version of every key.
pub(super) const HISTORY: TableDefinition<(&str, i64), (i64, &[u8])> =
    TableDefinition::new("history");
/// Which key each revision wrote.
pub(super) const CHANGES: TableDefinition<i64, &str> = TableDefinition::new("changes");

/// `meta` row: the revision of the last write.
pub(super) const META_REVISION: &str = "revision";
/// `meta` row: the oldest revision whose history is kept.
pub(super) const META_COMPACTED: &str = "compacted";

/// The revision of an empty store. As etcd, the store starts at 1 and the first write gets 2, so
/// no object ever has resourceVersion "0" (which means "any" to Kubernetes clients).
pub(super) const INITIAL_REVISION: Revision = 1;

/// The create_revision a tombstone carries in `history`.
pub(super) const TOMBSTONE: Revision = 0;

/// Wraps any redb failure: the database file is local, so a failure is not a transient outage.
pub(super) fn db_err(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(format!("embedded store: {e}"))
}

/// Builds a `KeyValue` from a `latest` row.
pub(super) fn kv_from_latest(key: &str, row: (i64, i64, &[u8])) -> KeyValue {
    let (create_revision, mod_revision, value) = row;
    KeyValue {
        key: key.to_owned(),
        value: bytes::Bytes::copy_from_slice(value),
        create_revision,
        mod_revision,
    }
}

/// Builds a `KeyValue` from a `history` row; None for a tombstone.
pub(super) fn kv_from_history(key: &str, revision: i64, row: (i64, &[u8])) -> Option<KeyValue> {
    let (create_revision, value) = row;
    (create_revision != TOMBSTONE).then(|| KeyValue {
        key: key.to_owned(),
        value: bytes::Bytes::copy_from_slice(value),
        create_revision,
        mod_revision: revision,
    })
}
