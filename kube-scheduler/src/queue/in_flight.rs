//! Cluster events seen while pods are being scheduled (upstream's `inFlightPods` and
//! `inFlightEvents`): a pod whose attempt fails must be judged against what changed during the
//! attempt, or a change that would have let it in is lost until the next flush.

use crate::framework::PodInfo;
use crate::framework::events::ClusterEvent;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub type Object = Arc<dyn Any + Send + Sync>;

/// An event kept for in-flight pods, with owned copies of its objects.
#[derive(Clone)]
pub struct RecordedEvent {
    pub event: ClusterEvent,
    pub old: Option<Object>,
    pub new: Option<Object>,
    /// An object was given whose type could not be kept: hints cannot be asked, so the
    /// event counts for every plugin registered for it.
    pub opaque: bool,
}

impl RecordedEvent {
    /// Keeps copies of the objects the hints know how to read.
    pub fn capture(event: ClusterEvent, old: Option<&dyn Any>, new: Option<&dyn Any>) -> Self {
        let (old, old_ok) = own(old);
        let (new, new_ok) = own(new);
        Self {
            event,
            old,
            new,
            opaque: !(old_ok && new_ok),
        }
    }
}

/// An owned copy of a known API object, given bare (copied) or behind an `Arc` (shared), as
/// hints accept both; the flag is false when `obj` was of another type.
fn own(obj: Option<&dyn Any>) -> (Option<Object>, bool) {
    let Some(obj) = obj else {
        return (None, true);
    };
    macro_rules! try_types {
        ($($t:ty),*) => {
            $(if let Some(x) = obj.downcast_ref::<Arc<$t>>() {
                let shared: Object = x.clone();
                return (Some(shared), true);
            }
            if let Some(x) = obj.downcast_ref::<$t>() {
                return (Some(Arc::new(x.clone())), true);
            })*
        };
    }
    try_types!(
        Pod,
        Node,
        PersistentVolume,
        PersistentVolumeClaim,
        StorageClass,
        CSINode,
        CSIDriver,
        CSIStorageCapacity,
        VolumeAttachment,
        Namespace,
        PodInfo
    );
    (None, false)
}

enum Item {
    Pod,
    Event(RecordedEvent),
}

#[derive(Default)]
pub struct InFlight {
    next: u64,
    /// Pod uid to its place in `items`.
    pods: HashMap<String, u64>,
    /// Pods' start markers and events, in arrival order.
    items: BTreeMap<u64, Item>,
}

impl InFlight {
    pub fn start(&mut self, uid: &str) {
        self.next += 1;
        if let Some(old) = self.pods.insert(uid.to_string(), self.next) {
            self.items.remove(&old);
        }
        self.items.insert(self.next, Item::Pod);
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    pub fn pods(&self) -> usize {
        self.pods.len()
    }

    /// Events kept (for tests and debugging).
    pub fn events(&self) -> usize {
        self.items
            .values()
            .filter(|i| matches!(i, Item::Event(_)))
            .count()
    }

    fn push(&mut self, e: RecordedEvent) {
        self.next += 1;
        self.items.insert(self.next, Item::Event(e));
    }

    /// Records the event when any pod is in flight.
    pub fn add_if_any(&mut self, e: impl FnOnce() -> RecordedEvent) -> bool {
        if self.pods.is_empty() {
            return false;
        }
        self.push(e());
        true
    }

    /// Records events about one pod when that pod is in flight.
    pub fn add_if_pod_in_flight(&mut self, uid: &str, events: Vec<RecordedEvent>) -> bool {
        if !self.pods.contains_key(uid) {
            return false;
        }
        for e in events {
            self.push(e);
        }
        true
    }

    /// The events since the pod's attempt began; `None` when it is not in flight.
    pub fn events_for(&self, uid: &str) -> Option<Vec<RecordedEvent>> {
        let start = *self.pods.get(uid)?;
        Some(
            self.items
                .range(start + 1..)
                .filter_map(|(_, i)| match i {
                    Item::Event(e) => Some(e.clone()),
                    Item::Pod => None,
                })
                .collect(),
        )
    }

    /// Ends the pod's tracking and drops the events no in-flight pod can still need.
    pub fn done(&mut self, uid: &str) {
        let Some(seq) = self.pods.remove(uid) else {
            return;
        };
        self.items.remove(&seq);
        while let Some(entry) = self.items.first_entry() {
            if matches!(entry.get(), Item::Pod) {
                break;
            }
            entry.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::events::events::NODE_ADD;

    fn node_of(e: &RecordedEvent) -> Option<&Node> {
        e.new
            .as_deref()
            .and_then(|o| (o as &dyn Any).downcast_ref::<Node>())
    }

    #[test]
    fn capture_keeps_known_objects_and_flags_others() {
        let shared = Arc::new(Node::default());
        let e = RecordedEvent::capture(NODE_ADD, None, Some(&shared));
        assert!(!e.opaque);
        let kept = node_of(&e).expect("a node");
        assert!(
            std::ptr::eq(kept, shared.as_ref()),
            "an Arc is shared, not copied"
        );
        let bare = Node::default();
        let e = RecordedEvent::capture(NODE_ADD, None, Some(&bare));
        assert!(!e.opaque && node_of(&e).is_some());
        let e = RecordedEvent::capture(NODE_ADD, Some(&42u8), None);
        assert!(e.opaque && e.old.is_none());
    }

    #[test]
    fn a_pod_sees_only_the_events_after_its_start() {
        let mut f = InFlight::default();
        let ev = || RecordedEvent::capture(NODE_ADD, None, None);
        assert!(!f.add_if_any(ev));
        f.start("a");
        assert!(f.add_if_any(ev));
        f.start("b");
        assert!(f.add_if_pod_in_flight("b", vec![ev(), ev()]));
        assert!(!f.add_if_pod_in_flight("c", vec![ev()]));
        assert_eq!(f.events_for("a").map(|v| v.len()), Some(3));
        assert_eq!(f.events_for("b").map(|v| v.len()), Some(2));
        assert!(f.events_for("c").is_none());
        f.done("b");
        assert_eq!(f.events(), 3);
        f.done("a");
        assert_eq!((f.pods(), f.events()), (0, 0));
    }
}
