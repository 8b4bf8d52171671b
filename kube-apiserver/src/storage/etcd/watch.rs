//! A watch on etcd as the backend's event stream.

use std::collections::VecDeque;

use futures::StreamExt;
use futures::stream;

use super::errors::plain;
use super::keys::KeyMap;
use super::kv_from_etcd;
use crate::storage::backend::{Event, Revision, StorageError, WatchStream};

struct State {
    etcd: etcd_client::WatchResponseStream,
    keys: KeyMap,
    /// Events of the last response not delivered yet.
    pending: VecDeque<Event>,
}

/// Turns etcd's watch responses into events; a cancellation or failure becomes the stream's
/// last item. `after` is the caller's start, for the `Compacted` error.
pub(super) fn stream(
    etcd: etcd_client::WatchResponseStream,
    keys: KeyMap,
    after: Revision,
) -> WatchStream {
    let state = State {
        etcd,
        keys,
        pending: VecDeque::new(),
    };
    stream::unfold(Some(state), move |state| async move {
        let mut state = state?;
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((Ok(event), Some(state)));
            }
            let resp = match state.etcd.message().await {
                Ok(Some(resp)) => resp,
                Ok(None) => {
                    let err = StorageError::Unavailable("etcd closed the watch".into());
                    return Some((Err(err), None));
                }
                Err(e) => return Some((Err(plain(e)), None)),
            };
            if resp.canceled() {
                let err = if resp.compact_revision() > 0 {
                    StorageError::Compacted {
                        requested: after,
                        compacted: resp.compact_revision(),
                    }
                } else {
                    StorageError::Unavailable(format!(
                        "etcd cancelled the watch: {}",
                        resp.cancel_reason()
                    ))
                };
                return Some((Err(err), None));
            }
            // A response without events that is not the creation notice answers a progress
            // request: everything up to its header's revision has been sent.
            if resp.events().is_empty() && !resp.created() {
                if let Some(revision) = resp.header().map(|h| h.revision()) {
                    state.pending.push_back(Event::Progress { revision });
                }
                continue;
            }
            for event in resp.events() {
                match convert(&state.keys, event) {
                    Ok(event) => state.pending.push_back(event),
                    Err(e) => return Some((Err(e), None)),
                }
            }
        }
    })
    .boxed()
}

fn convert(keys: &KeyMap, event: &etcd_client::Event) -> Result<Event, StorageError> {
    let kv = event
        .kv()
        .ok_or_else(|| StorageError::Internal("etcd watch event without a key".into()))?;
    let kv = kv_from_etcd(keys, kv)?;
    let prev = event.prev_kv().map(|p| kv_from_etcd(keys, p)).transpose()?;
    match event.event_type() {
        etcd_client::EventType::Put => Ok(Event::Put { kv, prev }),
        etcd_client::EventType::Delete => {
            // etcd leaves out the previous value when it was compacted away; a delete without
            // it cannot be told to the watch cache, as upstream refuses such events too.
            let prev = prev.ok_or_else(|| {
                StorageError::Internal(format!(
                    "etcd delete event without its previous value (key {}, revision {})",
                    kv.key, kv.mod_revision
                ))
            })?;
            Ok(Event::Delete {
                key: kv.key,
                revision: kv.mod_revision,
                prev,
            })
        }
    }
}
