//! One sync of a StatefulSet: claim its pods and revisions, settle the current and update
//! revisions, carry out the plan, write the status and prune the revision history.

use super::claims::{claim_owner_refs, owner_ref};
use super::identity::claim_name;
use super::identity::{
    claim_templates, desired_replicas, fix_identity, new_claims, new_pod, ordinal_of, pod_revision,
    retention_deletes, set_name, start_ordinal,
};
use super::plan::{Action, PlanInput, Strategy, Which, is_running_and_ready, is_terminating, plan};
use super::revision::{
    new_revision, next_number, revision_template, revisions_to_prune, same_data,
};
use super::status::{StatusInput, compute_status, status_changed};
use crate::controller::utils::controller_ref::{
    ClaimOwner, claim_objects, controller_of, new_controller_ref, object_reference, recheck_owner,
};
use crate::controller::utils::pods::{is_pod_available, pods_by_controller, slow_start_batch};
use anyhow::Context as _;
use api_types::labels::Selector;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

pub const API_VERSION: &str = "apps/v1";
pub const KIND: &str = "StatefulSet";
const DEFAULT_HISTORY_LIMIT: i32 = 10;

pub struct Controller {
    pub client: Client,
    pub sets: Lister<StatefulSet>,
    pub pods: Lister<Pod>,
    pub revisions: Lister<ControllerRevision>,
    pub claims: Lister<PersistentVolumeClaim>,
    pub recorder: EventRecorder,
    pub queue: RateLimitingQueue<String>,
}

fn is_pending(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending")
}

fn api_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

pub fn strategy_of(set: &StatefulSet) -> Strategy {
    let strategy = set.spec.as_ref().and_then(|s| s.update_strategy.as_ref());
    match strategy.and_then(|s| s.type_.as_deref()) {
        Some("OnDelete") => Strategy::OnDelete,
        _ => Strategy::RollingUpdate {
            partition: strategy
                .and_then(|s| s.rolling_update.as_ref())
                .and_then(|r| r.partition)
                .unwrap_or(0),
        },
    }
}

pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

impl Controller {
    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            tracing::warn!(%key, "ignoring an invalid key");
            return Ok(());
        };
        let Some(set) = self.sets.namespace(ns).get(name) else {
            return Ok(());
        };
        let selector = match Selector::from_label_selector(set.spec.as_ref().map(|s| &s.selector)) {
            Ok(s) if !s.is_nothing() && !s.is_empty() => s,
            Ok(_) => {
                tracing::warn!(%key, "not syncing: the selector selects nothing or everything");
                return Ok(());
            }
            Err(err) => {
                tracing::warn!(%key, "not syncing: invalid selector: {err}");
                return Ok(());
            }
        };
        let me = object_reference(&set.metadata, API_VERSION, KIND);
        let owner = ClaimOwner {
            meta: &set.metadata,
            api_version: API_VERSION,
            kind: KIND,
        };
        let sets_api: Api<StatefulSet> = Api::namespaced(self.client.clone(), ns);

        let revisions = self.claim_revisions(ns, &set, owner, &selector).await?;
        let pods = self.claim_pods(ns, &set, owner, &selector).await?;
        let (current, update, collision_count, revisions) =
            self.settle_revisions(ns, &set, revisions).await?;
        let current_name = current.metadata.name.clone().unwrap_or_default();
        let update_name = update.metadata.name.clone().unwrap_or_default();
        let strategy = strategy_of(&set);
        let min_ready = min_ready_seconds(&set);

        let mut result = Ok(());
        if set.metadata.deletion_timestamp.is_none() {
            let actions = plan(&PlanInput {
                set: &set,
                pods: &pods,
                start: start_ordinal(&set),
                replicas: desired_replicas(&set),
                monotonic: set
                    .spec
                    .as_ref()
                    .and_then(|s| s.pod_management_policy.as_deref())
                    != Some("Parallel"),
                strategy,
                update_revision: &update_name,
                min_ready_seconds: min_ready,
                now: Timestamp::now(),
            });
            result = self.reconcile_claim_owners(ns, &set, &pods).await;
            if result.is_ok() {
                result = self
                    .execute(ns, &set, &me, &pods, &actions, (&current, &update))
                    .await;
            }
        }

        let status = compute_status(&StatusInput {
            pods: &pods,
            current_revision: &current_name,
            update_revision: &update_name,
            strategy,
            min_ready_seconds: min_ready,
            generation: set.metadata.generation,
            collision_count,
            previous: set.status.as_ref(),
            now: Timestamp::now(),
        });
        self.write_status(&sets_api, &set, status.clone()).await?;
        self.prune_history(ns, &set, &pods, &revisions, &status)
            .await?;

        if min_ready > 0
            && pods.iter().any(|p| {
                is_running_and_ready(p) && !is_pod_available(p, min_ready, Timestamp::now())
            })
        {
            // Availability comes with time, not with an event.
            let secs = u64::try_from(min_ready).unwrap_or(0) + 1;
            self.queue.add_after(key.clone(), Duration::from_secs(secs));
        }
        result
    }

    async fn claim_pods(
        &self,
        ns: &str,
        set: &StatefulSet,
        owner: ClaimOwner<'_>,
        selector: &Selector,
    ) -> anyhow::Result<Vec<Arc<Pod>>> {
        let uid = set.metadata.uid.clone().unwrap_or_default();
        // Only pods named as members may be adopted (upstream's `isMemberOf` filter).
        let candidates: Vec<Arc<Pod>> = pods_by_controller(&self.pods, ns, &uid, true)
            .unwrap_or_else(|| self.pods.namespace(ns).list())
            .into_iter()
            .filter(|p| {
                controller_of(&p.metadata).is_some_and(|r| r.uid == uid)
                    || ordinal_of(set, p).is_some()
            })
            .collect();
        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let sets_api: Api<StatefulSet> = Api::namespaced(self.client.clone(), ns);
        let name = set_name(set).to_string();
        let set_uid = set.metadata.uid.clone();
        claim_objects(&pods_api, owner, selector, candidates, || async move {
            recheck_owner(&sets_api, &name, set_uid.as_deref()).await
        })
        .await
    }

    async fn claim_revisions(
        &self,
        ns: &str,
        set: &StatefulSet,
        owner: ClaimOwner<'_>,
        selector: &Selector,
    ) -> anyhow::Result<Vec<Arc<ControllerRevision>>> {
        let candidates = self.revisions.namespace(ns).list();
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        let sets_api: Api<StatefulSet> = Api::namespaced(self.client.clone(), ns);
        let name = set_name(set).to_string();
        let set_uid = set.metadata.uid.clone();
        let mut revs = claim_objects(&api, owner, selector, candidates, || async move {
            recheck_owner(&sets_api, &name, set_uid.as_deref()).await
        })
        .await?;
        revs.sort_by_key(|r| r.revision);
        Ok(revs)
    }

    /// The current and update revisions (creating or renumbering the update revision as
    /// upstream's `getStatefulSetRevisions`), the collision count, and all revisions.
    #[allow(clippy::type_complexity)]
    async fn settle_revisions(
        &self,
        ns: &str,
        set: &StatefulSet,
        mut revisions: Vec<Arc<ControllerRevision>>,
    ) -> anyhow::Result<(
        Arc<ControllerRevision>,
        Arc<ControllerRevision>,
        Option<i32>,
        Vec<Arc<ControllerRevision>>,
    )> {
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        let owner = new_controller_ref(&set.metadata, API_VERSION, KIND);
        let mut collision_count = set.status.as_ref().and_then(|s| s.collision_count);
        let next = next_number(&revisions);
        let candidate = new_revision(set, next, collision_count, owner.clone());
        let equal: Vec<&Arc<ControllerRevision>> = revisions
            .iter()
            .filter(|r| same_data(r, &candidate))
            .collect();
        let update: Arc<ControllerRevision> = if let Some(last_equal) = equal.last() {
            if revisions.last().map(|r| &r.metadata.name) == Some(&last_equal.metadata.name) {
                (*last_equal).clone()
            } else {
                // A rollback to an earlier template: that revision becomes the newest.
                let name = last_equal.metadata.name.clone().unwrap_or_default();
                let patched = api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"revision": next})),
                    )
                    .await
                    .with_context(|| format!("renumbering revision {name}"))?;
                let patched = Arc::new(patched);
                revisions.retain(|r| r.metadata.name.as_deref() != Some(name.as_str()));
                revisions.push(patched.clone());
                patched
            }
        } else {
            let mut created = None;
            for _ in 0..5 {
                let rev = new_revision(set, next, collision_count, owner.clone());
                match api.create(&PostParams::default(), &rev).await {
                    Ok(r) => {
                        created = Some(Arc::new(r));
                        break;
                    }
                    Err(err) if api_code(&err) == Some(409) => {
                        let name = rev.metadata.name.clone().unwrap_or_default();
                        let existing = api
                            .get(&name)
                            .await
                            .with_context(|| format!("reading revision {name}"))?;
                        let ours = controller_of(&existing.metadata)
                            .is_some_and(|r| Some(&r.uid) == set.metadata.uid.as_ref());
                        if ours && same_data(&existing, &rev) {
                            created = Some(Arc::new(existing));
                            break;
                        }
                        // A hash collision: another object holds the name.
                        collision_count = Some(collision_count.unwrap_or(0) + 1);
                    }
                    Err(err) => {
                        return Err(err).context("creating a controller revision");
                    }
                }
            }
            let created = created.context("no free revision name after hash collisions")?;
            revisions.push(created.clone());
            created
        };
        let current_name = set.status.as_ref().and_then(|s| s.current_revision.clone());
        let current = revisions
            .iter()
            .find(|r| r.metadata.name.is_some() && r.metadata.name == current_name)
            .cloned()
            .unwrap_or_else(|| update.clone());
        Ok((current, update, collision_count, revisions))
    }

    async fn execute(
        &self,
        ns: &str,
        set: &StatefulSet,
        me: &ObjectReference,
        pods: &[Arc<Pod>],
        actions: &[Action],
        (current, update): (&ControllerRevision, &ControllerRevision),
    ) -> anyhow::Result<()> {
        // Parallel management acts in growing batches (1, 2, 4, ...) and stops after a
        // failing one, as upstream, so a refused create costs a few requests, not all.
        let (_, err) = slow_start_batch(actions.len(), 1, |i| async move {
            let Some(action) = actions.get(i) else {
                return Ok(());
            };
            match action {
                Action::Create { ordinal, from } => {
                    let rev = match from {
                        Which::Current => current,
                        Which::Update => update,
                    };
                    self.create_pod(ns, set, me, rev, *ordinal).await
                }
                Action::Delete { name, .. } => self.delete_pod(ns, set, me, name).await,
                Action::Recreate { name, failed } => {
                    let (ns, set_name) = (ns, set_name(set));
                    if *failed {
                        self.recorder.event(
                            me,
                            EventType::Warning,
                            "RecreatingFailedPod",
                            format!("StatefulSet {ns}/{set_name} is recreating failed Pod {name}"),
                        );
                    } else {
                        self.recorder.event(
                            me,
                            EventType::Normal,
                            "RecreatingTerminatedPod",
                            format!(
                                "StatefulSet {ns}/{set_name} is recreating terminated Pod {name}"
                            ),
                        );
                    }
                    self.delete_pod(ns, set, me, name).await
                }
                Action::FixIdentity { name, ordinal } => {
                    self.fix_identity(ns, set, me, pods, name, *ordinal).await
                }
            }
        })
        .await;
        err.map_or(Ok(()), Err)
    }

    fn pod_event(&self, me: &ObjectReference, verb: &str, pod: &str, set: &str, err: Option<&str>) {
        let title = format!("{}{}", verb[..1].to_uppercase(), &verb[1..]);
        match err {
            None => self.recorder.event(
                me,
                EventType::Normal,
                &format!("Successful{title}"),
                format!("{verb} Pod {pod} in StatefulSet {set} successful"),
            ),
            Some(e) => self.recorder.event(
                me,
                EventType::Warning,
                &format!("Failed{title}"),
                format!("{verb} Pod {pod} in StatefulSet {set} failed error: {e}"),
            ),
        }
    }

    async fn create_pod(
        &self,
        ns: &str,
        set: &StatefulSet,
        me: &ObjectReference,
        rev: &ControllerRevision,
        ordinal: i32,
    ) -> anyhow::Result<()> {
        let template = revision_template(rev).context("revision without a template")?;
        let owner = new_controller_ref(&set.metadata, API_VERSION, KIND);
        let rev_name = rev.metadata.name.clone().unwrap_or_default();
        let pod = new_pod(set, &template, &rev_name, ordinal, owner.clone());
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        self.create_claims(ns, set, me, &owner, ordinal, &pod_name)
            .await?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        match api.create(&PostParams::default(), &pod).await {
            Ok(_) => {
                self.pod_event(me, "create", &pod_name, set_name(set), None);
                Ok(())
            }
            // Created by an earlier sync the cache has not shown yet.
            Err(err) if api_code(&err) == Some(409) => Ok(()),
            Err(err) => {
                self.pod_event(
                    me,
                    "create",
                    &pod_name,
                    set_name(set),
                    Some(&err.to_string()),
                );
                Err(err).with_context(|| format!("creating pod {ns}/{pod_name}"))
            }
        }
    }

    async fn create_claims(
        &self,
        ns: &str,
        set: &StatefulSet,
        me: &ObjectReference,
        owner: &OwnerReference,
        ordinal: i32,
        pod_name: &str,
    ) -> anyhow::Result<()> {
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
        for claim in new_claims(set, ordinal, owner) {
            let name = claim.metadata.name.clone().unwrap_or_default();
            if let Some(existing) = self.claims.namespace(ns).get(&name) {
                if existing.metadata.deletion_timestamp.is_some() {
                    anyhow::bail!(
                        "pvc {name} is being deleted: waiting before creating {pod_name}"
                    );
                }
                continue;
            }
            let set = set_name(set);
            match api.create(&PostParams::default(), &claim).await {
                Ok(_) => self.recorder.event(
                    me,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("create Claim {name} Pod {pod_name} in StatefulSet {set} success"),
                ),
                Err(err) if api_code(&err) == Some(409) => {}
                Err(err) => {
                    self.recorder.event(
                        me,
                        EventType::Warning,
                        "FailedCreate",
                        format!(
                            "create Claim {name} for Pod {pod_name} in StatefulSet {set} failed error: {err}"
                        ),
                    );
                    return Err(err).with_context(|| format!("creating pvc {ns}/{name}"));
                }
            }
        }
        Ok(())
    }

    /// Puts the ownerReferences the retention policy asks for on the claims of each live
    /// pod (before a condemned pod is deleted, so its claims follow it).
    async fn reconcile_claim_owners(
        &self,
        ns: &str,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
    ) -> anyhow::Result<()> {
        let policy = retention_deletes(set);
        let (start, replicas) = (start_ordinal(set), desired_replicas(set));
        let set_uid = set.metadata.uid.clone().unwrap_or_default();
        let set_ref = owner_ref(API_VERSION, KIND, set_name(set), &set_uid);
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
        for pod in pods.iter().filter(|p| !is_terminating(p)) {
            let Some(ordinal) = ordinal_of(set, pod) else {
                continue;
            };
            let condemned = ordinal < start || ordinal - start >= replicas;
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
            let pod_ref = owner_ref("v1", "Pod", &pod_name, &pod_uid);
            for template in claim_templates(set) {
                let tname = template.metadata.name.clone().unwrap_or_default();
                let name = claim_name(&tname, set_name(set), ordinal);
                let Some(claim) = self.claims.namespace(ns).get(&name) else {
                    // A pending pod waits on a claim deleted under it: create it again.
                    if is_pending(pod) {
                        let me = object_reference(&set.metadata, API_VERSION, KIND);
                        let owner = new_controller_ref(&set.metadata, API_VERSION, KIND);
                        self.create_claims(ns, set, &me, &owner, ordinal, &pod_name)
                            .await?;
                    }
                    continue;
                };
                let current = claim.metadata.owner_references.clone().unwrap_or_default();
                let Some(refs) = claim_owner_refs(&current, &set_ref, &pod_ref, policy, condemned)
                else {
                    continue;
                };
                // The resourceVersion makes a concurrent change a conflict, not a lost write.
                let patch = json!({"metadata": {
                    "ownerReferences": refs,
                    "resourceVersion": claim.metadata.resource_version,
                }});
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                {
                    Ok(_) => {}
                    Err(err) if api_code(&err) == Some(404) => {}
                    Err(err) => {
                        return Err(err).with_context(|| format!("updating pvc {ns}/{name}"));
                    }
                }
            }
        }
        Ok(())
    }

    async fn delete_pod(
        &self,
        ns: &str,
        set: &StatefulSet,
        me: &ObjectReference,
        name: &str,
    ) -> anyhow::Result<()> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                self.pod_event(me, "delete", name, set_name(set), None);
                Ok(())
            }
            Err(err) if api_code(&err) == Some(404) => Ok(()),
            Err(err) => {
                self.pod_event(me, "delete", name, set_name(set), Some(&err.to_string()));
                Err(err).with_context(|| format!("deleting pod {ns}/{name}"))
            }
        }
    }

    async fn fix_identity(
        &self,
        ns: &str,
        set: &StatefulSet,
        me: &ObjectReference,
        pods: &[Arc<Pod>],
        name: &str,
        ordinal: i32,
    ) -> anyhow::Result<()> {
        let Some(pod) = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
        else {
            return Ok(());
        };
        let mut fixed = (**pod).clone();
        fix_identity(&mut fixed, ordinal);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        match api.replace(name, &PostParams::default(), &fixed).await {
            Ok(_) => {
                self.pod_event(me, "update", name, set_name(set), None);
                Ok(())
            }
            Err(err) => {
                self.pod_event(me, "update", name, set_name(set), Some(&err.to_string()));
                Err(err).with_context(|| format!("updating pod {ns}/{name}"))
            }
        }
    }

    async fn write_status(
        &self,
        api: &Api<StatefulSet>,
        set: &StatefulSet,
        status: StatefulSetStatus,
    ) -> anyhow::Result<()> {
        if !status_changed(set.status.as_ref(), &status) {
            return Ok(());
        }
        let name = set_name(set).to_string();
        let mut current = set.clone();
        for attempt in 0..2 {
            current.status = Some(status.clone());
            match api
                .replace_status(&name, &PostParams::default(), &current)
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if api_code(&err) == Some(409) && attempt == 0 => {
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

    async fn prune_history(
        &self,
        ns: &str,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        revisions: &[Arc<ControllerRevision>],
        status: &StatefulSetStatus,
    ) -> anyhow::Result<()> {
        let mut live: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| pod_revision(p).map(String::from))
            .collect();
        live.extend(status.current_revision.clone());
        live.extend(status.update_revision.clone());
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(DEFAULT_HISTORY_LIMIT);
        let victims = revisions_to_prune(revisions, &live, usize::try_from(limit).unwrap_or(0));
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        for name in victims {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(err) if api_code(&err) == Some(404) => {}
                Err(err) => return Err(err).with_context(|| format!("deleting revision {name}")),
            }
        }
        Ok(())
    }
}
