//! Expectations, as upstream's `ControllerExpectations`: a controller records how many creates
//! and deletes it has issued for a key and does not act on that key again until its informer
//! has observed them (or the record is too old to trust), so it never creates twice what its
//! cache has not seen yet.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a record is trusted: past it the controller syncs anyway, in case a watch event
/// was lost (upstream's `ExpectationsTimeout`).
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone, Copy)]
struct Record {
    adds: i64,
    dels: i64,
    at: Instant,
}

impl Record {
    fn fulfilled(&self) -> bool {
        self.adds <= 0 && self.dels <= 0
    }
}

/// Pending creates and deletes per controller key; clones share the same records.
#[derive(Debug, Clone, Default)]
pub struct ControllerExpectations {
    records: Arc<Mutex<HashMap<String, Record>>>,
}

impl ControllerExpectations {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the record of `key` with `adds` creates and `dels` deletes to observe.
    pub fn set_expectations(&self, key: &str, adds: i64, dels: i64) {
        self.records.lock().insert(
            key.to_string(),
            Record {
                adds,
                dels,
                at: Instant::now(),
            },
        );
    }

    pub fn expect_creations(&self, key: &str, adds: i64) {
        self.set_expectations(key, adds, 0);
    }

    pub fn expect_deletions(&self, key: &str, dels: i64) {
        self.set_expectations(key, 0, dels);
    }

    /// Lowers the pending counts (creates that failed, deletes that will never be observed).
    pub fn lower_expectations(&self, key: &str, adds: i64, dels: i64) {
        if let Some(r) = self.records.lock().get_mut(key) {
            r.adds -= adds;
            r.dels -= dels;
        }
    }

    /// Raises the pending counts without resetting the record's age.
    pub fn raise_expectations(&self, key: &str, adds: i64, dels: i64) {
        if let Some(r) = self.records.lock().get_mut(key) {
            r.adds += adds;
            r.dels += dels;
        }
    }

    pub fn creation_observed(&self, key: &str) {
        self.lower_expectations(key, 1, 0);
    }

    pub fn deletion_observed(&self, key: &str) {
        self.lower_expectations(key, 0, 1);
    }

    /// Whether the controller may sync `key`: no record, everything observed, or a record
    /// older than [`EXPECTATIONS_TIMEOUT`].
    pub fn satisfied(&self, key: &str) -> bool {
        self.satisfied_at(key, Instant::now())
    }

    fn satisfied_at(&self, key: &str, now: Instant) -> bool {
        match self.records.lock().get(key) {
            None => true,
            Some(r) => r.fulfilled() || now.saturating_duration_since(r.at) > EXPECTATIONS_TIMEOUT,
        }
    }

    /// The pending `(adds, dels)` of `key`, if it has a record.
    pub fn pending(&self, key: &str) -> Option<(i64, i64)> {
        self.records.lock().get(key).map(|r| (r.adds, r.dels))
    }

    /// Forgets `key` (its controller was deleted).
    pub fn delete(&self, key: &str) {
        self.records.lock().remove(key);
    }
}

/// Expectations whose deletions are tracked by pod key, as upstream's
/// `UIDTrackingControllerExpectations`: a pod deleted once (graceful delete, then the final
/// removal) is counted once, and a pod already observed terminating is not counted again.
#[derive(Debug, Clone, Default)]
pub struct UidTrackingExpectations {
    inner: ControllerExpectations,
    deleted: Arc<Mutex<HashMap<String, HashSet<String>>>>,
}

impl UidTrackingExpectations {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn expect_creations(&self, key: &str, adds: i64) {
        self.inner.expect_creations(key, adds);
    }

    pub fn creation_observed(&self, key: &str) {
        self.inner.creation_observed(key);
    }

    pub fn lower_expectations(&self, key: &str, adds: i64, dels: i64) {
        self.inner.lower_expectations(key, adds, dels);
    }

    /// Expects the deletion of the pods named by `pod_keys` (`namespace/name`).
    pub fn expect_deletions(&self, key: &str, pod_keys: &[String]) {
        // Replaces any earlier set, as upstream: keys left from an expired record must not
        // count toward this one.
        self.deleted
            .lock()
            .insert(key.to_string(), pod_keys.iter().cloned().collect());
        self.inner
            .expect_deletions(key, i64::try_from(pod_keys.len()).unwrap_or(i64::MAX));
    }

    /// Records that `pod_key` is gone or terminating; counted once per expected pod.
    pub fn deletion_observed(&self, key: &str, pod_key: &str) {
        let was_expected = {
            let mut deleted = self.deleted.lock();
            deleted.get_mut(key).is_some_and(|set| set.remove(pod_key))
        };
        if was_expected {
            self.inner.deletion_observed(key);
        }
    }

    pub fn satisfied(&self, key: &str) -> bool {
        self.inner.satisfied(key)
    }

    pub fn pending(&self, key: &str) -> Option<(i64, i64)> {
        self.inner.pending(key)
    }

    pub fn delete(&self, key: &str) {
        self.inner.delete(key);
        self.deleted.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn satisfied_follows_observations() {
        let e = ControllerExpectations::new();
        assert!(e.satisfied("ns/a"), "no record");
        e.expect_creations("ns/a", 2);
        assert!(!e.satisfied("ns/a"));
        e.creation_observed("ns/a");
        assert!(!e.satisfied("ns/a"));
        e.creation_observed("ns/a");
        assert!(e.satisfied("ns/a"));
        e.expect_deletions("ns/a", 1);
        assert!(!e.satisfied("ns/a"));
        e.lower_expectations("ns/a", 0, 1);
        assert!(e.satisfied("ns/a"));
        e.expect_creations("ns/a", 1);
        e.delete("ns/a");
        assert!(e.satisfied("ns/a"));
    }

    #[test]
    fn old_records_expire() {
        let e = ControllerExpectations::new();
        e.expect_creations("k", 3);
        let later = Instant::now() + EXPECTATIONS_TIMEOUT + Duration::from_secs(1);
        assert!(!e.satisfied("k"));
        assert!(e.satisfied_at("k", later));
    }

    #[test]
    fn clones_share_records() {
        let e = ControllerExpectations::new();
        let c = e.clone();
        e.expect_creations("k", 1);
        assert!(!c.satisfied("k"));
        c.creation_observed("k");
        assert!(e.satisfied("k"));
    }

    #[test]
    fn uid_tracking_counts_each_pod_once() {
        let e = UidTrackingExpectations::new();
        e.expect_deletions("rs", &["ns/p1".into(), "ns/p2".into()]);
        e.deletion_observed("rs", "ns/p1");
        e.deletion_observed("rs", "ns/p1");
        assert!(!e.satisfied("rs"));
        e.deletion_observed("rs", "ns/other");
        assert!(!e.satisfied("rs"));
        e.deletion_observed("rs", "ns/p2");
        assert!(e.satisfied("rs"));

        // A new expectation replaces the keys of the old one.
        e.expect_deletions("rs", &["ns/p3".into()]);
        e.expect_deletions("rs", &["ns/p4".into()]);
        e.deletion_observed("rs", "ns/p3");
        assert!(!e.satisfied("rs"));
        e.deletion_observed("rs", "ns/p4");
        assert!(e.satisfied("rs"));
    }
}
