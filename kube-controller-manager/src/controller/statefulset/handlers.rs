//! Informer events mapped to the StatefulSets to sync: a pod or revision goes to its
//! controller, an orphan pod to every set whose selector matches it.

use super::sync::{Controller, KIND, min_ready_seconds};
use crate::controller::utils::controller_ref::controller_of;
use crate::controller::utils::pods::is_pod_ready;
use api_types::labels::Selector;
use client_go_rs::listers::object_key;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

impl Controller {
    /// The set `meta`'s controllerRef points at, if it is still that object in the cache.
    fn owner_of(&self, meta: &ObjectMeta) -> Option<Arc<StatefulSet>> {
        let reference = controller_of(meta)?;
        if reference.kind != KIND {
            return None;
        }
        let ns = meta.namespace.as_deref().unwrap_or_default();
        let set = self.sets.namespace(ns).get(&reference.name)?;
        (set.metadata.uid.as_deref() == Some(reference.uid.as_str())).then_some(set)
    }

    fn enqueue_owner(&self, meta: &ObjectMeta) {
        if let Some(set) = self.owner_of(meta) {
            self.queue.add(object_key(set.as_ref()));
        }
    }

    fn enqueue_matching(&self, meta: &ObjectMeta) {
        let ns = meta.namespace.as_deref().unwrap_or_default();
        let empty = BTreeMap::new();
        let labels = meta.labels.as_ref().unwrap_or(&empty);
        for set in self.sets.namespace(ns).list() {
            let matches = Selector::from_label_selector(set.spec.as_ref().map(|s| &s.selector))
                .is_ok_and(|s| !s.is_nothing() && !s.is_empty() && s.matches(labels));
            if matches {
                self.queue.add(object_key(set.as_ref()));
            }
        }
    }

    pub fn on_set(&self, set: &StatefulSet) {
        self.queue.add(object_key(set));
    }

    pub fn on_pod_add(&self, pod: &Pod) {
        if controller_of(&pod.metadata).is_some() {
            self.enqueue_owner(&pod.metadata);
        } else if pod.metadata.deletion_timestamp.is_none() {
            self.enqueue_matching(&pod.metadata);
        }
    }

    pub fn on_pod_update(&self, old: &Pod, cur: &Pod) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        let old_ref = controller_of(&old.metadata);
        let cur_ref = controller_of(&cur.metadata);
        if old_ref != cur_ref && old_ref.is_some() {
            self.enqueue_owner(&old.metadata);
        }
        if cur_ref.is_some() {
            if let Some(set) = self.owner_of(&cur.metadata) {
                let min_ready = min_ready_seconds(&set);
                if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(cur) {
                    // Available once minReadySeconds have passed.
                    let secs = u64::try_from(min_ready).unwrap_or(0) + 1;
                    self.queue
                        .add_after(object_key(set.as_ref()), Duration::from_secs(secs));
                }
                self.queue.add(object_key(set.as_ref()));
            }
        } else if old.metadata.labels != cur.metadata.labels || old_ref != cur_ref {
            self.enqueue_matching(&cur.metadata);
        }
    }

    pub fn on_owned_change(&self, meta: &ObjectMeta) {
        self.enqueue_owner(meta);
    }
}
