//! Informer events mapped to the sets to sync: a pod goes to its controller (and its
//! expectations are credited), an orphan pod to every set whose selector matches it.

use super::kind::ReplicatedSet;
use super::sync::Controller;
use crate::controller::utils::controller_ref::controller_of;
use client_go_rs::informers::Deleted;
use client_go_rs::listers::object_key;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::collections::BTreeMap;

use crate::controller::utils::handlers::{enqueue_when_available, resolve_controller_ref};

impl<T: ReplicatedSet> Controller<T> {
    /// The key of the set `reference` points at, if it is one of ours and still the same
    /// object (uid) in the cache.
    fn resolve(
        &self,
        namespace: &str,
        reference: &OwnerReference,
    ) -> Option<(String, std::sync::Arc<T>)> {
        let set = resolve_controller_ref(&self.sets, T::KIND, namespace, reference)?;
        Some((object_key(set.as_ref()), set))
    }

    /// The sets whose selector matches an orphan pod (upstream's `getPodReplicaSets`).
    fn sets_matching(&self, pod: &Pod) -> Vec<String> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let empty = BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        self.sets
            .namespace(&ns)
            .list()
            .iter()
            .filter(|s| {
                s.selector()
                    .is_ok_and(|sel| !sel.is_nothing() && sel.matches(labels))
            })
            .map(|s| object_key(s.as_ref()))
            .collect()
    }

    fn namespace_of(pod: &Pod) -> String {
        pod.metadata.namespace.clone().unwrap_or_default()
    }

    pub fn on_pod_add(&self, pod: &Pod) {
        if pod.metadata.deletion_timestamp.is_some() {
            // Seen for the first time already terminating (e.g. after a restart): it counts
            // as a deletion, not a creation.
            self.on_pod_delete(pod);
            return;
        }
        let ns = Self::namespace_of(pod);
        if let Some(reference) = controller_of(&pod.metadata) {
            if let Some((key, _)) = self.resolve(&ns, reference) {
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        for key in self.sets_matching(pod) {
            self.queue.add(key);
        }
    }

    pub fn on_pod_update(&self, old: &Pod, cur: &Pod) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            // A resync: nothing changed.
            return;
        }
        let labels_changed = old.metadata.labels != cur.metadata.labels;
        if cur.metadata.deletion_timestamp.is_some() {
            // A graceful delete is the end of the pod for this controller: credit the
            // expected deletion now rather than when the kubelet finishes.
            self.on_pod_delete(cur);
            if labels_changed {
                self.on_pod_delete(old);
            }
            return;
        }
        let ns = Self::namespace_of(cur);
        let old_ref = controller_of(&old.metadata);
        let cur_ref = controller_of(&cur.metadata);
        let ref_changed = old_ref != cur_ref;
        if ref_changed
            && let Some(r) = old_ref
            && let Some((key, _)) = self.resolve(&ns, r)
        {
            self.queue.add(key);
        }
        if let Some(r) = cur_ref {
            if let Some((key, set)) = self.resolve(&ns, r) {
                enqueue_when_available(&self.queue, &key, set.min_ready_seconds(), old, cur);
                self.queue.add(key);
            }
            return;
        }
        if labels_changed || ref_changed {
            for key in self.sets_matching(cur) {
                self.queue.add(key);
            }
        }
    }

    pub fn on_pod_deleted(&self, deleted: &Deleted<Pod>) {
        self.on_pod_delete(deleted.object());
    }

    fn on_pod_delete(&self, pod: &Pod) {
        let ns = Self::namespace_of(pod);
        let Some(reference) = controller_of(&pod.metadata) else {
            // An orphan's deletion changes no set's count.
            return;
        };
        if let Some((key, _)) = self.resolve(&ns, reference) {
            self.expectations.deletion_observed(&key, &object_key(pod));
            self.queue.add(key);
        }
    }

    pub fn on_set_add(&self, set: &T) {
        self.queue.add(object_key(set));
    }

    pub fn on_set_update(&self, old: &T, cur: &T) {
        let key = object_key(cur);
        if old.meta().uid != cur.meta().uid {
            // Deleted and recreated under the same name between two events: the old
            // object's expectations do not apply to the new one.
            self.expectations.delete(&key);
        }
        self.queue.add(key);
    }

    pub fn on_set_deleted(&self, deleted: &Deleted<T>) {
        let key = object_key(deleted.object().as_ref());
        self.expectations.delete(&key);
        self.queue.add(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::utils::expectations::UidTrackingExpectations;
    use crate::controller::utils::pod_control::PodControl;
    use crate::controller::worker::drain_sorted;
    use client_go_rs::events::{EventBroadcaster, InMemoryEventSink};
    use client_go_rs::listers::{Indexer, Lister};
    use client_go_rs::workqueue::RateLimitingQueue;
    use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use kube::api::ObjectMeta;
    use std::sync::Arc;

    fn rs(name: &str, app: &str) -> Arc<ReplicaSet> {
        Arc::new(ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                selector: LabelSelector {
                    match_labels: Some([("app".to_string(), app.to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            }),
            status: None,
        })
    }

    fn pod(rv: &str, app: &str, owner_uid: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                labels: Some([("app".to_string(), app.to_string())].into()),
                owner_references: owner_uid.map(|uid| {
                    vec![OwnerReference {
                        kind: "ReplicaSet".into(),
                        name: uid.trim_start_matches("uid-").into(),
                        uid: uid.into(),
                        controller: Some(true),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    async fn controller() -> Controller<ReplicaSet> {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        let client = kube::Client::try_from(config).expect("client");
        let sets = Arc::new(Indexer::new());
        sets.insert(rs("a", "web"));
        sets.insert(rs("b", "db"));
        let broadcaster = EventBroadcaster::new(Arc::new(InMemoryEventSink::new()));
        Controller {
            client: client.clone(),
            sets: Lister::new(sets),
            pods: Lister::new(Arc::new(Indexer::new())),
            replica_sets: None,
            expectations: UidTrackingExpectations::new(),
            pod_control: PodControl::new(client, broadcaster.new_recorder("test", "")),
            queue: RateLimitingQueue::default_controller("test"),
            burst_replicas: 500,
        }
    }

    async fn drain(c: &Controller<ReplicaSet>) -> Vec<String> {
        drain_sorted(&c.queue).await
    }

    enum Ev {
        Add(Arc<Pod>),
        Update(Arc<Pod>, Arc<Pod>),
        Delete(Deleted<Pod>),
    }

    #[tokio::test]
    async fn pod_events_map_to_sets() {
        let cases = [
            (
                "owned add",
                Ev::Add(Arc::new(pod("1", "web", Some("uid-a")))),
                vec!["ns/a"],
            ),
            (
                "stale owner uid",
                Ev::Add(Arc::new(pod("1", "web", Some("uid-old")))),
                vec![],
            ),
            (
                "orphan add",
                Ev::Add(Arc::new(pod("1", "web", None))),
                vec!["ns/a"],
            ),
            (
                "orphan matching none",
                Ev::Add(Arc::new(pod("1", "x", None))),
                vec![],
            ),
            (
                "resync",
                Ev::Update(
                    Arc::new(pod("1", "web", Some("uid-a"))),
                    Arc::new(pod("1", "web", Some("uid-a"))),
                ),
                vec![],
            ),
            (
                "orphan relabelled",
                Ev::Update(
                    Arc::new(pod("1", "x", None)),
                    Arc::new(pod("2", "db", None)),
                ),
                vec!["ns/b"],
            ),
            (
                "released",
                Ev::Update(
                    Arc::new(pod("1", "web", Some("uid-a"))),
                    Arc::new(pod("2", "x", None)),
                ),
                vec!["ns/a"],
            ),
            (
                "tombstone",
                Ev::Delete(Deleted::FinalStateUnknown {
                    key: "ns/p".into(),
                    obj: Arc::new(pod("1", "web", Some("uid-b"))),
                }),
                vec!["ns/b"],
            ),
            (
                "orphan deleted",
                Ev::Delete(Deleted::Known(Arc::new(pod("1", "web", None)))),
                vec![],
            ),
        ];
        for (what, ev, want) in cases {
            let c = controller().await;
            match ev {
                Ev::Add(p) => c.on_pod_add(&p),
                Ev::Update(old, cur) => c.on_pod_update(&old, &cur),
                Ev::Delete(d) => c.on_pod_deleted(&d),
            }
            assert_eq!(drain(&c).await, want, "{what}");
        }
    }

    #[tokio::test]
    async fn pod_events_credit_expectations() {
        let c = controller().await;
        c.expectations.expect_creations("ns/a", 1);
        c.on_pod_add(&pod("1", "web", Some("uid-a")));
        assert!(c.expectations.satisfied("ns/a"));

        c.expectations
            .expect_deletions("ns/a", &["ns/p".to_string()]);
        let mut deleting = pod("2", "web", Some("uid-a"));
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        c.on_pod_update(&pod("1", "web", Some("uid-a")), &deleting);
        assert!(
            c.expectations.satisfied("ns/a"),
            "a graceful delete is observed"
        );
        // The final removal of the same pod is not counted a second time.
        c.expectations
            .expect_deletions("ns/a", &["ns/other".to_string()]);
        c.on_pod_deleted(&Deleted::Known(Arc::new(deleting)));
        assert!(!c.expectations.satisfied("ns/a"));
    }
}
