//! backoffQ: pods waiting out their backoff before they may be scheduled again, as upstream's
//! `backoffQueue` (v1.33): rejected pods and pods that failed with an error are kept apart,
//! because only the former may be popped early when activeQ is empty (SchedulerPopFromBackoffQ).
//! Expiries are truncated to one-second windows so that pods whose backoff ends in the same
//! window come out in QueueSort order rather than by a few milliseconds' difference.

use super::heap::{Heap, LessFn};
use super::{is_error, pod_key};
use crate::framework::QueuedPodInfo;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Upstream's `backoffQOrderingWindowDuration`.
pub const ORDERING_WINDOW: Duration = Duration::from_secs(1);

/// `initial * 2^(attempts-1)`, capped at `max`; no backoff before the first attempt.
pub fn backoff_duration(attempts: u32, initial: Duration, max: Duration) -> Duration {
    if attempts == 0 {
        return Duration::ZERO;
    }
    let mut d = initial;
    for _ in 1..attempts {
        // Compared before doubling so that it never overflows.
        if d > max.saturating_sub(d) {
            return max;
        }
        d += d;
    }
    d.min(max)
}

pub struct Entry {
    pub expiry: Instant,
    pub qpi: QueuedPodInfo,
}

fn entry_key(e: &Entry) -> &str {
    pod_key(&e.qpi)
}

pub struct BackoffQueue {
    rejected: Heap<Entry>,
    errors: Heap<Entry>,
    initial: Duration,
    max: Duration,
    /// The origin of the ordering windows.
    epoch: Instant,
}

impl BackoffQueue {
    pub fn new(
        initial: Duration,
        max: Duration,
        epoch: Instant,
        sort_less: LessFn<QueuedPodInfo>,
    ) -> Self {
        let less: LessFn<Entry> = Arc::new(move |a: &Entry, b: &Entry| {
            if a.expiry != b.expiry {
                return a.expiry < b.expiry;
            }
            sort_less(&a.qpi, &b.qpi)
        });
        Self {
            rejected: Heap::new(entry_key, less.clone()),
            errors: Heap::new(entry_key, less),
            initial,
            max,
            epoch,
        }
    }

    fn align(&self, t: Instant) -> Instant {
        let since = t.saturating_duration_since(self.epoch);
        let window = ORDERING_WINDOW.as_nanos();
        let truncated = since.as_nanos() / window * window;
        self.epoch + Duration::from_nanos(truncated.min(u64::MAX as u128) as u64)
    }

    /// When the pod's backoff ends; `None` when it owes none (never attempted).
    pub fn expiry(&self, qpi: &QueuedPodInfo) -> Option<Instant> {
        if qpi.attempts == 0 {
            return None;
        }
        let d = backoff_duration(qpi.attempts, self.initial, self.max);
        Some(self.align(qpi.timestamp + d))
    }

    pub fn is_backing_off(&self, qpi: &QueuedPodInfo, now: Instant) -> bool {
        self.expiry(qpi).is_some_and(|e| e > now)
    }

    pub fn add(&mut self, qpi: QueuedPodInfo) {
        let expiry = self.expiry(&qpi).unwrap_or(self.epoch);
        let key = pod_key(&qpi).to_string();
        if is_error(&qpi) {
            self.rejected.remove(&key);
            self.errors.push(Entry { expiry, qpi });
        } else {
            self.errors.remove(&key);
            self.rejected.push(Entry { expiry, qpi });
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.rejected.contains(key) || self.errors.contains(key)
    }

    pub fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.rejected
            .get(key)
            .or_else(|| self.errors.get(key))
            .map(|e| &e.qpi)
    }

    pub fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        self.rejected
            .remove(key)
            .or_else(|| self.errors.remove(key))
            .map(|e| e.qpi)
    }

    pub fn len(&self) -> usize {
        self.rejected.len() + self.errors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rejected.is_empty() && self.errors.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.rejected
            .iter()
            .chain(self.errors.iter())
            .map(|e| &e.qpi)
    }

    /// The earliest end of a backoff, for the flusher's timer.
    pub fn next_expiry(&self) -> Option<Instant> {
        let a = self.rejected.peek().map(|e| e.expiry);
        let b = self.errors.peek().map(|e| e.expiry);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Every pod whose backoff has ended by `now`.
    pub fn pop_completed(&mut self, now: Instant) -> Vec<QueuedPodInfo> {
        let mut out = Vec::new();
        for heap in [&mut self.rejected, &mut self.errors] {
            while heap.peek().is_some_and(|e| e.expiry <= now) {
                if let Some(e) = heap.pop() {
                    out.push(e.qpi);
                }
            }
        }
        out
    }

    /// The rejected pod that would complete its backoff first, taken early because activeQ
    /// is idle; pods that failed with an error always wait.
    pub fn pop_early(&mut self) -> Option<QueuedPodInfo> {
        self.rejected.pop().map(|e| e.qpi)
    }
}
