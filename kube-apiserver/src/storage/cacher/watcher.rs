//! One watcher of the cache: the dispatcher's handle on it and the task that feeds its client.

use std::sync::atomic::AtomicBool;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::event::{Filter, WatchEvent};

/// The dispatcher's side of a watcher. Dropping it (with every copy) ends the watcher once its
/// queued events are delivered; cancelling `stop` ends it at once.
pub(super) struct Watcher {
    pub id: u64,
    pub prefix: String,
    pub filter: Filter,
    pub bookmarks: bool,
    /// Live events, already filtered for this watcher.
    pub input: mpsc::Sender<WatchEvent>,
    pub stop: CancellationToken,
    /// Changes were filtered out for this watcher since it was last sent something: a
    /// bookmark would let its client resume closer to the head. Only the dispatcher uses it.
    pub behind: AtomicBool,
}

/// Sends `initial` to the client, then the live events the dispatcher queues on `input`. Live
/// events wait in `input` while the initial ones are sent, which keeps them in order without
/// making the dispatcher wait for this client.
pub(super) fn spawn(
    initial: Vec<WatchEvent>,
    mut input: mpsc::Receiver<WatchEvent>,
    output: mpsc::Sender<WatchEvent>,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        for event in initial {
            if !deliver(&output, event, &stop).await {
                return;
            }
        }
        loop {
            let event = tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                // A client gone while nothing happens still frees its watcher (at the next
                // bookmark tick, when the dispatcher sees `input` closed).
                _ = output.closed() => return,
                event = input.recv() => event,
            };
            let Some(event) = event else { return };
            if !deliver(&output, event, &stop).await {
                return;
            }
        }
    });
}

/// False when the watcher is over: its client went away or it was stopped.
async fn deliver(
    output: &mpsc::Sender<WatchEvent>,
    event: WatchEvent,
    stop: &CancellationToken,
) -> bool {
    tokio::select! {
        biased;
        _ = stop.cancelled() => false,
        sent = output.send(event) => sent.is_ok(),
    }
}
