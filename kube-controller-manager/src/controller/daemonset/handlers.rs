//! Informer events mapped to the DaemonSets to sync: a pod or revision goes to its
//! controller (a pod's creation or deletion credits the expectations), an orphan to every
//! DaemonSet selecting it, a node change to every DaemonSet whose placement it changes.

use super::eligibility::node_should_run;
use super::sync::Controller;
use crate::controller::utils::controller_ref::controller_of;
use crate::controller::utils::pods::is_pod_ready;
use api_types::labels::Selector;
use client_go_rs::informers::Deleted;
use client_go_rs::listers::object_key;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod};
use kube::api::ObjectMeta;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

impl Controller {
    /// The key of the DaemonSet `meta`'s controller reference names, if it is in the cache
    /// with that uid.
    fn owner_key(&self, meta: &ObjectMeta) -> Option<(String, Arc<DaemonSet>)> {
        let reference = controller_of(meta)?;
        if reference.kind != "DaemonSet" {
            return None;
        }
        let ns = meta.namespace.as_deref().unwrap_or("");
        let ds = self.daemonsets.namespace(ns).get(&reference.name)?;
        (ds.metadata.uid.as_deref() == Some(reference.uid.as_str()))
            .then(|| (object_key(ds.as_ref()), ds))
    }

    /// The DaemonSets of the namespace whose selector matches an orphan's labels.
    fn selecting(&self, meta: &ObjectMeta) -> Vec<String> {
        let ns = meta.namespace.as_deref().unwrap_or("");
        let empty = BTreeMap::new();
        let labels = meta.labels.as_ref().unwrap_or(&empty);
        self.daemonsets
            .namespace(ns)
            .list()
            .iter()
            .filter(|ds| {
                Selector::from_label_selector(ds.spec.as_ref().map(|s| &s.selector))
                    .is_ok_and(|s| !s.is_empty() && !s.is_nothing() && s.matches(labels))
            })
            .map(|ds| object_key(ds.as_ref()))
            .collect()
    }

    pub fn on_ds_add(&self, ds: &DaemonSet) {
        self.queue.add(object_key(ds));
    }

    pub fn on_ds_update(&self, old: &DaemonSet, cur: &DaemonSet) {
        let key = object_key(cur);
        if old.metadata.uid != cur.metadata.uid {
            // Replaced under the same name: the old object's expectations are void.
            self.expectations.delete(&key);
        }
        self.queue.add(key);
    }

    pub fn on_ds_deleted(&self, deleted: &Deleted<DaemonSet>) {
        self.queue.add(object_key(deleted.object().as_ref()));
    }

    pub fn on_pod_add(&self, pod: &Pod) {
        if pod.metadata.deletion_timestamp.is_some() {
            // Already terminating when first seen (e.g. after a restart): a deletion.
            self.on_pod_delete(pod);
            return;
        }
        if controller_of(&pod.metadata).is_some() {
            if let Some((key, _)) = self.owner_key(&pod.metadata) {
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        for key in self.selecting(&pod.metadata) {
            self.queue.add(key);
        }
    }

    pub fn on_pod_update(&self, old: &Pod, cur: &Pod) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        if cur.metadata.deletion_timestamp.is_some() {
            // A graceful delete ends the pod for this controller: replace it now rather
            // than when the kubelet finishes.
            self.on_pod_delete(cur);
            return;
        }
        let old_ref = controller_of(&old.metadata);
        let cur_ref = controller_of(&cur.metadata);
        let ref_changed = old_ref != cur_ref;
        if ref_changed && let Some((key, _)) = self.owner_key(&old.metadata) {
            self.queue.add(key);
        }
        if cur_ref.is_some() {
            if let Some((key, ds)) = self.owner_key(&cur.metadata) {
                let min_ready = ds
                    .spec
                    .as_ref()
                    .and_then(|s| s.min_ready_seconds)
                    .unwrap_or(0);
                if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(cur) {
                    let secs = u64::try_from(min_ready).unwrap_or(0) + 1;
                    self.queue.add_after(key.clone(), Duration::from_secs(secs));
                }
                self.queue.add(key);
            }
            return;
        }
        if ref_changed || old.metadata.labels != cur.metadata.labels {
            for key in self.selecting(&cur.metadata) {
                self.queue.add(key);
            }
        }
    }

    pub fn on_pod_deleted(&self, deleted: &Deleted<Pod>) {
        self.on_pod_delete(deleted.object());
    }

    fn on_pod_delete(&self, pod: &Pod) {
        if let Some((key, _)) = self.owner_key(&pod.metadata) {
            self.expectations.deletion_observed(&key);
            self.queue.add(key);
        }
    }

    pub fn on_node_add(&self, node: &Node) {
        for ds in self.daemonsets.list() {
            if node_should_run(node, &ds).should_run {
                self.queue.add(object_key(ds.as_ref()));
            }
        }
    }

    pub fn on_node_update(&self, old: &Node, cur: &Node) {
        if ignore_node_update(old, cur) {
            return;
        }
        for ds in self.daemonsets.list() {
            if node_should_run(old, &ds) != node_should_run(cur, &ds) {
                self.queue.add(object_key(ds.as_ref()));
            }
        }
    }

    /// A deleted node's unscheduled pods are only cleaned up by a sync.
    pub fn on_node_deleted(&self, _deleted: &Deleted<Node>) {
        for ds in self.daemonsets.list() {
            self.queue.add(object_key(ds.as_ref()));
        }
    }

    pub fn on_revision_add(&self, rev: &ControllerRevision) {
        self.enqueue_revision(&rev.metadata);
    }

    pub fn on_revision_update(&self, old: &ControllerRevision, cur: &ControllerRevision) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        if controller_of(&old.metadata) != controller_of(&cur.metadata) {
            self.enqueue_revision(&old.metadata);
        }
        self.enqueue_revision(&cur.metadata);
    }

    pub fn on_revision_deleted(&self, deleted: &Deleted<ControllerRevision>) {
        if let Some((key, _)) = self.owner_key(&deleted.object().metadata) {
            self.queue.add(key);
        }
    }

    fn enqueue_revision(&self, meta: &ObjectMeta) {
        if controller_of(meta).is_some() {
            if let Some((key, _)) = self.owner_key(meta) {
                self.queue.add(key);
            }
            return;
        }
        for key in self.selecting(meta) {
            self.queue.add(key);
        }
    }
}

/// Upstream's `shouldIgnoreNodeUpdate`: only the spec, metadata and condition statuses
/// decide where daemons run; heartbeats are noise.
fn ignore_node_update(old: &Node, cur: &Node) -> bool {
    let statuses = |cs: Option<&Vec<NodeCondition>>| -> BTreeMap<String, String> {
        cs.into_iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect()
    };
    let conditions = |n: &Node| statuses(n.status.as_ref().and_then(|s| s.conditions.as_ref()));
    if conditions(old) != conditions(cur) {
        return false;
    }
    let strip = |n: &Node| {
        let mut n = n.clone();
        n.metadata.resource_version = None;
        n.metadata.managed_fields = None;
        n.status = None;
        n
    };
    strip(old) == strip(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus, Taint};

    fn node(rv: &str, label: &str, ready: &str, heartbeat: i64) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("n".into()),
                resource_version: Some(rv.into()),
                labels: Some([("role".to_string(), label.to_string())].into()),
                ..Default::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: ready.into(),
                    last_heartbeat_time: Some(
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            jiff::Timestamp::from_second(heartbeat).unwrap_or_default(),
                        ),
                    ),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn node_updates_that_matter() {
        let base = node("1", "a", "True", 1);
        let mut tainted = node("2", "a", "True", 1);
        tainted.spec = Some(NodeSpec {
            taints: Some(vec![Taint {
                key: "k".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let cases = [
            ("heartbeat", node("2", "a", "True", 9), true),
            ("relabel", node("2", "b", "True", 1), false),
            ("condition", node("2", "a", "False", 1), false),
            ("taint", tainted, false),
        ];
        for (what, cur, ignored) in cases {
            assert_eq!(ignore_node_update(&base, &cur), ignored, "{what}");
        }
    }
}
