//! One sync of a Deployment: claim its ReplicaSets, find or create the new one, then scale,
//! roll out or only report status, as the Deployment's state calls for.

use super::annotations::{self, REVISION};
use super::conditions::{self, PROGRESSING};
use super::hash::{POD_TEMPLATE_HASH_LABEL, compute_hash, equal_ignore_hash};
use super::proportion::by_creation;
use super::replicas::{self, is_recreate, spec_replicas};
use crate::controller::utils::controller_ref::{
    ClaimOwner, claim_objects, controller_of, new_controller_ref, object_reference, recheck_owner,
};
use anyhow::Context as _;
use api_types::labels::Selector;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Lister, split_key};
use client_go_rs::workqueue::RateLimitingQueue;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use std::collections::BTreeMap;

pub const CONTROLLER_NAME: &str = "deployment-controller";

/// Everything a sync reads from and writes through.
#[derive(Clone)]
pub struct Controller {
    pub client: kube::Client,
    pub deployments: Lister<Deployment>,
    pub replicasets: Lister<ReplicaSet>,
    pub pods: Lister<Pod>,
    pub queue: RateLimitingQueue<String>,
    pub recorder: EventRecorder,
}

pub fn now() -> Timestamp {
    // Whole seconds: what the API keeps, so a status compares equal after a round trip.
    Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH)
}

pub(super) fn is_conflict_or_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

impl Controller {
    pub(super) fn rs_api(&self, ns: &str) -> Api<ReplicaSet> {
        Api::namespaced(self.client.clone(), ns)
    }

    pub(super) fn d_api(&self, ns: &str) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), ns)
    }

    pub(super) fn event(&self, d: &Deployment, type_: EventType, reason: &str, msg: String) {
        let reference = object_reference(&d.metadata, "apps/v1", "Deployment");
        self.recorder.event(&reference, type_, reason, msg);
    }

    pub async fn sync(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            tracing::warn!(%key, "dropping a malformed deployment key");
            return Ok(());
        };
        let Some(cached) = self.deployments.namespace(ns).get(name) else {
            return Ok(());
        };
        let mut d = (*cached).clone();
        let spec = d.spec.clone().unwrap_or_default();
        let selector = match Selector::from_label_selector(Some(&spec.selector)) {
            Ok(s) => s,
            Err(err) => {
                let msg = format!("invalid selector: {err}");
                self.event(&d, EventType::Warning, "SelectorParseError", msg);
                return Ok(());
            }
        };
        if selector.is_empty() {
            // A Deployment selecting every pod would fight every other controller.
            let msg = "This deployment is selecting all pods. A non-empty selector is required.";
            self.event(&d, EventType::Warning, "SelectingAll", msg.to_string());
            let status = d.status.clone().unwrap_or_default();
            if status.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
                let mut status = status;
                status.observed_generation = d.metadata.generation;
                d.status = Some(status);
                self.update_status(&d).await?;
            }
            return Ok(());
        }

        let rs_list = self.claim_replicasets(&d, &selector, ns).await?;

        if d.metadata.deletion_timestamp.is_some() {
            let (new_rs, olds) = self
                .get_all_and_sync_revision(&mut d, &rs_list, false)
                .await?;
            return self.sync_status_only(&d, new_rs.as_ref(), &olds).await;
        }

        if let Some(cond) = conditions::paused_condition(&d, now()) {
            let mut status = d.status.clone().unwrap_or_default();
            conditions::set_condition(&mut status, cond);
            d.status = Some(status);
            d = self.update_status(&d).await?;
        }

        let (new_rs, olds) = self
            .get_all_and_sync_revision(&mut d, &rs_list, false)
            .await?;
        if conditions::is_paused(&d) || is_scaling_event(&d, new_rs.as_ref(), &olds) {
            return self.sync_scale(&mut d, new_rs, olds).await;
        }
        if is_recreate(&d) {
            let pods = self.pods_of(&d, &selector, &rs_list);
            self.rollout_recreate(&mut d, &rs_list, new_rs, olds, &pods)
                .await
        } else {
            self.rollout_rolling(&mut d, &rs_list, new_rs, olds).await
        }
    }

    /// The Deployment's ReplicaSets: ours that still match, plus matching orphans adopted.
    async fn claim_replicasets(
        &self,
        d: &Deployment,
        selector: &Selector,
        ns: &str,
    ) -> anyhow::Result<Vec<ReplicaSet>> {
        let candidates = self.replicasets.namespace(ns).list();
        let owner = ClaimOwner {
            meta: &d.metadata,
            api_version: "apps/v1",
            kind: "Deployment",
        };
        let d_api = self.d_api(ns);
        let name = name_of(&d.metadata).to_string();
        let uid = d.metadata.uid.clone();
        let claimed = claim_objects(
            &self.rs_api(ns),
            owner,
            selector,
            candidates,
            || async move { recheck_owner(&d_api, &name, uid.as_deref()).await },
        )
        .await?;
        Ok(claimed.into_iter().map(|rs| (*rs).clone()).collect())
    }

    /// Live pods of the Deployment's ReplicaSets (what Recreate waits to be gone), with the uid
    /// of the ReplicaSet controlling each.
    fn pods_of(
        &self,
        d: &Deployment,
        selector: &Selector,
        rs_list: &[ReplicaSet],
    ) -> Vec<(String, Pod)> {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        self.pods
            .namespace(ns)
            .list_selected(selector)
            .into_iter()
            .filter_map(|pod| {
                let owner = controller_of(&pod.metadata)?.uid.clone();
                rs_list
                    .iter()
                    .any(|rs| rs.metadata.uid.as_deref() == Some(owner.as_str()))
                    .then(|| (owner, (*pod).clone()))
            })
            .collect()
    }

    /// Splits the claimed ReplicaSets into the new one (running the Deployment's template; the
    /// oldest if several) and the old ones, keeps the new one's annotations and the
    /// Deployment's revision in step, and creates the new one when asked and missing.
    pub(super) async fn get_all_and_sync_revision(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
        create: bool,
    ) -> anyhow::Result<(Option<ReplicaSet>, Vec<ReplicaSet>)> {
        let template = d
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let mut sorted: Vec<&ReplicaSet> = rs_list.iter().collect();
        sorted.sort_by(|a, b| by_creation(a, b));
        let new_idx = sorted.iter().position(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|t| equal_ignore_hash(t, &template))
        });
        let existing = new_idx.map(|i| sorted[i].clone());
        let olds: Vec<ReplicaSet> = sorted
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != new_idx)
            .map(|(_, rs)| (*rs).clone())
            .collect();
        let new_revision = annotations::max_revision(&olds.iter().collect::<Vec<_>>()) + 1;
        if let Some(existing) = existing {
            let new_rs = self.sync_existing_new_rs(d, existing, new_revision).await?;
            return Ok((Some(new_rs), olds));
        }
        if !create {
            return Ok((None, olds));
        }
        let created = self.create_new_rs(d, &olds, new_revision).await?;
        Ok((Some(created), olds))
    }

    async fn sync_existing_new_rs(
        &self,
        d: &mut Deployment,
        existing: ReplicaSet,
        new_revision: i64,
    ) -> anyhow::Result<ReplicaSet> {
        let mut copy = existing.clone();
        let annotations_changed =
            annotations::set_new_rs_annotations(d, &mut copy, new_revision, false);
        let min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        let rs_min_ready = copy.spec.as_ref().and_then(|s| s.min_ready_seconds);
        if annotations_changed || min_ready.unwrap_or(0) != rs_min_ready.unwrap_or(0) {
            if let Some(spec) = copy.spec.as_mut() {
                spec.min_ready_seconds = min_ready;
            }
            let ns = copy.metadata.namespace.clone().unwrap_or_default();
            let name = name_of(&copy.metadata).to_string();
            return self
                .rs_api(&ns)
                .replace(&name, &PostParams::default(), &copy)
                .await
                .with_context(|| format!("updating the annotations of replica set {name}"));
        }
        let revision = copy
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION))
            .cloned()
            .unwrap_or_default();
        self.set_deployment_revision(d, &revision).await?;
        let has_progressing = d
            .status
            .as_ref()
            .and_then(|s| conditions::get_condition(s, PROGRESSING))
            .is_some();
        if conditions::progress_deadline(d).is_some() && !has_progressing {
            let msg = format!("Found new replica set {:?}", name_of(&copy.metadata));
            let cond = conditions::new_condition(
                PROGRESSING,
                "True",
                conditions::FOUND_NEW_RS,
                msg,
                now(),
            );
            let mut status = d.status.clone().unwrap_or_default();
            conditions::set_condition(&mut status, cond);
            d.status = Some(status);
            *d = self.update_status(d).await?;
        }
        Ok(copy)
    }

    /// Writes the Deployment's revision annotation. A status update cannot (our apiserver keeps
    /// the stored metadata there), so it is an update of the main resource (upstream's role
    /// for this controller grants `update`, not `patch`); metadata does not bump the generation.
    async fn set_deployment_revision(
        &self,
        d: &mut Deployment,
        revision: &str,
    ) -> anyhow::Result<()> {
        let current = d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION));
        if revision.is_empty() || current.map(String::as_str) == Some(revision) {
            return Ok(());
        }
        let ns = d.metadata.namespace.clone().unwrap_or_default();
        let name = name_of(&d.metadata).to_string();
        let mut copy = d.clone();
        copy.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(REVISION.to_string(), revision.to_string());
        let updated = self
            .d_api(&ns)
            .replace(&name, &PostParams::default(), &copy)
            .await
            .with_context(|| format!("setting the revision of deployment {name}"))?;
        // Keep the status computed so far; take the new resourceVersion and annotations.
        let status = d.status.take();
        *d = updated;
        d.status = status;
        Ok(())
    }

    async fn create_new_rs(
        &self,
        d: &mut Deployment,
        olds: &[ReplicaSet],
        new_revision: i64,
    ) -> anyhow::Result<ReplicaSet> {
        let spec = d.spec.clone().unwrap_or_default();
        let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
        let mut template = spec.template.clone();
        let hash = compute_hash(&template, collision_count);
        let meta = template.metadata.get_or_insert_with(Default::default);
        meta.labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
        let labels = meta.labels.clone();
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
        let ns = d.metadata.namespace.clone().unwrap_or_default();
        let name = format!("{}-{hash}", name_of(&d.metadata));
        let mut new_rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                owner_references: Some(vec![new_controller_ref(
                    &d.metadata,
                    "apps/v1",
                    "Deployment",
                )]),
                labels,
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: spec.min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        };
        let mut all: Vec<&ReplicaSet> = olds.iter().collect();
        all.push(&new_rs);
        let size = replicas::new_rs_new_replicas(d, &all, &new_rs);
        if let Some(s) = new_rs.spec.as_mut() {
            s.replicas = Some(size);
        }
        annotations::set_new_rs_annotations(d, &mut new_rs, new_revision, true);

        let api = self.rs_api(&ns);
        let (created, already_existed) = match api.create(&PostParams::default(), &new_rs).await {
            Ok(created) => (created, false),
            Err(err) if is_conflict_or_exists(&err) => {
                let found = api
                    .get(&name)
                    .await
                    .with_context(|| format!("reading existing replica set {name}"))?;
                let ours = controller_of(&found.metadata).map(|r| r.uid.as_str())
                    == d.metadata.uid.as_deref();
                let same = found
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|t| equal_ignore_hash(t, &spec.template));
                if !(ours && same) {
                    // A different template hashed to the same name: a new collision count gives
                    // the next attempt another hash.
                    let mut status = d.status.clone().unwrap_or_default();
                    status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                    d.status = Some(status);
                    self.update_status(d).await?;
                    anyhow::bail!(
                        "hash collision on replica set name {name}; collisionCount bumped"
                    );
                }
                (found, true)
            }
            Err(err) => {
                let msg = format!("Failed to create new replica set {name:?}: {err}");
                if conditions::progress_deadline(d).is_some() {
                    let cond = conditions::new_condition(
                        PROGRESSING,
                        "False",
                        conditions::FAILED_RS_CREATE,
                        msg.clone(),
                        now(),
                    );
                    let mut status = d.status.clone().unwrap_or_default();
                    conditions::set_condition(&mut status, cond);
                    d.status = Some(status);
                    // The create failure is the error worth reporting.
                    let _ = self.update_status(d).await;
                }
                self.event(d, EventType::Warning, conditions::FAILED_RS_CREATE, msg);
                return Err(anyhow::Error::new(err).context(format!("creating replica set {name}")));
            }
        };
        if !already_existed && size > 0 {
            let msg = format!("Scaled up replica set {name} from 0 to {size}");
            self.event(d, EventType::Normal, "ScalingReplicaSet", msg);
        }
        self.set_deployment_revision(d, &new_revision.to_string())
            .await?;
        if !already_existed && conditions::progress_deadline(d).is_some() {
            let msg = format!("Created new replica set {name:?}");
            let cond = conditions::new_condition(
                PROGRESSING,
                "True",
                conditions::NEW_RS_CREATED,
                msg,
                now(),
            );
            let mut status = d.status.clone().unwrap_or_default();
            conditions::set_condition(&mut status, cond);
            d.status = Some(status);
            *d = self.update_status(d).await?;
        }
        Ok(created)
    }

    pub(super) async fn update_status(&self, d: &Deployment) -> anyhow::Result<Deployment> {
        let ns = d.metadata.namespace.clone().unwrap_or_default();
        let name = name_of(&d.metadata).to_string();
        self.d_api(&ns)
            .replace_status(&name, &PostParams::default(), d)
            .await
            .with_context(|| format!("updating the status of deployment {name}"))
    }
}

/// A resize of the Deployment not yet applied: an active ReplicaSet whose `desired-replicas`
/// annotation differs from the Deployment's size.
fn is_scaling_event(d: &Deployment, new_rs: Option<&ReplicaSet>, olds: &[ReplicaSet]) -> bool {
    new_rs
        .into_iter()
        .chain(olds.iter())
        .filter(|rs| spec_replicas(rs) > 0)
        .any(|rs| {
            // A set without the annotation (not ours originally) says nothing about a resize.
            annotations::desired_replicas_annotation(rs).is_some_and(|n| n != replicas::desired(d))
        })
}

#[cfg(test)]
mod tests {
    use super::super::annotations::DESIRED_REPLICAS;
    use super::super::replicas::tests::{deployment, rs};
    use super::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn desired_annotation(mut r: ReplicaSet, n: Option<&str>) -> ReplicaSet {
        if let Some(n) = n {
            r.metadata.annotations = Some(BTreeMap::from([(
                DESIRED_REPLICAS.to_string(),
                n.to_string(),
            )]));
        }
        r
    }

    #[test]
    fn a_resize_is_seen_on_active_sets_only() {
        let d = deployment(5, IntOrString::Int(1), IntOrString::Int(0));
        // (new set: size, annotation), (old set: size, annotation) -> scaling event
        let cases = [
            ((5, Some("5")), (0, Some("3")), false),
            ((3, Some("3")), (0, Some("3")), true),
            ((2, Some("5")), (1, Some("3")), true),
            ((2, None), (1, None), false),
            ((0, Some("3")), (0, Some("3")), false),
        ];
        for (i, ((n, na), (o, oa), want)) in cases.into_iter().enumerate() {
            let new_rs = desired_annotation(rs("new", n, n), na);
            let old = desired_annotation(rs("old", o, o), oa);
            assert_eq!(
                is_scaling_event(&d, Some(&new_rs), &[old]),
                want,
                "case {i}"
            );
        }
    }
}
