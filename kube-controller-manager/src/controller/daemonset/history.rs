//! Keeping a DaemonSet's ControllerRevisions: claim them, find (or snapshot) the one holding
//! the current template, fold duplicates, and prune old ones (upstream's `constructHistory`,
//! `dedupCurHistories`, `snapshot`, `cleanupHistory`).

use super::plan::NodePods;
use super::revision::{REVISION_HASH_LABEL, matches, new_revision, revisions_to_prune};
use super::sync::Controller;
use crate::controller::utils::controller_ref::{ClaimOwner, claim_objects, recheck_owner};
use crate::controller::utils::history::next_revision_number;
use anyhow::Context as _;
use api_types::labels::Selector;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The default `spec.revisionHistoryLimit`.
const DEFAULT_HISTORY_LIMIT: i32 = 10;

fn is_conflict(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == code)
}

impl Controller {
    /// The current revision (created if missing) and the old ones.
    pub async fn construct_history(
        &self,
        ds: &DaemonSet,
        selector: &Selector,
    ) -> anyhow::Result<(ControllerRevision, Vec<ControllerRevision>)> {
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        let name = ds.metadata.name.as_deref().unwrap_or("");
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        let ds_api: Api<DaemonSet> = Api::namespaced(self.client.clone(), ns);
        let owner = ClaimOwner {
            meta: &ds.metadata,
            api_version: "apps/v1",
            kind: "DaemonSet",
        };
        let candidates = self.revisions.namespace(ns).list();
        let claimed = claim_objects(&api, owner, selector, candidates, || {
            recheck_owner(&ds_api, name, ds.metadata.uid.as_deref())
        })
        .await?;
        let mut current = Vec::new();
        let mut old = Vec::new();
        for rev in claimed {
            let mut rev = rev.as_ref().clone();
            let has_hash = rev
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(REVISION_HASH_LABEL));
            if !has_hash {
                // Revisions from before the hash label: their name is as good a hash.
                let rev_name = rev.metadata.name.clone().unwrap_or_default();
                rev.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(REVISION_HASH_LABEL.into(), rev_name.clone());
                rev = api
                    .replace(&rev_name, &PostParams::default(), &rev)
                    .await
                    .with_context(|| format!("labelling revision {rev_name}"))?;
            }
            if matches(ds, &rev) {
                current.push(rev);
            } else {
                old.push(rev);
            }
        }
        let next_revision = next_revision_number(&old);
        let cur = if current.is_empty() {
            self.snapshot(ds, next_revision).await?
        } else {
            let mut cur = self.dedup(ds, current).await?;
            if cur.revision < next_revision {
                cur.revision = next_revision;
                let rev_name = cur.metadata.name.clone().unwrap_or_default();
                cur = api
                    .replace(&rev_name, &PostParams::default(), &cur)
                    .await
                    .with_context(|| format!("bumping revision {rev_name}"))?;
            }
            cur
        };
        Ok((cur, old))
    }

    /// Creates the revision of the current template; on a name taken by another template,
    /// bumps `status.collisionCount` so the next sync hashes differently.
    async fn snapshot(&self, ds: &DaemonSet, revision: i64) -> anyhow::Result<ControllerRevision> {
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        let rev = new_revision(ds, revision);
        let rev_name = rev.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), &rev).await {
            Ok(created) => return Ok(created),
            Err(e) if is_conflict(&e, 409) => {}
            Err(e) => return Err(e).with_context(|| format!("creating revision {rev_name}")),
        }
        let existing = api
            .get(&rev_name)
            .await
            .with_context(|| format!("reading revision {rev_name}"))?;
        if matches(ds, &existing) {
            return Ok(existing);
        }
        let ds_name = ds.metadata.name.as_deref().unwrap_or("");
        let ds_api: Api<DaemonSet> = Api::namespaced(self.client.clone(), ns);
        let mut fresh = ds_api
            .get(ds_name)
            .await
            .with_context(|| format!("reading DaemonSet {ds_name}"))?;
        let seen = ds.status.as_ref().and_then(|s| s.collision_count);
        let live = fresh.status.as_ref().and_then(|s| s.collision_count);
        if seen != live {
            anyhow::bail!(
                "found a stale collision count ({seen:?}, expected {live:?}) of DaemonSet {ds_name}; will retry until it is updated"
            );
        }
        let status = fresh.status.get_or_insert_with(Default::default);
        let count = status.collision_count.unwrap_or(0) + 1;
        status.collision_count = Some(count);
        ds_api
            .replace_status(ds_name, &PostParams::default(), &fresh)
            .await
            .with_context(|| format!("bumping the collision count of {ds_name}"))?;
        anyhow::bail!(
            "found a hash collision for DaemonSet {ds_name} - bumping collisionCount to {count} to resolve it"
        )
    }

    /// Several revisions hold the current template: keep the newest, move the pods of the
    /// others onto its hash, delete the others.
    async fn dedup(
        &self,
        ds: &DaemonSet,
        mut current: Vec<ControllerRevision>,
    ) -> anyhow::Result<ControllerRevision> {
        current.sort_by_key(|r| r.revision);
        let keep = current.pop().context("no current revision")?;
        if current.is_empty() {
            return Ok(keep);
        }
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let hash_of = |r: &ControllerRevision| {
            r.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(REVISION_HASH_LABEL))
                .cloned()
                .unwrap_or_default()
        };
        let keep_hash = hash_of(&keep);
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        let pods = self.pods.namespace(ns).list();
        for dup in &current {
            let dup_hash = hash_of(dup);
            for pod in pods.iter().filter(|p| {
                crate::controller::utils::controller_ref::controller_of(&p.metadata)
                    .is_some_and(|r| r.uid == uid)
                    && p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(REVISION_HASH_LABEL))
                        == Some(&dup_hash)
            }) {
                let pod_name = pod.metadata.name.as_deref().unwrap_or("");
                let patch = json!({"metadata": {"labels": {REVISION_HASH_LABEL: keep_hash}}});
                pods_api
                    .patch(pod_name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .with_context(|| format!("relabelling pod {pod_name}"))?;
            }
            let dup_name = dup.metadata.name.as_deref().unwrap_or("");
            match api.delete(dup_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_conflict(&e, 404) => {}
                Err(e) => return Err(e).with_context(|| format!("deleting revision {dup_name}")),
            }
        }
        Ok(keep)
    }

    /// Deletes the oldest revisions beyond `revisionHistoryLimit` that no pod runs.
    pub async fn cleanup_history(
        &self,
        ds: &DaemonSet,
        old: &[ControllerRevision],
        node_pods: &NodePods,
    ) -> anyhow::Result<()> {
        let limit = ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(DEFAULT_HISTORY_LIMIT);
        let limit = usize::try_from(limit).unwrap_or(0);
        if old.len() <= limit {
            return Ok(());
        }
        let live: BTreeSet<String> = node_pods
            .values()
            .flatten()
            .filter_map(|p: &Arc<Pod>| {
                p.metadata
                    .labels
                    .as_ref()?
                    .get(REVISION_HASH_LABEL)
                    .cloned()
            })
            .collect();
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), ns);
        for rev in revisions_to_prune(old, limit, &live) {
            let rev_name = rev.metadata.name.as_deref().unwrap_or("");
            match api.delete(rev_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_conflict(&e, 404) => {}
                Err(e) => return Err(e).with_context(|| format!("deleting revision {rev_name}")),
            }
        }
        Ok(())
    }
}
