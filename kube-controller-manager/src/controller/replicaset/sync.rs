//! One sync of a ReplicaSet (or ReplicationController): claim its pods, create or delete pods
//! toward the desired count, and write the status.

use super::kind::ReplicatedSet;
use super::status::{StatusInput, calculate_status, status_changed};
use crate::controller::utils::controller_ref::{
    ClaimOwner, claim_objects, controller_of, new_controller_ref, object_reference, recheck_owner,
};
use crate::controller::utils::expectations::UidTrackingExpectations;
use crate::controller::utils::pod_control::{PodControl, is_namespace_terminating};
use crate::controller::utils::pods::{
    is_pod_active, pods_by_controller, pods_to_delete, slow_start_batch,
};
use anyhow::Context as _;
use client_go_rs::listers::{Lister, object_key, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::join_all;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;

/// At most this many pods are created or deleted by one sync (upstream's `BurstReplicas`), so
/// a huge scale does not starve other controllers' work.
pub const BURST_REPLICAS: usize = 500;

/// The first slow-start batch (upstream's `SlowStartInitialBatchSize`).
const SLOW_START_INITIAL_BATCH: usize = 1;

/// What one sync does about the pod count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Create(usize),
    Delete(usize),
    Nothing,
}

/// Creates or deletes toward `desired`, at most `burst` at once.
pub fn scale_plan(active: usize, desired: usize, burst: usize) -> Scale {
    if active < desired {
        Scale::Create((desired - active).min(burst))
    } else if active > desired {
        Scale::Delete((active - desired).min(burst))
    } else {
        Scale::Nothing
    }
}

/// Everything a worker needs; shared by the workers and the event handlers.
pub struct Controller<T: ReplicatedSet> {
    pub client: Client,
    pub sets: Lister<T>,
    pub pods: Lister<Pod>,
    /// The ReplicaSets of the namespace, to find a set's siblings under one Deployment
    /// (only for ReplicaSets; `None` for ReplicationControllers).
    pub replica_sets: Option<Lister<ReplicaSet>>,
    pub expectations: UidTrackingExpectations,
    pub pod_control: PodControl,
    pub queue: RateLimitingQueue<String>,
    pub burst_replicas: usize,
}

impl<T: ReplicatedSet> Controller<T> {
    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            tracing::warn!(%key, "ignoring an invalid key");
            return Ok(());
        };
        let Some(set) = self.sets.namespace(ns).get(name) else {
            self.expectations.delete(&key);
            return Ok(());
        };
        let needs_sync = self.expectations.satisfied(&key);
        let selector = match set.selector() {
            Ok(s) => s,
            Err(err) => {
                // Retrying cannot fix a bad selector; an update of the object requeues it.
                tracing::warn!(%key, "not syncing: {err:#}");
                return Ok(());
            }
        };
        let uid_str = set.meta().uid.clone().unwrap_or_default();
        let active: Vec<Arc<Pod>> = pods_by_controller(&self.pods, ns, &uid_str, true)
            .unwrap_or_else(|| self.pods.namespace(ns).list())
            .into_iter()
            .filter(|p| is_pod_active(p))
            .collect();
        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let sets_api: Api<T> = Api::namespaced(self.client.clone(), ns);
        let uid = set.meta().uid.clone();
        let owner = ClaimOwner {
            meta: set.meta(),
            api_version: T::API_VERSION,
            kind: T::KIND,
        };
        let claimed = claim_objects(&pods_api, owner, &selector, active, || {
            recheck_owner(&sets_api, name, uid.as_deref())
        })
        .await?;

        let manage_error = if needs_sync && set.meta().deletion_timestamp.is_none() {
            self.manage_replicas(&key, &set, &claimed).await.err()
        } else {
            None
        };

        let template_labels = set
            .template()
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.as_ref());
        let status = calculate_status(StatusInput {
            current: set.status_view(),
            desired_replicas: set.replicas(),
            min_ready_seconds: set.min_ready_seconds(),
            template_labels,
            generation: set.meta().generation,
            pods: &claimed,
            manage_error: manage_error.as_ref().map(|e| format!("{e:#}")),
            now: Timestamp::now(),
        });
        let written = self.update_status(&sets_api, &set, status).await?;

        let replicas = set.replicas();
        let min_ready = set.min_ready_seconds();
        if manage_error.is_none()
            && min_ready > 0
            && written.ready_replicas.unwrap_or(0) == replicas
            && written.available_replicas.unwrap_or(0) != replicas
        {
            // Availability is a matter of time: look again once the pods may have become
            // available.
            let secs = u64::try_from(min_ready).unwrap_or(0);
            self.queue.add_after(key.clone(), Duration::from_secs(secs));
        }
        match manage_error {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Creates or deletes pods so the set has its desired count, at most `burst_replicas`
    /// per sync, recording expectations first so a later sync waits for the cache.
    async fn manage_replicas(&self, key: &str, set: &T, pods: &[Arc<Pod>]) -> anyhow::Result<()> {
        let ns = set.meta().namespace.clone().unwrap_or_default();
        let desired = usize::try_from(set.replicas()).unwrap_or(0);
        let me = object_reference(set.meta(), T::API_VERSION, T::KIND);
        let diff = match scale_plan(pods.len(), desired, self.burst_replicas) {
            Scale::Nothing => return Ok(()),
            Scale::Create(diff) => diff,
            Scale::Delete(diff) => return self.delete_pods(key, set, pods, diff).await,
        };
        let template = set
            .template()
            .context("the object has no pod template")?
            .clone();
        let owner_ref = new_controller_ref(set.meta(), T::API_VERSION, T::KIND);
        self.expectations
            .expect_creations(key, i64::try_from(diff).unwrap_or(i64::MAX));
        let (created, err) = slow_start_batch(diff, SLOW_START_INITIAL_BATCH, |_| {
            let (ns, template, owner_ref, me) =
                (ns.clone(), template.clone(), owner_ref.clone(), me.clone());
            let control = self.pod_control.clone();
            async move {
                match control
                    .create_pod_from_template(&ns, &template, owner_ref, &me)
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
        // The creates that were skipped or failed will never be observed.
        let skipped = diff - created;
        if skipped > 0 {
            self.expectations.lower_expectations(
                key,
                i64::try_from(skipped).unwrap_or(i64::MAX),
                0,
            );
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Deletes the `diff` pods ranked first for deletion.
    async fn delete_pods(
        &self,
        key: &str,
        set: &T,
        pods: &[Arc<Pod>],
        diff: usize,
    ) -> anyhow::Result<()> {
        let ns = set.meta().namespace.clone().unwrap_or_default();
        let me = object_reference(set.meta(), T::API_VERSION, T::KIND);
        let related = self.indirectly_related_pods(set, pods);
        let victims = pods_to_delete(pods, &related, diff, Timestamp::now());
        let victim_keys: Vec<String> = victims.iter().map(|p| object_key(p.as_ref())).collect();
        self.expectations.expect_deletions(key, &victim_keys);
        let results = join_all(victims.iter().map(|p| {
            let name = p.metadata.name.clone().unwrap_or_default();
            let pod_key = object_key(p.as_ref());
            let me = &me;
            let ns = &ns;
            async move {
                let res = self.pod_control.delete_pod(ns, &name, me).await;
                if res.is_err() {
                    // A failed delete is never observed: stop waiting for it.
                    self.expectations.deletion_observed(key, &pod_key);
                }
                res
            }
        }))
        .await;
        match results.into_iter().find_map(Result::err) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The pods the deletion ranking compares against: for a ReplicaSet owned by a
    /// Deployment, the active pods of every ReplicaSet of that Deployment (so scale-down
    /// spreads over nodes across the rollout); otherwise the set's own pods.
    fn indirectly_related_pods(&self, set: &T, own: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
        let (Some(rs_lister), Some(owner)) = (&self.replica_sets, controller_of(set.meta())) else {
            return own.to_vec();
        };
        let ns = set.meta().namespace.clone().unwrap_or_default();
        let siblings: Vec<String> = rs_lister
            .namespace(&ns)
            .list()
            .iter()
            .filter(|rs| controller_of(&rs.metadata).is_some_and(|r| r.uid == owner.uid))
            .filter_map(|rs| rs.metadata.uid.clone())
            .collect();
        let indexed: Option<Vec<Arc<Pod>>> = siblings
            .iter()
            .map(|uid| pods_by_controller(&self.pods, &ns, uid, false))
            .collect::<Option<Vec<_>>>()
            .map(|lists| lists.into_iter().flatten().collect());
        indexed
            .unwrap_or_else(|| self.pods.namespace(&ns).list())
            .into_iter()
            .filter(|p| is_pod_active(p))
            .filter(|p| controller_of(&p.metadata).is_some_and(|r| siblings.contains(&r.uid)))
            .collect()
    }

    /// Writes `status` through `/status` unless nothing changed; retries once on a conflict
    /// with the object read again.
    async fn update_status(
        &self,
        api: &Api<T>,
        set: &T,
        status: ReplicaSetStatus,
    ) -> anyhow::Result<ReplicaSetStatus> {
        if !status_changed(&set.status_view(), &status) {
            return Ok(status);
        }
        let name = set.meta().name.clone().unwrap_or_default();
        let mut current = set.clone();
        for attempt in 0..2 {
            match api
                .replace_status(
                    &name,
                    &PostParams::default(),
                    &current.with_status(status.clone()),
                )
                .await
            {
                Ok(written) => return Ok(written.status_view()),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt == 0 => {
                    current = api
                        .get(&name)
                        .await
                        .with_context(|| format!("re-reading {name} after a conflict"))?;
                }
                Err(err) => {
                    return Err(err).with_context(|| format!("updating the status of {name}"));
                }
            }
        }
        anyhow::bail!("updating the status of {name}: conflict")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_plans() {
        let cases = [
            (0, 3, 500, Scale::Create(3)),
            (3, 3, 500, Scale::Nothing),
            (5, 1, 500, Scale::Delete(4)),
            (0, 2000, 500, Scale::Create(500)),
            (1200, 0, 500, Scale::Delete(500)),
        ];
        for (active, desired, burst, want) in cases {
            assert_eq!(
                scale_plan(active, desired, burst),
                want,
                "{active} -> {desired}"
            );
        }
    }
}
