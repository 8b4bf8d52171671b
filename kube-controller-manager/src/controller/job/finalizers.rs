//! Tracking-finalizer removals issued but not yet seen in the pod cache, per Job (upstream's
//! finalizer expectations). The Job's status may already count such a pod while the cache
//! still shows its finalizer; a sync must not count it a second time.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Default)]
pub struct FinalizerExpectations {
    pending: Mutex<HashMap<String, HashSet<String>>>,
}

impl FinalizerExpectations {
    pub fn expect(&self, key: &str, uid: &str) {
        self.pending
            .lock()
            .entry(key.to_string())
            .or_default()
            .insert(uid.to_string());
    }

    /// The removal was seen (or will never happen: the patch failed, the pod is gone).
    pub fn observed(&self, key: &str, uid: &str) {
        let mut pending = self.pending.lock();
        if let Some(uids) = pending.get_mut(key) {
            uids.remove(uid);
            if uids.is_empty() {
                pending.remove(key);
            }
        }
    }

    pub fn pending(&self, key: &str) -> HashSet<String> {
        self.pending.lock().get(key).cloned().unwrap_or_default()
    }

    pub fn delete(&self, key: &str) {
        self.pending.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_and_observe() {
        let e = FinalizerExpectations::default();
        e.expect("ns/j", "a");
        e.expect("ns/j", "b");
        e.observed("ns/j", "a");
        e.observed("ns/other", "b");
        assert_eq!(e.pending("ns/j"), HashSet::from(["b".to_string()]));
        e.observed("ns/j", "b");
        assert!(e.pending("ns/j").is_empty());
        e.expect("ns/j", "c");
        e.delete("ns/j");
        assert!(e.pending("ns/j").is_empty());
    }
}
