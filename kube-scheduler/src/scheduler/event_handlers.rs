//! Informer handlers: bound pods and nodes go to the cache, pods waiting for one of our
//! profiles go to the queue, and every change that may help a rejected pod becomes a cluster
//! event for the queue (upstream's `addAllEventHandlers`).

use super::Shared;
use crate::framework::PodInfo;
use crate::framework::events::{ActionType, ClusterEvent, EventResource as R, action as a, events};
use client_go_rs::informers::InformerObject;
use client_go_rs::informers::{EventHandlerFuncs, InformerOptions, SharedInformerFactory};
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, StorageClass};
use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

/// The pods the scheduler watches: everything not finished (upstream's field selector).
pub fn pod_informer_options() -> InformerOptions {
    InformerOptions::default().fields("status.phase!=Succeeded,status.phase!=Failed")
}

fn assigned(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

impl Shared {
    fn responsible_for(&self, pod: &Pod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler");
        self.profiles.contains_key(name)
    }

    fn move_all(&self, event: ClusterEvent, old: Option<&dyn Any>, new: Option<&dyn Any>) {
        self.queue.move_all_to_active_or_backoff(event, old, new);
    }

    fn on_pod_add(&self, pod: &Arc<Pod>) {
        if assigned(pod) {
            if let Some(info) = self.cache.add_pod(pod.clone()) {
                self.queue.assigned_pod_added(&info);
            }
        } else if self.responsible_for(pod) {
            self.queue.add(pod.clone());
        }
    }

    fn on_pod_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        match (assigned(old), assigned(new)) {
            (true, true) => {
                self.cache.update_pod(old, new.clone());
                let event = assigned_pod_update_event(old, new);
                self.queue
                    .assigned_pod_updated(old, &PodInfo::new(new.clone()), event);
            }
            (false, true) => {
                // Bound (by us or someone else): it leaves the queue and enters the cache.
                if self.responsible_for(old) {
                    self.queue.delete(old);
                }
                if let Some(info) = self.cache.add_pod(new.clone()) {
                    self.queue.assigned_pod_added(&info);
                }
            }
            (true, false) => {
                self.cache.remove_pod(old);
            }
            (false, false) => {
                if self.responsible_for(new) && !self.cache.is_assumed_pod(uid(new)) {
                    self.queue.update(old, new.clone());
                }
            }
        }
    }

    fn on_pod_delete(&self, pod: &Arc<Pod>) {
        if assigned(pod) {
            self.cache.remove_pod(pod);
            self.move_all(events::ASSIGNED_POD_DELETE, Some(pod as &dyn Any), None);
        } else if self.responsible_for(pod) {
            self.queue.delete(pod);
        }
    }

    fn on_node_add(&self, node: &Arc<Node>) {
        self.cache.add_node(node.clone());
        self.move_all(events::NODE_ADD, None, Some(node as &dyn Any));
    }

    fn on_node_update(&self, old: &Arc<Node>, new: &Arc<Node>) {
        self.cache.update_node(old, new.clone());
        for event in node_update_events(old, new) {
            self.move_all(event, Some(old as &dyn Any), Some(new as &dyn Any));
        }
    }

    fn on_node_delete(&self, node: &Arc<Node>) {
        self.cache.remove_node(node);
    }
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// Which node changes happened, one event per kind, as upstream's `nodeSchedulingPropertiesChange`.
pub fn node_update_events(old: &Node, new: &Node) -> Vec<ClusterEvent> {
    let mut out = Vec::new();
    let status = |n: &Node| n.status.clone().unwrap_or_default();
    let (os, ns) = (status(old), status(new));
    let spec = |n: &Node| n.spec.clone().unwrap_or_default();
    let (osp, nsp) = (spec(old), spec(new));
    if osp.unschedulable.unwrap_or(false) != nsp.unschedulable.unwrap_or(false) {
        out.push(ClusterEvent::new(
            R::Node,
            a::UPDATE_NODE_TAINT,
            "NodeSpecUnschedulableChange",
        ));
    }
    if os.allocatable != ns.allocatable {
        out.push(ClusterEvent::new(
            R::Node,
            a::UPDATE_NODE_ALLOCATABLE,
            "NodeAllocatableChange",
        ));
    }
    if old.metadata.labels != new.metadata.labels {
        out.push(ClusterEvent::new(
            R::Node,
            a::UPDATE_NODE_LABEL,
            "NodeLabelChange",
        ));
    }
    if osp.taints != nsp.taints {
        out.push(ClusterEvent::new(
            R::Node,
            a::UPDATE_NODE_TAINT,
            "NodeTaintChange",
        ));
    }
    let conds = |s: &k8s_openapi::api::core::v1::NodeStatus| {
        s.conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect::<HashSet<_>>()
    };
    if conds(&os) != conds(&ns) {
        out.push(ClusterEvent::new(
            R::Node,
            a::UPDATE_NODE_CONDITION,
            "NodeConditionChange",
        ));
    }
    if old.metadata.annotations != new.metadata.annotations {
        out.push(ClusterEvent::new(
            R::Node,
            a::UPDATE_NODE_ANNOTATION,
            "NodeAnnotationChange",
        ));
    }
    out
}

/// The kind of change of a bound pod (label change, scale down, anything else).
pub fn assigned_pod_update_event(old: &Pod, new: &Pod) -> ClusterEvent {
    if old.metadata.labels != new.metadata.labels {
        return ClusterEvent::new(R::AssignedPod, a::UPDATE_POD_LABEL, "AssignedPodUpdate");
    }
    let old_req = crate::framework::resource::pod_requests(old, false);
    let new_req = crate::framework::resource::pod_requests(new, false);
    if old_req != new_req {
        return ClusterEvent::new(
            R::AssignedPod,
            a::UPDATE_POD_SCALE_DOWN,
            "AssignedPodUpdate",
        );
    }
    ClusterEvent::new(R::AssignedPod, a::UPDATE_OTHER, "AssignedPodUpdate")
}

/// Adds handlers on pods and nodes, and on the other resources some plugin registered events
/// for (volumes, storage classes, CSI objects).
pub fn register(shared: &Arc<Shared>, factory: &SharedInformerFactory) {
    let pods = factory.informer_with::<Pod>(pod_informer_options());
    let (s1, s2, s3) = (shared.clone(), shared.clone(), shared.clone());
    pods.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |p, _| s1.on_pod_add(p))
            .on_update(move |o, n| s2.on_pod_update(o, n))
            .on_delete(move |d| s3.on_pod_delete(d.object())),
    );
    let nodes = factory.informer::<Node>();
    let (s1, s2, s3) = (shared.clone(), shared.clone(), shared.clone());
    nodes.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |n, _| s1.on_node_add(n))
            .on_update(move |o, n| s2.on_node_update(o, n))
            .on_delete(move |d| s3.on_node_delete(d.object())),
    );

    let wanted: HashSet<R> = shared
        .profiles
        .values()
        .flat_map(|fw| fw.events_to_register())
        .map(|(_, e)| e.event.resource)
        .collect();
    let want = |r: R| wanted.contains(&r) || wanted.contains(&R::WildCard);
    if want(R::PersistentVolume) {
        forward::<PersistentVolume>(shared, factory, R::PersistentVolume, "PersistentVolume");
    }
    if want(R::PersistentVolumeClaim) {
        forward::<PersistentVolumeClaim>(
            shared,
            factory,
            R::PersistentVolumeClaim,
            "PersistentVolumeClaim",
        );
    }
    if want(R::StorageClass) {
        forward::<StorageClass>(shared, factory, R::StorageClass, "StorageClass");
    }
    if want(R::CsiNode) {
        forward::<CSINode>(shared, factory, R::CsiNode, "CSINode");
    }
    if want(R::CsiDriver) {
        forward::<CSIDriver>(shared, factory, R::CsiDriver, "CSIDriver");
    }
}

/// Turns every add/update/delete of `K` into a cluster event for the queue (objects are
/// passed as `Arc`s, which the queue keeps for in-flight pods without copying).
fn forward<K>(
    shared: &Arc<Shared>,
    factory: &SharedInformerFactory,
    resource: R,
    kind: &'static str,
) where
    K: InformerObject + Any,
    K::DynamicType: Default,
{
    let labels: [(ActionType, &'static str); 3] = match kind {
        "PersistentVolume" => [
            (a::ADD, "PersistentVolumeAdd"),
            (a::UPDATE, "PersistentVolumeUpdate"),
            (a::DELETE, "PersistentVolumeDelete"),
        ],
        "PersistentVolumeClaim" => [
            (a::ADD, "PersistentVolumeClaimAdd"),
            (a::UPDATE, "PersistentVolumeClaimUpdate"),
            (a::DELETE, "PersistentVolumeClaimDelete"),
        ],
        "StorageClass" => [
            (a::ADD, "StorageClassAdd"),
            (a::UPDATE, "StorageClassUpdate"),
            (a::DELETE, "StorageClassDelete"),
        ],
        "CSINode" => [
            (a::ADD, "CSINodeAdd"),
            (a::UPDATE, "CSINodeUpdate"),
            (a::DELETE, "CSINodeDelete"),
        ],
        _ => [
            (a::ADD, "CSIDriverAdd"),
            (a::UPDATE, "CSIDriverUpdate"),
            (a::DELETE, "CSIDriverDelete"),
        ],
    };
    let [add, update, delete] =
        labels.map(|(action, label)| ClusterEvent::new(resource, action, label));
    let (s1, s2, s3) = (shared.clone(), shared.clone(), shared.clone());
    factory.informer::<K>().add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |o: &Arc<K>, initial| {
                if !initial {
                    s1.move_all(add, None, Some(o as &dyn Any));
                }
            })
            .on_update(move |o: &Arc<K>, n: &Arc<K>| {
                s2.move_all(update, Some(o as &dyn Any), Some(n as &dyn Any));
            })
            .on_delete(move |d| s3.move_all(delete, Some(d.object() as &dyn Any), None)),
    );
}
