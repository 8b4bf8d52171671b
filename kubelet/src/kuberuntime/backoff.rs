//! Per-key exponential backoff as client-go's `flowcontrol.Backoff`, used for CrashLoopBackOff
//! (keyed by pod and container) and ImagePullBackOff (keyed by pod and image). Times are
//! explicit so the rules are testable without sleeping.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone)]
struct Entry {
    backoff: Duration,
    last_update: SystemTime,
}

#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, Entry>,
}

impl Backoff {
    /// The kubelet's container and image backoffs: 10 s doubling to 5 min.
    pub fn kubelet_default() -> Self {
        Self::new(Duration::from_secs(10), Duration::from_secs(300))
    }

    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            entries: HashMap::new(),
        }
    }

    /// An entry untouched for twice the maximum is stale: the item behaved long enough to
    /// start over from the initial delay (10 min of running for containers).
    fn expired(&self, event: SystemTime, entry: &Entry) -> bool {
        event
            .duration_since(entry.last_update)
            .is_ok_and(|d| d > self.max * 2)
    }

    /// The current delay of `key`, zero when it has none.
    pub fn get(&self, key: &str) -> Duration {
        self.entries.get(key).map_or(Duration::ZERO, |e| e.backoff)
    }

    /// Records one more failure at `now`: the first (or first after expiry) waits the initial
    /// delay, later ones double it up to the maximum.
    pub fn next(&mut self, key: &str, event: SystemTime, now: SystemTime) {
        let fresh = match self.entries.get(key) {
            None => true,
            Some(e) => self.expired(event, e),
        };
        let backoff = if fresh {
            self.initial
        } else {
            (self.get(key) * 2).min(self.max)
        };
        self.entries.insert(
            key.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// True while less than the current delay has passed since `event` (a container's
    /// finish time).
    pub fn in_backoff_since(&self, key: &str, event: SystemTime, now: SystemTime) -> bool {
        let Some(entry) = self.entries.get(key) else {
            return false;
        };
        if self.expired(event, entry) {
            return false;
        }
        now.duration_since(event)
            .map_or(true, |elapsed| elapsed < entry.backoff)
    }

    /// True while less than the current delay has passed since the last failure was
    /// recorded (image pulls).
    pub fn in_backoff_since_update(&self, key: &str, now: SystemTime) -> bool {
        let Some(entry) = self.entries.get(key) else {
            return false;
        };
        if self.expired(now, entry) {
            return false;
        }
        now.duration_since(entry.last_update)
            .map_or(true, |elapsed| elapsed < entry.backoff)
    }

    /// Drops entries stale enough to have expired, so the map does not grow forever.
    pub fn gc(&mut self, now: SystemTime) {
        let max = self.max;
        self.entries.retain(|_, e| {
            now.duration_since(e.last_update)
                .map_or(true, |d| d <= max * 2)
        });
    }

    pub fn reset(&mut self, key: &str) {
        self.entries.remove(key);
    }
}

/// Go's `time.Duration` printing for whole seconds and minutes (`10s`, `5m0s`), as the
/// CrashLoopBackOff message shows it.
pub fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h{}m{}s", secs / 3600, (secs % 3600) / 60, secs % 60)
    } else if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    #[test]
    fn crash_loop_delays_double_to_the_cap_and_reset_after_stable_running() {
        let mut b = Backoff::kubelet_default();
        let k = "p_ns_uid_c";
        // (container finished at, now, in backoff before next()?, delay after next())
        let steps = [
            (0, 1, false, 10),
            (12, 13, true, 10),
            (12, 23, false, 20),
            (30, 40, true, 20),
            (30, 51, false, 40),
            (60, 61, true, 40),
            (60, 101, false, 80),
            (110, 111, true, 80),
            (110, 191, false, 160),
            (200, 361, false, 300),
            (400, 701, false, 300),
            // Ran fine for more than 10 min since the last restart: back to 10 s.
            (1400, 1401, false, 10),
        ];
        for (finished, now, want_backoff, want_delay) in steps {
            let in_backoff = b.in_backoff_since(k, t(finished), t(now));
            assert_eq!(in_backoff, want_backoff, "finished {finished} now {now}");
            if !in_backoff {
                b.next(k, t(finished), t(now));
            }
            assert_eq!(b.get(k), Duration::from_secs(want_delay), "at {now}");
        }
    }

    #[test]
    fn image_pull_backoff_counts_from_the_last_failure() {
        let mut b = Backoff::kubelet_default();
        assert!(!b.in_backoff_since_update("i", t(0)));
        b.next("i", t(0), t(0));
        assert!(b.in_backoff_since_update("i", t(9)));
        assert!(!b.in_backoff_since_update("i", t(10)));
        b.next("i", t(10), t(10));
        assert!(b.in_backoff_since_update("i", t(29)));
        assert!(!b.in_backoff_since_update("i", t(30)));
        b.gc(t(10 + 601));
        assert_eq!(b.get("i"), Duration::ZERO);
    }

    #[test]
    fn durations_print_as_go_does() {
        let cases = [(10, "10s"), (40, "40s"), (80, "1m20s"), (300, "5m0s")];
        for (secs, want) in cases {
            assert_eq!(go_duration(Duration::from_secs(secs)), want);
        }
    }
}
