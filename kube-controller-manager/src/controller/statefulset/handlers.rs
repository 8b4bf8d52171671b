//! Informer events mapped to the StatefulSets to sync: a pod or revision goes to its
//! controller, an orphan pod to every set whose selector matches it.

use super::sync::{Controller, KIND, min_ready_seconds};
use crate::controller::utils::controller_ref::controller_of;
use crate::controller::utils::handlers::{enqueue_when_available, resolve_controller_ref};
use api_types::labels::Selector;
use client_go_rs::listers::object_key;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;
use std::sync::Arc;

impl Controller {
    /// The set `meta`'s controllerRef points at, if it is still that object in the cache.
    fn owner_of(&self, meta: &ObjectMeta) -> Option<Arc<StatefulSet>> {
        let ns = meta.namespace.as_deref().unwrap_or_default();
        resolve_controller_ref(&self.sets, KIND, ns, controller_of(meta)?)
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
                let key = object_key(set.as_ref());
                enqueue_when_available(&self.queue, &key, min_ready_seconds(&set), old, cur);
                self.queue.add(key);
            }
        } else if old.metadata.labels != cur.metadata.labels || old_ref != cur_ref {
            self.enqueue_matching(&cur.metadata);
        }
    }

    pub fn on_owned_change(&self, meta: &ObjectMeta) {
        self.enqueue_owner(meta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::worker::drain_sorted;
    use client_go_rs::events::{EventBroadcaster, InMemoryEventSink};
    use client_go_rs::listers::{Indexer, Lister};
    use client_go_rs::workqueue::RateLimitingQueue;
    use k8s_openapi::api::apps::v1::StatefulSetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};

    fn set(name: &str, app: &str, min_ready: i32) -> Arc<StatefulSet> {
        Arc::new(StatefulSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(StatefulSetSpec {
                min_ready_seconds: Some(min_ready),
                selector: LabelSelector {
                    match_labels: Some([("app".to_string(), app.to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            }),
            status: None,
        })
    }

    fn pod(rv: &str, app: &str, owner_uid: Option<&str>, ready: bool) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some("a-0".into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                labels: Some([("app".to_string(), app.to_string())].into()),
                owner_references: owner_uid.map(|uid| {
                    vec![OwnerReference {
                        kind: KIND.into(),
                        name: uid.trim_start_matches("uid-").into(),
                        uid: uid.into(),
                        controller: Some(true),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            spec: None,
            status: Some(k8s_openapi::api::core::v1::PodStatus {
                conditions: Some(vec![k8s_openapi::api::core::v1::PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    last_transition_time: Some(Time(jiff::Timestamp::now())),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    fn controller() -> Controller {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        let client = kube::Client::try_from(config).expect("client");
        let sets = Arc::new(Indexer::new());
        sets.insert(set("a", "web", 0));
        sets.insert(set("b", "db", 10));
        let broadcaster = EventBroadcaster::new(Arc::new(InMemoryEventSink::new()));
        Controller {
            client,
            sets: Lister::new(sets),
            pods: Lister::new(Arc::new(Indexer::new())),
            revisions: Lister::new(Arc::new(Indexer::new())),
            claims: Lister::new(Arc::new(Indexer::new())),
            recorder: broadcaster.new_recorder("test", ""),
            queue: RateLimitingQueue::default_controller("test"),
        }
    }

    async fn drain(c: &Controller) -> Vec<String> {
        drain_sorted(&c.queue).await
    }

    #[tokio::test]
    async fn pod_events_map_to_sets() {
        // (what, old pod (None: an add), new pod, wanted keys)
        let cases = [
            (
                "owned add",
                None,
                pod("1", "web", Some("uid-a"), false),
                vec!["ns/a"],
            ),
            (
                "stale owner uid",
                None,
                pod("1", "web", Some("uid-x"), false),
                vec![],
            ),
            (
                "orphan add",
                None,
                pod("1", "db", None, false),
                vec!["ns/b"],
            ),
            (
                "orphan matching none",
                None,
                pod("1", "x", None, false),
                vec![],
            ),
            (
                "resync",
                Some(pod("1", "web", Some("uid-a"), false)),
                pod("1", "web", Some("uid-a"), true),
                vec![],
            ),
            (
                "released",
                Some(pod("1", "web", Some("uid-a"), false)),
                pod("2", "x", None, false),
                vec!["ns/a"],
            ),
            (
                "relabelled orphan",
                Some(pod("1", "x", None, false)),
                pod("2", "web", None, false),
                vec!["ns/a"],
            ),
        ];
        for (what, old, cur, want) in cases {
            let c = controller();
            match old {
                None => c.on_pod_add(&cur),
                Some(old) => c.on_pod_update(&old, &cur),
            }
            assert_eq!(drain(&c).await, want, "{what}");
        }
    }
}
