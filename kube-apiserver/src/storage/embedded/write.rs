//! Writes, each one redb write transaction that bumps the revision and records the new version
//! in `latest`, `history` and `changes` together.

use std::collections::BTreeSet;

use redb::{Database, ReadableTable, Table, WriteTransaction};

use super::read::{read_counter, version_at};
use super::tables::{
    CHANGES, HISTORY, INITIAL_REVISION, LATEST, META, META_COMPACTED, META_REVISION, TOMBSTONE,
    db_err, kv_from_latest,
};
use crate::storage::backend::{Event, KeyValue, Revision, StorageError};

/// Runs `f` in a write transaction; commits (durably, redb's default `Durability::Immediate`)
/// if it succeeds, aborts if it fails.
pub(super) fn in_write_txn<T>(
    db: &Database,
    f: impl FnOnce(&mut Tables<'_>) -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    let txn = db.begin_write().map_err(db_err)?;
    let outcome = {
        let mut tables = Tables::open(&txn)?;
        f(&mut tables)
    };
    match outcome {
        Ok(v) => {
            txn.commit().map_err(db_err)?;
            Ok(v)
        }
        Err(e) => {
            txn.abort().map_err(db_err)?;
            Err(e)
        }
    }
}

/// The tables of one write transaction.
pub(super) struct Tables<'t> {
    meta: Table<'t, &'static str, i64>,
    latest: Table<'t, &'static str, (i64, i64, &'static [u8])>,
    history: Table<'t, (&'static str, i64), (i64, &'static [u8])>,
    changes: Table<'t, i64, &'static str>,
}

impl<'t> Tables<'t> {
    pub(super) fn open(txn: &'t WriteTransaction) -> Result<Self, StorageError> {
        Ok(Self {
            meta: txn.open_table(META).map_err(db_err)?,
            latest: txn.open_table(LATEST).map_err(db_err)?,
            history: txn.open_table(HISTORY).map_err(db_err)?,
            changes: txn.open_table(CHANGES).map_err(db_err)?,
        })
    }

    /// Writes the counters of a new store; leaves an existing one alone.
    pub(super) fn initialize(&mut self) -> Result<(), StorageError> {
        if read_counter(&self.meta, META_REVISION)?.is_none() {
            self.meta
                .insert(META_REVISION, INITIAL_REVISION)
                .map_err(db_err)?;
            self.meta.insert(META_COMPACTED, 0).map_err(db_err)?;
        }
        Ok(())
    }

    fn revision(&self) -> Result<Revision, StorageError> {
        Ok(read_counter(&self.meta, META_REVISION)?.unwrap_or(INITIAL_REVISION))
    }

    fn compacted(&self) -> Result<Revision, StorageError> {
        Ok(read_counter(&self.meta, META_COMPACTED)?.unwrap_or(0))
    }

    /// Takes the next revision for this transaction's write.
    fn next_revision(&mut self) -> Result<Revision, StorageError> {
        let next = self.revision()? + 1;
        self.meta.insert(META_REVISION, next).map_err(db_err)?;
        Ok(next)
    }

    fn current(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let row = self.latest.get(key).map_err(db_err)?;
        Ok(row.map(|row| kv_from_latest(key, row.value())))
    }

    /// Records a new value of `key` at a fresh revision.
    fn put(
        &mut self,
        key: &str,
        value: &[u8],
        create_revision: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let rev = self.next_revision()?;
        let create_revision = create_revision.unwrap_or(rev);
        self.latest
            .insert(key, (create_revision, rev, value))
            .map_err(db_err)?;
        self.history
            .insert((key, rev), (create_revision, value))
            .map_err(db_err)?;
        self.changes.insert(rev, key).map_err(db_err)?;
        Ok(KeyValue {
            key: key.to_owned(),
            value: bytes::Bytes::copy_from_slice(value),
            create_revision,
            mod_revision: rev,
        })
    }

    /// Creates `key`; `AlreadyExists` if it is live.
    pub(super) fn create(
        &mut self,
        key: &str,
        value: &[u8],
    ) -> Result<(KeyValue, Event), StorageError> {
        if self.latest.get(key).map_err(db_err)?.is_some() {
            return Err(StorageError::AlreadyExists {
                key: key.to_owned(),
            });
        }
        let kv = self.put(key, value, None)?;
        Ok((kv.clone(), Event::Put { kv, prev: None }))
    }

    /// Replaces `key` if its mod_revision is `expected`.
    pub(super) fn update(
        &mut self,
        key: &str,
        value: &[u8],
        expected: Revision,
    ) -> Result<(KeyValue, Event), StorageError> {
        let prev = self.current(key)?.ok_or_else(|| StorageError::NotFound {
            key: key.to_owned(),
        })?;
        if prev.mod_revision != expected {
            return Err(StorageError::Conflict {
                key: key.to_owned(),
                expected,
                current: Some(prev),
            });
        }
        let kv = self.put(key, value, Some(prev.create_revision))?;
        Ok((
            kv.clone(),
            Event::Put {
                kv,
                prev: Some(prev),
            },
        ))
    }

    /// Deletes `key`, if `expected` is given only at that mod_revision.
    pub(super) fn delete(
        &mut self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<((KeyValue, Revision), Event), StorageError> {
        let prev = self.current(key)?.ok_or_else(|| StorageError::NotFound {
            key: key.to_owned(),
        })?;
        if let Some(expected) = expected
            && prev.mod_revision != expected
        {
            return Err(StorageError::Conflict {
                key: key.to_owned(),
                expected,
                current: Some(prev),
            });
        }
        let rev = self.next_revision()?;
        self.latest.remove(key).map_err(db_err)?;
        self.history
            .insert((key, rev), (TOMBSTONE, &[][..]))
            .map_err(db_err)?;
        self.changes.insert(rev, key).map_err(db_err)?;
        let event = Event::Delete {
            key: key.to_owned(),
            revision: rev,
            prev: prev.clone(),
        };
        Ok(((prev, rev), event))
    }

    /// Forgets history before `revision`. For every key written before it, only its last
    /// version before `revision` survives, and only if it is not a tombstone: that version is
    /// what reads at `revision` see (when the key was not written at `revision` itself) and the
    /// `prev` of the key's next event, which a watch from `revision - 1` replays.
    pub(super) fn compact(&mut self, revision: Revision) -> Result<(), StorageError> {
        let current = self.revision()?;
        if revision > current {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current,
            });
        }
        let compacted = self.compacted()?;
        if revision <= compacted {
            return Err(StorageError::Compacted {
                requested: revision,
                compacted,
            });
        }
        let mut keys = BTreeSet::new();
        for entry in self.changes.range(..revision).map_err(db_err)? {
            let (_, k) = entry.map_err(db_err)?;
            keys.insert(k.value().to_owned());
        }
        self.changes
            .retain_in(..revision, |_, _| false)
            .map_err(db_err)?;
        for key in &keys {
            let mut versions = Vec::new();
            for entry in self
                .history
                .range::<(&str, i64)>((key.as_str(), i64::MIN)..(key.as_str(), revision))
                .map_err(db_err)?
            {
                let (k, _) = entry.map_err(db_err)?;
                versions.push(k.value().1);
            }
            let keep = match versions.last() {
                Some(&last) => version_at(&self.history, key, last)?.map(|_| last),
                None => None,
            };
            for rev in versions {
                if Some(rev) != keep {
                    self.history.remove((key.as_str(), rev)).map_err(db_err)?;
                }
            }
        }
        self.meta.insert(META_COMPACTED, revision).map_err(db_err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, ReadableTableMetadata};

    use super::*;

    fn rows(db: &Database) -> (u64, u64) {
        let txn = db.begin_read().expect("read");
        let history = txn
            .open_table(HISTORY)
            .expect("history")
            .len()
            .expect("len");
        let changes = txn
            .open_table(CHANGES)
            .expect("changes")
            .len()
            .expect("len");
        (history, changes)
    }

    /// Compaction drops the rows reads no longer need: older versions, deleted keys' versions
    /// and tombstones, and the change log below the compacted revision.
    #[test]
    fn compaction_removes_old_rows() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Database::create(dir.path().join("kv.redb")).expect("db");
        in_write_txn(&db, |t| t.initialize()).expect("init");
        let write = |f: &dyn Fn(&mut Tables<'_>) -> Result<(), StorageError>| {
            in_write_txn(&db, |t| f(t)).expect("write");
        };
        write(&|t| t.create("/a", b"1").map(drop)); // 2
        write(&|t| t.update("/a", b"2", 2).map(drop)); // 3
        write(&|t| t.update("/a", b"3", 3).map(drop)); // 4
        write(&|t| t.create("/b", b"b").map(drop)); // 5
        write(&|t| t.delete("/b", None).map(drop)); // 6
        write(&|t| t.create("/c", b"c").map(drop)); // 7
        assert_eq!(rows(&db), (6, 6));

        in_write_txn(&db, |t| t.compact(7)).expect("compact");
        // Kept: /a at 4 (its last version before 7) and /c at 7; the log from 7 on.
        assert_eq!(rows(&db), (2, 1));
        let txn = db.begin_read().expect("read");
        let history = txn.open_table(HISTORY).expect("history");
        assert!(history.get(("/a", 4)).expect("get").is_some());
        assert!(history.get(("/c", 7)).expect("get").is_some());
    }
}
