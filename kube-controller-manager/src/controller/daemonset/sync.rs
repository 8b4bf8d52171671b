//! One sync of a DaemonSet: revisions, then a pod per eligible node, then the rolling
//! update's step, then the status (upstream's `syncDaemonSet`).

use super::backoff::FailedPodsBackoff;
use super::eligibility::{add_daemon_tolerations, node_should_run, pin_to_node, target_node};
use super::plan::{
    NodePods, allows_surge, budget, is_rolling_update, node_actions, rolling_update,
};
use super::revision::{
    REVISION_HASH_LABEL, TEMPLATE_GENERATION_LABEL, is_pod_updated, template_generation,
};
use super::status::{calculate_status, status_changed};
use crate::controller::utils::controller_ref::{
    ClaimOwner, claim_objects, new_controller_ref, object_reference, recheck_owner,
};
use crate::controller::utils::expectations::ControllerExpectations;
use crate::controller::utils::pod_control::{PodControl, is_namespace_terminating};
use crate::controller::utils::pods::{is_pod_available, pods_by_controller, slow_start_batch};
use anyhow::Context as _;
use api_types::labels::Selector;
use client_go_rs::events::EventType;
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::join_all;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplateSpec};
use kube::api::PostParams;
use kube::{Api, Client};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most this many pods are created or deleted per sync (upstream's DaemonSet
/// `BurstReplicas`).
pub const BURST_REPLICAS: usize = 250;

pub struct Controller {
    pub client: Client,
    pub daemonsets: Lister<DaemonSet>,
    pub pods: Lister<Pod>,
    pub nodes: Lister<Node>,
    pub revisions: Lister<ControllerRevision>,
    pub expectations: ControllerExpectations,
    pub pod_control: PodControl,
    pub queue: RateLimitingQueue<String>,
    pub backoff: FailedPodsBackoff,
}

/// The pods to delete and the nodes to create a pod on, in one batch.
#[derive(Default)]
struct Changes {
    delete: Vec<Arc<Pod>>,
    create_on: Vec<String>,
}

impl Controller {
    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            tracing::warn!(%key, "ignoring an invalid key");
            return Ok(());
        };
        let Some(ds) = self.daemonsets.namespace(ns).get(name) else {
            self.expectations.delete(&key);
            return Ok(());
        };
        let selector = match Selector::from_label_selector(ds.spec.as_ref().map(|s| &s.selector)) {
            Ok(s) => s,
            Err(err) => {
                // Retrying cannot fix a bad selector; an update of the object requeues it.
                tracing::warn!(%key, "not syncing: {err}");
                return Ok(());
            }
        };
        let me = object_reference(&ds.metadata, "apps/v1", "DaemonSet");
        if selector.is_empty() {
            self.pod_control.recorder.event(
                &me,
                EventType::Warning,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            );
            return Ok(());
        }
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let nodes = self.nodes.list();
        let (cur, old) = self.construct_history(&ds, &selector).await?;
        let hash = cur
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(REVISION_HASH_LABEL))
            .cloned()
            .unwrap_or_default();

        // Checked before reading the pods: a creation observed after the read would
        // otherwise make a stale view look complete.
        let satisfied = self.expectations.satisfied(&key);
        let claimed = self.claim_pods(&ds, &selector).await?;
        if !satisfied {
            // Creations or deletions are in flight: only report what the cache shows.
            return self
                .update_status(&key, &ds, &claimed, &nodes, &hash, false)
                .await;
        }
        let result = self
            .update_daemonset(&key, &ds, &claimed, &nodes, &hash, &old)
            .await;
        let status = self
            .update_status(&key, &ds, &claimed, &nodes, &hash, true)
            .await;
        result.and(status)
    }

    async fn update_daemonset(
        &self,
        key: &str,
        ds: &DaemonSet,
        claimed: &[Arc<Pod>],
        nodes: &[Arc<Node>],
        hash: &str,
        old: &[ControllerRevision],
    ) -> anyhow::Result<()> {
        let changed = self.manage(key, ds, nodes, hash, claimed).await?;
        // The rolling update works from the same cache view, so only when `manage` changed
        // nothing (upstream waits for the expectations, which is the same here).
        let node_pods = by_node(claimed, false);
        if changed == 0 && self.expectations.satisfied(key) && is_rolling_update(ds) {
            let mut wanted = node_pods.clone();
            let mut desired = 0;
            for node in nodes {
                if node_should_run(node, ds).should_run {
                    desired += 1;
                    let name = node.metadata.name.clone().unwrap_or_default();
                    wanted.entry(name).or_default();
                }
            }
            let (max_surge, max_unavailable) = budget(ds, desired);
            let generation = template_generation(ds);
            let min_ready = min_ready_seconds(ds);
            let now = Timestamp::now();
            let (delete, create_on) = rolling_update(
                &wanted,
                max_surge,
                max_unavailable,
                |p| is_pod_updated(p.metadata.labels.as_ref(), hash, generation.as_deref()),
                |p| is_pod_available(p, min_ready, now),
            );
            self.sync_nodes(key, ds, hash, Changes { delete, create_on })
                .await?;
        }
        self.cleanup_history(ds, old, &node_pods).await
    }

    /// The DaemonSet's pods, adopting matching orphans and releasing pods that stopped
    /// matching (terminal and terminating ones included, as upstream).
    async fn claim_pods(
        &self,
        ds: &DaemonSet,
        selector: &Selector,
    ) -> anyhow::Result<Vec<Arc<Pod>>> {
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        let name = ds.metadata.name.as_deref().unwrap_or("");
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        let candidates = pods_by_controller(&self.pods, ns, &uid, true)
            .unwrap_or_else(|| self.pods.namespace(ns).list());
        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let ds_api: Api<DaemonSet> = Api::namespaced(self.client.clone(), ns);
        let owner = ClaimOwner {
            meta: &ds.metadata,
            api_version: "apps/v1",
            kind: "DaemonSet",
        };
        claim_objects(&pods_api, owner, selector, candidates, || {
            recheck_owner(&ds_api, name, ds.metadata.uid.as_deref())
        })
        .await
    }

    /// A pod for every node that should run one, none elsewhere (upstream's `manage`).
    async fn manage(
        &self,
        key: &str,
        ds: &DaemonSet,
        nodes: &[Arc<Node>],
        hash: &str,
        claimed: &[Arc<Pod>],
    ) -> anyhow::Result<usize> {
        let node_pods = by_node(claimed, true);
        let surge = allows_surge(ds);
        let min_ready = min_ready_seconds(ds);
        let now = Timestamp::now();
        let me = object_reference(&ds.metadata, "apps/v1", "DaemonSet");
        let uid = ds.metadata.uid.as_deref().unwrap_or("");
        let mut changes = Changes::default();
        let mut known = BTreeSet::new();
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            known.insert(name.clone());
            let actions = node_actions(
                node_should_run(node, ds),
                node_pods.get(&name),
                surge,
                |p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(REVISION_HASH_LABEL))
                        .map(String::as_str)
                        == Some(hash)
                },
                |p| is_pod_available(p, min_ready, now),
            );
            if actions.create {
                changes.create_on.push(name.clone());
            }
            changes.delete.extend(actions.delete);
            for pod in actions.failed {
                // The kubelet may keep rejecting the pod: replace it with backoff.
                let backoff_key = format!("{uid}/{name}");
                let at = Instant::now();
                if let Some(delay) = self.backoff.remaining(&backoff_key, at) {
                    self.queue.add_after(key.to_string(), delay);
                    continue;
                }
                self.backoff.next(&backoff_key, at);
                let pod_name = pod.metadata.name.as_deref().unwrap_or("");
                let ns = pod.metadata.namespace.as_deref().unwrap_or("");
                self.pod_control.recorder.event(
                    &me,
                    EventType::Warning,
                    "FailedDaemonPod",
                    format!("Found failed daemon pod {ns}/{pod_name} on node {name}, will try to kill it"),
                );
                changes.delete.push(pod);
            }
        }
        // Pods pinned to nodes that are gone and never scheduled: nothing else removes them.
        for (node, pods) in &node_pods {
            if known.contains(node) {
                continue;
            }
            changes.delete.extend(
                pods.iter()
                    .filter(|p| {
                        p.spec
                            .as_ref()
                            .and_then(|s| s.node_name.as_deref())
                            .is_none_or(str::is_empty)
                    })
                    .cloned(),
            );
        }
        self.sync_nodes(key, ds, hash, changes).await
    }

    /// Creates pods (slow start) pinned to their nodes and deletes pods, at most
    /// [`BURST_REPLICAS`] of each, expecting them first so the next sync waits for the cache.
    /// Returns how many creations and deletions it started.
    async fn sync_nodes(
        &self,
        key: &str,
        ds: &DaemonSet,
        hash: &str,
        mut changes: Changes,
    ) -> anyhow::Result<usize> {
        changes.create_on.truncate(BURST_REPLICAS);
        changes.delete.truncate(BURST_REPLICAS);
        let creates = changes.create_on.len();
        let deletes = changes.delete.len();
        self.expectations.set_expectations(
            key,
            i64::try_from(creates).unwrap_or(i64::MAX),
            i64::try_from(deletes).unwrap_or(i64::MAX),
        );
        if creates == 0 && deletes == 0 {
            return Ok(0);
        }
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let me = object_reference(&ds.metadata, "apps/v1", "DaemonSet");
        let owner_ref = new_controller_ref(&ds.metadata, "apps/v1", "DaemonSet");
        let template = pod_template(ds, hash);
        let create_on = &changes.create_on;
        let (created, create_err) = slow_start_batch(creates, 1, |i| {
            let mut t = template.clone();
            if let Some(spec) = t.spec.as_mut() {
                spec.affinity = Some(pin_to_node(spec.affinity.take(), &create_on[i]));
            }
            let (ns, owner_ref, me) = (ns.clone(), owner_ref.clone(), me.clone());
            let control = self.pod_control.clone();
            async move {
                match control
                    .create_pod_from_template(&ns, &t, owner_ref, &me)
                    .await
                {
                    Ok(_) => Ok(()),
                    // The namespace is going away with everything in it.
                    Err(e) if is_namespace_terminating(&e) => Ok(()),
                    Err(e) => Err(e),
                }
            }
        })
        .await;
        let skipped = creates - created;
        if skipped > 0 {
            // Creates that failed or were skipped will never be observed.
            self.expectations.lower_expectations(
                key,
                i64::try_from(skipped).unwrap_or(i64::MAX),
                0,
            );
        }
        let deleted = join_all(changes.delete.iter().map(|p| {
            let name = p.metadata.name.clone().unwrap_or_default();
            let (ns, me) = (&ns, &me);
            async move {
                let res = self.pod_control.delete_pod(ns, &name, me).await;
                if res.is_err() {
                    self.expectations.deletion_observed(key);
                }
                res
            }
        }))
        .await;
        let delete_err = deleted.into_iter().find_map(Result::err);
        match create_err.or(delete_err) {
            Some(e) => Err(e),
            None => Ok(creates + deletes),
        }
    }

    async fn update_status(
        &self,
        key: &str,
        ds: &DaemonSet,
        claimed: &[Arc<Pod>],
        nodes: &[Arc<Node>],
        hash: &str,
        observed_generation: bool,
    ) -> anyhow::Result<()> {
        let node_pods = by_node(claimed, false);
        let mut status = calculate_status(ds, nodes, &node_pods, hash, Timestamp::now());
        if !observed_generation {
            status.observed_generation = ds.status.as_ref().and_then(|s| s.observed_generation);
        }
        self.store_status(ds, &status).await?;
        let min_ready = min_ready_seconds(ds);
        if min_ready > 0 && status.number_ready != status.number_available.unwrap_or(0) {
            // Availability is a matter of time: look again once it may have come.
            let secs = u64::try_from(min_ready).unwrap_or(0);
            self.queue
                .add_after(key.to_string(), Duration::from_secs(secs));
        }
        Ok(())
    }

    /// Writes the counts through `/status` unless unchanged; retries once on a conflict with
    /// the object read again.
    async fn store_status(&self, ds: &DaemonSet, status: &DaemonSetStatus) -> anyhow::Result<()> {
        if !status_changed(ds.status.as_ref(), status) {
            return Ok(());
        }
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        let name = ds.metadata.name.as_deref().unwrap_or("");
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), ns);
        let mut current = ds.clone();
        for attempt in 0..2 {
            let prior = current.status.take().unwrap_or_default();
            current.status = Some(DaemonSetStatus {
                collision_count: prior.collision_count,
                conditions: prior.conditions,
                ..status.clone()
            });
            match api
                .replace_status(name, &PostParams::default(), &current)
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt == 0 => {
                    current = api
                        .get(name)
                        .await
                        .with_context(|| format!("re-reading DaemonSet {name} after a conflict"))?;
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("updating the status of {name}"));
                }
            }
        }
        anyhow::bail!("updating the status of {name}: conflict")
    }
}

fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

/// The claimed pods by the node they belong to; without `include_terminating`, terminal pods
/// being deleted (held by a finalizer) are left out (upstream's `getNodesToDaemonPods`).
fn by_node(claimed: &[Arc<Pod>], include_terminating: bool) -> NodePods {
    let mut out = NodePods::new();
    for pod in claimed {
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("");
        let terminal = phase == "Succeeded" || phase == "Failed";
        if !include_terminating && terminal && pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if let Some(node) = target_node(pod) {
            out.entry(node).or_default().push(pod.clone());
        }
    }
    out
}

/// The template every daemon pod is made from (upstream's `CreatePodTemplate`): the daemon
/// tolerations, and the labels naming the template generation and revision.
fn pod_template(ds: &DaemonSet, hash: &str) -> PodTemplateSpec {
    let mut t = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    add_daemon_tolerations(t.spec.get_or_insert_with(Default::default));
    let labels = t
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default);
    if let Some(generation) = template_generation(ds) {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation);
    }
    if !hash.is_empty() {
        labels.insert(REVISION_HASH_LABEL.into(), hash.to_string());
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DaemonSetSpec;
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;

    #[test]
    fn template_carries_tolerations_and_revision_labels() {
        let ds = DaemonSet {
            metadata: ObjectMeta {
                annotations: Some(
                    [(
                        "deprecated.daemonset.template.generation".to_string(),
                        "4".to_string(),
                    )]
                    .into(),
                ),
                ..Default::default()
            },
            spec: Some(DaemonSetSpec {
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("app".to_string(), "a".to_string())].into()),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec::default()),
                },
                ..Default::default()
            }),
            status: None,
        };
        let t = pod_template(&ds, "h1");
        let labels = t.metadata.and_then(|m| m.labels).unwrap_or_default();
        assert_eq!(labels.get("app").map(String::as_str), Some("a"));
        assert_eq!(
            labels.get(REVISION_HASH_LABEL).map(String::as_str),
            Some("h1")
        );
        assert_eq!(
            labels.get(TEMPLATE_GENERATION_LABEL).map(String::as_str),
            Some("4")
        );
        assert_eq!(t.spec.and_then(|s| s.tolerations).map(|t| t.len()), Some(6));
    }

    fn pod(name: &str, node: Option<&str>, phase: &str, deleting: bool) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                deletion_timestamp: deleting.then_some(Time(Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(String::from),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
        })
    }

    #[test]
    fn pods_by_node() {
        let pods = vec![
            pod("a", Some("n1"), "Running", false),
            pod("b", Some("n1"), "Failed", true),
            pod("c", Some("n2"), "Running", true),
            pod("d", None, "Pending", false),
        ];
        let names = |m: &NodePods| -> Vec<(String, usize)> {
            m.iter().map(|(k, v)| (k.clone(), v.len())).collect()
        };
        assert_eq!(
            names(&by_node(&pods, true)),
            vec![("n1".to_string(), 2), ("n2".to_string(), 1)]
        );
        // A finished pod held by a finalizer is gone as far as counts go; an unpinned,
        // unbound pod belongs nowhere.
        assert_eq!(
            names(&by_node(&pods, false)),
            vec![("n1".to_string(), 1), ("n2".to_string(), 1)]
        );
    }
}
