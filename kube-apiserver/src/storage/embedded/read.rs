//! Reads on one redb read transaction, a consistent snapshot of the key space.

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable};

use super::tables::{
    CHANGES, HISTORY, INITIAL_REVISION, LATEST, META, META_COMPACTED, META_REVISION, db_err,
    kv_from_history, kv_from_latest,
};
use crate::storage::backend::{Event, KeyValue, ListResult, Revision, StorageError};

/// A snapshot of the store: every read through it sees the same revision.
pub(super) struct Snapshot {
    txn: ReadTransaction,
    /// The revision of the last write the snapshot contains.
    pub(super) revision: Revision,
    /// The oldest revision whose history the snapshot keeps.
    pub(super) compacted: Revision,
}

/// Where a read is served from once its revision has been checked.
enum At {
    /// The `latest` table.
    Latest,
    /// `history` as of this past revision.
    Past(Revision),
}

impl Snapshot {
    /// Opens a snapshot of the store's current state.
    pub(super) fn open(db: &Database) -> Result<Self, StorageError> {
        let txn = db.begin_read().map_err(db_err)?;
        let (revision, compacted) = {
            let meta = txn.open_table(META).map_err(db_err)?;
            (
                read_counter(&meta, META_REVISION)?.unwrap_or(INITIAL_REVISION),
                read_counter(&meta, META_COMPACTED)?.unwrap_or(0),
            )
        };
        Ok(Self {
            txn,
            revision,
            compacted,
        })
    }

    /// Checks a requested revision against the snapshot. A revision of 0 or less means "latest",
    /// as etcd reads it, so both backends agree on it.
    fn at(&self, requested: Option<Revision>) -> Result<At, StorageError> {
        match requested {
            None => Ok(At::Latest),
            Some(r) if r <= 0 || r == self.revision => Ok(At::Latest),
            Some(r) if r > self.revision => Err(StorageError::FutureRevision {
                requested: r,
                current: self.revision,
            }),
            Some(r) if r < self.compacted => Err(StorageError::Compacted {
                requested: r,
                compacted: self.compacted,
            }),
            Some(r) => Ok(At::Past(r)),
        }
    }

    /// The value of `key` now or at a past revision.
    pub(super) fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<Option<KeyValue>, StorageError> {
        match self.at(revision)? {
            At::Latest => {
                let latest = self.txn.open_table(LATEST).map_err(db_err)?;
                let row = latest.get(key).map_err(db_err)?;
                Ok(row.map(|row| kv_from_latest(key, row.value())))
            }
            At::Past(rev) => {
                let history = self.txn.open_table(HISTORY).map_err(db_err)?;
                version_at(&history, key, rev)
            }
        }
    }

    /// A page of the keys under `prefix`, now or at a past revision.
    pub(super) fn list(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
        revision: Option<Revision>,
    ) -> Result<ListResult, StorageError> {
        let at = self.at(revision)?;
        // A continue key before the prefix would read keys outside it.
        let from = match start {
            Some(s) if s > prefix => s,
            _ => prefix,
        };
        let mut page = Page::new(limit);
        match at {
            At::Latest => {
                let latest = self.txn.open_table(LATEST).map_err(db_err)?;
                for entry in latest.range(from..).map_err(db_err)? {
                    let (k, v) = entry.map_err(db_err)?;
                    let key = k.value();
                    if !key.starts_with(prefix) {
                        break;
                    }
                    page.offer(|| kv_from_latest(key, v.value()));
                }
            }
            At::Past(rev) => {
                let history = self.txn.open_table(HISTORY).map_err(db_err)?;
                // Versions come grouped by key in revision order: the last one at or before
                // `rev` in each group is the key's value then (None if deleted or not yet born).
                let mut group: Option<(String, Option<KeyValue>)> = None;
                for entry in history
                    .range::<(&str, i64)>((from, i64::MIN)..)
                    .map_err(db_err)?
                {
                    let (k, v) = entry.map_err(db_err)?;
                    let (key, version) = k.value();
                    if !key.starts_with(prefix) {
                        break;
                    }
                    if group.as_ref().is_none_or(|(g, _)| g != key) {
                        if let Some((_, Some(kv))) = group.take() {
                            page.offer(|| kv);
                        }
                        group = Some((key.to_owned(), None));
                    }
                    if version <= rev
                        && let Some((_, value)) = group.as_mut()
                    {
                        *value = kv_from_history(key, version, v.value());
                    }
                }
                if let Some((_, Some(kv))) = group {
                    page.offer(|| kv);
                }
            }
        }
        let revision = match at {
            At::Latest => self.revision,
            At::Past(rev) => rev,
        };
        Ok(page.finish(revision))
    }

    /// How many live keys start with `prefix`.
    pub(super) fn count(&self, prefix: &str) -> Result<i64, StorageError> {
        let latest = self.txn.open_table(LATEST).map_err(db_err)?;
        let mut n = 0;
        for entry in latest.range(prefix..).map_err(db_err)? {
            let (k, _) = entry.map_err(db_err)?;
            if !k.value().starts_with(prefix) {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// The events under `prefix` after revision `after`, up to the snapshot's revision, with
    /// the values they replaced. `Compacted` if the history they need is gone.
    pub(super) fn events_after(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<Vec<Event>, StorageError> {
        // The event at the compacted revision itself is still replayable (its row and the
        // version before it are kept), as etcd serves a watch starting at its compacted revision.
        if after < self.compacted - 1 {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: self.compacted,
            });
        }
        let changes = self.txn.open_table(CHANGES).map_err(db_err)?;
        let history = self.txn.open_table(HISTORY).map_err(db_err)?;
        let mut events = Vec::new();
        if after >= self.revision {
            return Ok(events);
        }
        for entry in changes
            .range(after.saturating_add(1)..=self.revision)
            .map_err(db_err)?
        {
            let (r, k) = entry.map_err(db_err)?;
            let (rev, key) = (r.value(), k.value());
            if !key.starts_with(prefix) {
                continue;
            }
            let row = history
                .get((key, rev))
                .map_err(db_err)?
                .ok_or_else(|| missing(key, rev))?;
            let prev = version_at(&history, key, rev - 1)?;
            events.push(match kv_from_history(key, rev, row.value()) {
                Some(kv) => Event::Put { kv, prev },
                None => Event::Delete {
                    key: key.to_owned(),
                    revision: rev,
                    prev: prev.ok_or_else(|| missing(key, rev - 1))?,
                },
            });
        }
        Ok(events)
    }
}

/// Reads a `meta` counter.
pub(super) fn read_counter(
    meta: &impl ReadableTable<&'static str, i64>,
    name: &str,
) -> Result<Option<i64>, StorageError> {
    Ok(meta.get(name).map_err(db_err)?.map(|v| v.value()))
}

/// The value `key` had at revision `rev` (None if it did not exist then).
pub(super) fn version_at(
    history: &impl ReadableTable<(&'static str, i64), (i64, &'static [u8])>,
    key: &str,
    rev: Revision,
) -> Result<Option<KeyValue>, StorageError> {
    let last = history
        .range::<(&str, i64)>((key, i64::MIN)..=(key, rev))
        .map_err(db_err)?
        .next_back();
    match last {
        None => Ok(None),
        Some(entry) => {
            let (k, v) = entry.map_err(db_err)?;
            Ok(kv_from_history(key, k.value().1, v.value()))
        }
    }
}

fn missing(key: &str, rev: Revision) -> StorageError {
    StorageError::Internal(format!(
        "embedded store: history of {key} at revision {rev} is missing"
    ))
}

/// Collects the page of a list and counts what does not fit.
struct Page {
    limit: usize,
    kvs: Vec<KeyValue>,
    remaining: i64,
}

impl Page {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            kvs: Vec::new(),
            remaining: 0,
        }
    }

    /// Takes the value if the page has room, else counts it; the value is only built if taken.
    fn offer(&mut self, kv: impl FnOnce() -> KeyValue) {
        if self.limit == 0 || self.kvs.len() < self.limit {
            self.kvs.push(kv());
        } else {
            self.remaining += 1;
        }
    }

    fn finish(self, revision: Revision) -> ListResult {
        ListResult {
            kvs: self.kvs,
            revision,
            more: self.remaining > 0,
            remaining: self.remaining,
        }
    }
}
