//! The backoff between replacements of a failed daemon pod on one node (upstream's
//! `failedPodsBackoff`: 1 s doubling to 15 min), so the controller does not fight a kubelet
//! that keeps rejecting the pod.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const INITIAL: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(15 * 60);

#[derive(Default)]
pub struct FailedPodsBackoff {
    entries: Mutex<HashMap<String, (Duration, Instant)>>,
}

impl FailedPodsBackoff {
    /// The delay left when `key` was replaced less than its backoff ago.
    pub fn remaining(&self, key: &str, now: Instant) -> Option<Duration> {
        let entries = self.entries.lock();
        let (delay, at) = entries.get(key)?;
        let elapsed = now.saturating_duration_since(*at);
        (elapsed < *delay).then(|| *delay - elapsed)
    }

    /// Records a replacement: the next one waits twice as long, unless the last was long ago
    /// (twice the maximum), which starts over.
    pub fn next(&self, key: &str, now: Instant) {
        let mut entries = self.entries.lock();
        let delay = match entries.get(key) {
            Some((d, at)) if now.saturating_duration_since(*at) <= MAX * 2 => (*d * 2).min(MAX),
            _ => INITIAL,
        };
        entries.insert(key.to_string(), (delay, now));
    }

    /// Drops entries idle for longer than twice the maximum (upstream's periodic GC).
    pub fn gc(&self, now: Instant) {
        self.entries
            .lock()
            .retain(|_, (_, at)| now.saturating_duration_since(*at) <= MAX * 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_then_expires() {
        let b = FailedPodsBackoff::default();
        let t0 = Instant::now();
        assert_eq!(b.remaining("k", t0), None);
        b.next("k", t0);
        assert_eq!(b.remaining("k", t0), Some(INITIAL));
        assert_eq!(b.remaining("k", t0 + INITIAL), None);
        b.next("k", t0 + INITIAL);
        assert_eq!(b.remaining("k", t0 + INITIAL), Some(INITIAL * 2));
        let later = t0 + MAX * 3;
        b.next("k", later);
        assert_eq!(b.remaining("k", later), Some(INITIAL));
        b.gc(later + MAX * 3);
        assert_eq!(b.remaining("k", later), None);
    }
}
