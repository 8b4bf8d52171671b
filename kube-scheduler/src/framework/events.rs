//! Cluster events that can make an unschedulable pod schedulable, and the per-plugin queueing
//! hints that decide whether a given event is worth a retry (upstream's `framework.ClusterEvent`
//! and `QueueingHintFn`).

use k8s_openapi::api::core::v1::Pod;
use std::any::Any;
use std::sync::Arc;

/// The kind of object an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventResource {
    /// Any pod (assigned or not).
    Pod,
    /// A pod bound to a node (others' pods, seen through the cache).
    AssignedPod,
    /// A pod not yet bound (the queue's own pods, e.g. its gates removed).
    UnscheduledPod,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CsiNode,
    CsiDriver,
    CsiStorageCapacity,
    VolumeAttachment,
    Namespace,
    /// Matches every resource.
    WildCard,
}

/// What happened, as a bit set so a registration can name several.
pub type ActionType = u32;
pub mod action {
    use super::ActionType;
    pub const ADD: ActionType = 1;
    pub const DELETE: ActionType = 1 << 1;
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = 1 << 2;
    pub const UPDATE_NODE_LABEL: ActionType = 1 << 3;
    pub const UPDATE_NODE_TAINT: ActionType = 1 << 4;
    pub const UPDATE_NODE_CONDITION: ActionType = 1 << 5;
    pub const UPDATE_NODE_ANNOTATION: ActionType = 1 << 6;
    pub const UPDATE_POD_LABEL: ActionType = 1 << 7;
    pub const UPDATE_POD_SCALE_DOWN: ActionType = 1 << 8;
    pub const UPDATE_POD_TOLERATIONS: ActionType = 1 << 9;
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ActionType = 1 << 10;
    /// Any other update.
    pub const UPDATE_OTHER: ActionType = 1 << 11;
    pub const UPDATE: ActionType = UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_OTHER;
    pub const ALL: ActionType = ADD | DELETE | UPDATE;
}

/// One cluster event (or, in a registration, the set of events a plugin cares about).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClusterEvent {
    pub resource: EventResource,
    pub action: ActionType,
    /// The label metrics and logs use, e.g. `NodeAdd`.
    pub label: &'static str,
}

impl ClusterEvent {
    pub const fn new(resource: EventResource, action: ActionType, label: &'static str) -> Self {
        Self {
            resource,
            action,
            label,
        }
    }

    /// Whether this registration covers `event`.
    pub fn covers(&self, event: &ClusterEvent) -> bool {
        (self.resource == EventResource::WildCard
            || self.resource == event.resource
            || (self.resource == EventResource::Pod
                && matches!(
                    event.resource,
                    EventResource::AssignedPod | EventResource::UnscheduledPod
                )))
            && self.action & event.action != 0
    }
}

/// Whether an event may make a pod schedulable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingHint {
    /// Nothing this plugin rejected for could have changed: leave the pod where it is.
    Skip,
    /// Retry the pod.
    Queue,
}

/// Decides for one pod whether an event is worth a retry; `old`/`new` are the event's objects
/// (`Pod`, `Node`, ...; `None` on add/delete respectively).
pub type QueueingHintFn =
    Arc<dyn Fn(&Pod, Option<&dyn Any>, Option<&dyn Any>) -> QueueingHint + Send + Sync>;

/// A plugin's registration: the events it cares about, with an optional hint (none = always queue).
#[derive(Clone)]
pub struct ClusterEventWithHint {
    pub event: ClusterEvent,
    pub hint: Option<QueueingHintFn>,
}

impl ClusterEventWithHint {
    pub fn new(resource: EventResource, action: ActionType) -> Self {
        Self {
            event: ClusterEvent::new(resource, action, ""),
            hint: None,
        }
    }

    pub fn with_hint(
        mut self,
        hint: impl Fn(&Pod, Option<&dyn Any>, Option<&dyn Any>) -> QueueingHint + Send + Sync + 'static,
    ) -> Self {
        self.hint = Some(Arc::new(hint));
        self
    }
}

impl std::fmt::Debug for ClusterEventWithHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterEventWithHint")
            .field("event", &self.event)
            .field("hint", &self.hint.is_some())
            .finish()
    }
}

/// The events the scheduler itself generates, with upstream's labels.
#[allow(clippy::module_inception)]
pub mod events {
    use super::{ClusterEvent, EventResource as R, action as a};
    pub const NODE_ADD: ClusterEvent = ClusterEvent::new(R::Node, a::ADD, "NodeAdd");
    pub const ASSIGNED_POD_ADD: ClusterEvent =
        ClusterEvent::new(R::AssignedPod, a::ADD, "AssignedPodAdd");
    pub const ASSIGNED_POD_DELETE: ClusterEvent =
        ClusterEvent::new(R::AssignedPod, a::DELETE, "AssignedPodDelete");
    /// Moves every unschedulable pod (the periodic flush and preemption's victims).
    pub const UNSCHEDULABLE_TIMEOUT: ClusterEvent =
        ClusterEvent::new(R::WildCard, a::ALL, "UnschedulableTimeout");
    pub const FORCE_ACTIVATE: ClusterEvent =
        ClusterEvent::new(R::WildCard, a::ALL, "ForceActivate");
}
