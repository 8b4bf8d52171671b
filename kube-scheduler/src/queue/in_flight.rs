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

/// An owned copy of a known API object; the flag is false when `obj` was of another type.
fn own(obj: Option<&dyn Any>) -> (Option<Object>, bool) {
    let Some(obj) = obj else {
        return (None, true);
    };
    macro_rules! try_types {
        ($($t:ty),*) => {
            $(if let Some(x) = obj.downcast_ref::<$t>() {
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
