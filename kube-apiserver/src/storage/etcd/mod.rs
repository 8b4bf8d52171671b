//! The etcd backend: the revisioned key space is etcd's own (etcd v3 API, `etcd-client`).
//!
//! - create: `txn(mod_revision(key) == 0 → put)`.
//! - update: `txn(version(key) > 0 ∧ mod_revision(key) == expected → put with prev_kv, else get)`;
//!   the `else` read tells NotFound from Conflict and carries the current value.
//! - delete: the same shape with an optional mod_revision compare and `prev_kv`.
//! - list: one range read `[start, prefix_end)` with etcd's `limit`; etcd reports `more` and the
//!   `count` of the whole range, so `remaining` is `count - returned`.
//! - watch: from `after + 1` with `prev_kv`; etcd's compaction cancellation becomes `Compacted`.
//!   Before opening it, a range read at `after + 1` turns an already compacted start into an
//!   error of `watch` itself; a compaction racing the watch still arrives as the stream's error.
//! - compacted revision: etcd does not report it directly. [`EtcdBackend::compacted_revision`]
//!   learns it by opening a watch of the whole key space from revision 1, which etcd cancels at
//!   once with its compacted revision if it compacted anything (else the watch's first events
//!   show nothing was), and takes the larger of that and the last compaction this process did.
//!
//! Keys: see [`keys`] (`/registry` is mapped to the configured `--etcd-prefix`). A read at
//! revision 0 or less reads the latest state (etcd's reading). Failures to reach etcd are
//! `Unavailable`.

mod errors;
pub mod keys;
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions,
    PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};

use self::errors::{EtcdFailure, classify, plain};
use self::keys::{KeyMap, prefix_end};
use crate::storage::backend::{Backend, KeyValue, ListResult, Revision, StorageError, WatchStream};

/// How long connecting to an etcd endpoint may take before a request fails as `Unavailable`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long learning the compacted revision may take (see the module comment).
const COMPACTED_PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The etcd backend. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct EtcdBackend {
    client: Client,
    keys: KeyMap,
    /// The highest revision this process compacted to.
    compacted: Arc<AtomicI64>,
    /// The request side of every open watch, for progress requests; closed ones are pruned.
    watch_senders: Arc<tokio::sync::Mutex<Vec<etcd_client::WatchRequestSender>>>,
}

impl EtcdBackend {
    /// Connects to the etcd cluster at `endpoints` (`http://host:port`), storing keys under
    /// `prefix` (the apiserver's `--etcd-prefix`, `/registry` by default).
    pub async fn connect(endpoints: &[String], prefix: &str) -> Result<Self, StorageError> {
        let options = ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        let client = Client::connect(endpoints, Some(options))
            .await
            .map_err(plain)?;
        Ok(Self {
            client,
            keys: KeyMap::new(prefix),
            compacted: Arc::new(AtomicI64::new(0)),
            watch_senders: Default::default(),
        })
    }

    /// Maps a failed read at `requested` (a revision) to the backend's error, asking etcd for
    /// the revisions the error reports.
    async fn revision_error(&self, e: etcd_client::Error, requested: Revision) -> StorageError {
        match classify(e) {
            EtcdFailure::Compacted => StorageError::Compacted {
                requested,
                compacted: self
                    .compacted_revision()
                    .await
                    .unwrap_or_else(|_| self.compacted.load(Ordering::Relaxed)),
            },
            EtcdFailure::FutureRevision => match self.current_revision().await {
                Ok(current) => StorageError::FutureRevision { requested, current },
                Err(e) => e,
            },
            EtcdFailure::Other(e) => e,
        }
    }

    /// The value `else` branch of a failed compare-and-swap read, as NotFound or Conflict.
    fn cas_failure(
        &self,
        key: &str,
        expected: Revision,
        resp: &etcd_client::TxnResponse,
    ) -> Result<StorageError, StorageError> {
        let current = first_get_kv(resp)
            .map(|kv| kv_from_etcd(&self.keys, &kv))
            .transpose()?;
        Ok(match current {
            None => StorageError::NotFound {
                key: key.to_owned(),
            },
            Some(current) => StorageError::Conflict {
                key: key.to_owned(),
                expected,
                current: Some(current),
            },
        })
    }
}

/// Builds the backend's value from etcd's, mapping the key back.
fn kv_from_etcd(keys: &KeyMap, kv: &etcd_client::KeyValue) -> Result<KeyValue, StorageError> {
    let key = kv
        .key_str()
        .map_err(|e| StorageError::Internal(format!("etcd key is not UTF-8: {e}")))?;
    Ok(KeyValue {
        key: keys.caller_key(key),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<Revision, StorageError> {
    header
        .map(|h| h.revision())
        .ok_or_else(|| StorageError::Internal("etcd response without a header".into()))
}

/// The first value a transaction's get returned.
fn first_get_kv(resp: &etcd_client::TxnResponse) -> Option<etcd_client::KeyValue> {
    resp.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(get) => get.kvs().first().cloned(),
        _ => None,
    })
}

/// A requested past revision as etcd takes it (0 is "latest" to etcd).
fn etcd_revision(revision: Option<Revision>) -> Option<Revision> {
    revision.filter(|r| *r > 0)
}

#[async_trait]
impl Backend for EtcdBackend {
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<Option<KeyValue>, StorageError> {
        let mut options = GetOptions::new();
        let at = etcd_revision(revision);
        if let Some(r) = at {
            options = options.with_revision(r);
        }
        let resp = match self
            .client
            .kv_client()
            .get(self.keys.etcd_key(key), Some(options))
            .await
        {
            Ok(resp) => resp,
            Err(e) => return Err(self.revision_error(e, at.unwrap_or(0)).await),
        };
        resp.kvs()
            .first()
            .map(|kv| kv_from_etcd(&self.keys, kv))
            .transpose()
    }

    async fn list(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
        revision: Option<Revision>,
    ) -> Result<ListResult, StorageError> {
        let from = match start {
            Some(s) if s > prefix => s,
            _ => prefix,
        };
        let end = prefix_end(&self.keys.etcd_key(prefix));
        let mut options = GetOptions::new().with_range(end);
        if limit > 0 {
            options = options.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let at = etcd_revision(revision);
        if let Some(r) = at {
            options = options.with_revision(r);
        }
        let resp = match self
            .client
            .kv_client()
            .get(self.keys.etcd_key(from), Some(options))
            .await
        {
            Ok(resp) => resp,
            Err(e) => return Err(self.revision_error(e, at.unwrap_or(0)).await),
        };
        let kvs = resp
            .kvs()
            .iter()
            .map(|kv| kv_from_etcd(&self.keys, kv))
            .collect::<Result<Vec<_>, _>>()?;
        let returned = i64::try_from(kvs.len()).unwrap_or(i64::MAX);
        let remaining = (resp.count() - returned).max(0);
        let revision = match at {
            Some(r) => r,
            None => header_revision(resp.header())?,
        };
        Ok(ListResult {
            kvs,
            revision,
            more: resp.more(),
            remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<i64, StorageError> {
        let key = self.keys.etcd_key(prefix);
        let options = GetOptions::new()
            .with_range(prefix_end(&key))
            .with_count_only();
        let resp = self
            .client
            .kv_client()
            .get(key, Some(options))
            .await
            .map_err(plain)?;
        Ok(resp.count())
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        let etcd_key = self.keys.etcd_key(key);
        let txn = Txn::new()
            .when([Compare::mod_revision(etcd_key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(etcd_key, value.to_vec(), None)]);
        let resp = self.client.kv_client().txn(txn).await.map_err(plain)?;
        if !resp.succeeded() {
            return Err(StorageError::AlreadyExists {
                key: key.to_owned(),
            });
        }
        let revision = header_revision(resp.header())?;
        Ok(KeyValue {
            key: key.to_owned(),
            value,
            create_revision: revision,
            mod_revision: revision,
        })
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let etcd_key = self.keys.etcd_key(key);
        let txn = Txn::new()
            .when([
                // Without it an `expected` of 0 would create a missing key.
                Compare::version(etcd_key.clone(), CompareOp::Greater, 0),
                Compare::mod_revision(etcd_key.clone(), CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::put(
                etcd_key.clone(),
                value.to_vec(),
                Some(PutOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(etcd_key, None)]);
        let resp = self.client.kv_client().txn(txn).await.map_err(plain)?;
        if !resp.succeeded() {
            return Err(self.cas_failure(key, expected, &resp)?);
        }
        let revision = header_revision(resp.header())?;
        let prev_create = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Put(put) => put.prev_key().map(|kv| kv.create_revision()),
            _ => None,
        });
        Ok(KeyValue {
            key: key.to_owned(),
            value,
            create_revision: prev_create.ok_or_else(|| {
                StorageError::Internal("etcd update did not return the previous value".into())
            })?,
            mod_revision: revision,
        })
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let etcd_key = self.keys.etcd_key(key);
        let mut compares = vec![Compare::version(etcd_key.clone(), CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            compares.push(Compare::mod_revision(
                etcd_key.clone(),
                CompareOp::Equal,
                expected,
            ));
        }
        let txn = Txn::new()
            .when(compares)
            .and_then([TxnOp::delete(
                etcd_key.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(etcd_key, None)]);
        let resp = self.client.kv_client().txn(txn).await.map_err(plain)?;
        if !resp.succeeded() {
            return Err(self.cas_failure(key, expected.unwrap_or(0), &resp)?);
        }
        let revision = header_revision(resp.header())?;
        let prev = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(del) => del.prev_kvs().first().cloned(),
            _ => None,
        });
        let prev = prev.ok_or_else(|| {
            StorageError::Internal("etcd delete did not return the deleted value".into())
        })?;
        Ok((kv_from_etcd(&self.keys, &prev)?, revision))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let key = self.keys.etcd_key(prefix);
        let start = after.saturating_add(1).max(1);
        // Tell an already compacted start now rather than on the stream; a start in the future
        // is fine for a watch (it waits), so that error is ignored here.
        let probe = GetOptions::new()
            .with_revision(start)
            .with_keys_only()
            .with_limit(1);
        if let Err(e) = self.client.kv_client().get(key.clone(), Some(probe)).await {
            match self.revision_error(e, after).await {
                StorageError::FutureRevision { .. } => {}
                err => return Err(err),
            }
        }
        let options = WatchOptions::new()
            .with_range(prefix_end(&key))
            .with_start_revision(start)
            .with_prev_key();
        let etcd = self
            .client
            .watch_client()
            .watch(key, Some(options))
            .await
            .map_err(plain)?;
        let (sender, responses) = etcd.split();
        self.watch_senders.lock().await.push(sender);
        Ok(watch::stream(responses, self.keys.clone(), after))
    }

    async fn request_progress(&self) -> Result<(), StorageError> {
        let mut senders = self.watch_senders.lock().await;
        let mut open = Vec::with_capacity(senders.len());
        for mut sender in senders.drain(..) {
            // A failed send means the watch is gone: forget it.
            if sender.request_progress().await.is_ok() {
                open.push(sender);
            }
        }
        *senders = open;
        Ok(())
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let options = GetOptions::new().with_count_only();
        let resp = self
            .client
            .kv_client()
            .get(self.keys.etcd_key(keys::CALLER_ROOT), Some(options))
            .await
            .map_err(plain)?;
        header_revision(resp.header())
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        // Physical: return once etcd applied it, so reads right after see it.
        let options = CompactionOptions::new().with_physical();
        match self
            .client
            .kv_client()
            .compact(revision, Some(options))
            .await
        {
            Ok(_) => {
                self.compacted.fetch_max(revision, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.revision_error(e, revision).await),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        let known = self.compacted.load(Ordering::Relaxed);
        if self.current_revision().await? <= 1 {
            // An empty store has no history to compact, and the probe would see no events.
            return Ok(known);
        }
        let probe = async {
            let options = WatchOptions::new()
                .with_range(vec![0])
                .with_start_revision(1);
            let mut watch = self
                .client
                .watch_client()
                .watch(vec![0], Some(options))
                .await
                .map_err(plain)?;
            loop {
                match watch.message().await.map_err(plain)? {
                    None => {
                        return Err(StorageError::Unavailable(
                            "etcd closed the watch probing the compacted revision".into(),
                        ));
                    }
                    Some(resp) if resp.compact_revision() > 0 => {
                        return Ok(resp.compact_revision());
                    }
                    Some(resp) if !resp.events().is_empty() => return Ok(0),
                    Some(_) => {}
                }
            }
        };
        let found = tokio::time::timeout(COMPACTED_PROBE_TIMEOUT, probe)
            .await
            .map_err(|_| {
                StorageError::Unavailable("etcd did not answer the compacted revision probe".into())
            })??;
        self.compacted.fetch_max(found, Ordering::Relaxed);
        Ok(found.max(known))
    }
}
