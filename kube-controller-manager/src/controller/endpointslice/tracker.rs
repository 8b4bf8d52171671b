//! Remembers the slices a controller wrote (by uid: the resourceVersion written, or that it
//! was deleted) so a sync never plans from a cache that has not seen its own writes yet, as
//! upstream's EndpointSliceTracker: acting on a stale cache would create slices twice.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use parking_lot::Mutex;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// At least this resourceVersion.
    Version(i64),
    Deleted,
}

#[derive(Debug, Default)]
pub struct Tracker {
    /// service key → slice uid → what the cache should show.
    expected: Mutex<HashMap<String, HashMap<String, Expect>>>,
}

fn version(slice: &EndpointSlice) -> i64 {
    slice
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl Tracker {
    /// Records a slice as written (created or updated) by us.
    pub fn written(&self, service: &str, slice: &EndpointSlice) {
        if let Some(uid) = &slice.metadata.uid {
            self.expected
                .lock()
                .entry(service.to_string())
                .or_default()
                .insert(uid.clone(), Expect::Version(version(slice)));
        }
    }

    pub fn deleted(&self, service: &str, slice: &EndpointSlice) {
        if let Some(uid) = &slice.metadata.uid {
            self.expected
                .lock()
                .entry(service.to_string())
                .or_default()
                .insert(uid.clone(), Expect::Deleted);
        }
    }

    /// The informer saw the slice go: nothing more to expect of it (whoever deleted it).
    pub fn forget_slice(&self, service: &str, uid: &str) {
        let mut expected = self.expected.lock();
        if let Some(slices) = expected.get_mut(service) {
            slices.remove(uid);
            if slices.is_empty() {
                expected.remove(service);
            }
        }
    }

    pub fn forget_service(&self, service: &str) {
        self.expected.lock().remove(service);
    }

    /// Whether `cached` (the service's slices in the informer cache) lags behind our writes.
    /// Expectations the cache has met are dropped.
    pub fn is_stale(&self, service: &str, cached: &[&EndpointSlice]) -> bool {
        let mut expected = self.expected.lock();
        let Some(slices) = expected.get_mut(service) else {
            return false;
        };
        let mut stale = false;
        slices.retain(|uid, expect| {
            let seen = cached
                .iter()
                .find(|s| s.metadata.uid.as_deref() == Some(uid.as_str()));
            let met = match (*expect, seen) {
                (Expect::Version(v), Some(s)) => version(s) >= v,
                (Expect::Version(_), None) => false,
                (Expect::Deleted, seen) => seen.is_none(),
            };
            stale |= !met;
            !met
        });
        if slices.is_empty() {
            expected.remove(service);
        }
        stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn slice(uid: &str, rv: i64) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                resource_version: Some(rv.to_string()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn staleness() {
        let t = Tracker::default();
        assert!(!t.is_stale("ns/s", &[]));
        t.written("ns/s", &slice("a", 5));
        assert!(t.is_stale("ns/s", &[]), "created slice not seen yet");
        assert!(
            t.is_stale("ns/s", &[&slice("a", 4)]),
            "older version cached"
        );
        assert!(!t.is_stale("ns/s", &[&slice("a", 5)]));
        assert!(!t.is_stale("ns/s", &[]), "met expectations are dropped");
        t.deleted("ns/s", &slice("b", 7));
        assert!(t.is_stale("ns/s", &[&slice("b", 7)]));
        assert!(!t.is_stale("ns/s", &[]));
        t.written("ns/s", &slice("c", 9));
        t.forget_slice("ns/s", "c");
        assert!(!t.is_stale("ns/s", &[]));
    }
}
