//! A watch's stream: the replayed history, then live events from the broadcast.

use futures::StreamExt;
use futures::stream;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::storage::backend::{Event, Revision, StorageError, WatchStream};

/// Chains `replay` with the live events under `prefix` newer than `floor` (the revision the
/// replay reached, or the watch's start if later), so no event is missed or delivered twice.
pub(super) fn stream(
    prefix: String,
    replay: Vec<Event>,
    live: broadcast::Receiver<Event>,
    floor: Revision,
) -> WatchStream {
    let live = stream::unfold(Some((live, prefix)), move |state| async move {
        let (mut rx, prefix) = state?;
        loop {
            match rx.recv().await {
                // Progress concerns every watch, whatever its prefix.
                Ok(event @ Event::Progress { .. }) => {
                    return Some((Ok(event), Some((rx, prefix))));
                }
                Ok(event) => {
                    if event.revision() > floor && event.key().starts_with(&prefix) {
                        return Some((Ok(event), Some((rx, prefix))));
                    }
                }
                // The channel overwrote events this watcher had not read: it cannot be resumed
                // without a gap, so end it and let the caller re-watch from its last revision.
                Err(RecvError::Lagged(_)) => {
                    return Some((
                        Err(StorageError::Unavailable("watcher too slow".into())),
                        None,
                    ));
                }
                Err(RecvError::Closed) => return None,
            }
        }
    });
    stream::iter(replay.into_iter().map(Ok)).chain(live).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::backend::KeyValue;

    fn put(key: &str, rev: Revision) -> Event {
        Event::Put {
            kv: KeyValue {
                key: key.into(),
                value: bytes::Bytes::from_static(b"v"),
                create_revision: rev,
                mod_revision: rev,
            },
            prev: None,
        }
    }

    /// Live events the replay already delivered (those at or below the floor) are dropped, and
    /// so are other prefixes'; the rest follow the replay in order.
    #[tokio::test]
    async fn replay_then_live_without_duplicates() {
        let (tx, rx) = broadcast::channel(16);
        // Committed while the watch was between subscribing and reading its snapshot (rev 3),
        // so both in the replay and on the channel.
        tx.send(put("/p/a", 3)).expect("send");
        tx.send(put("/q/x", 4)).expect("send");
        tx.send(put("/p/b", 5)).expect("send");
        drop(tx);
        let replay = vec![put("/p/z", 2), put("/p/a", 3)];
        let got: Vec<Revision> = stream("/p/".into(), replay, rx, 3)
            .map(|e| e.expect("event").revision())
            .collect()
            .await;
        assert_eq!(got, vec![2, 3, 5]);
    }

    #[tokio::test]
    async fn lagging_receiver_ends_with_unavailable() {
        let (tx, rx) = broadcast::channel(2);
        for rev in 1..=5 {
            tx.send(put("/p/a", rev)).expect("send");
        }
        let got: Vec<_> = stream("/p/".into(), Vec::new(), rx, 0).collect().await;
        assert_eq!(
            got,
            vec![Err(StorageError::Unavailable("watcher too slow".into()))]
        );
    }
}
