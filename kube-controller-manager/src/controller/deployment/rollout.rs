//! The strategies: rolling update, recreate, and plain scaling (paused Deployments and
//! resizes), with the history cleanup and the status they end with.

use super::conditions;
use super::proportion::{self, by_creation};
use super::replicas::{self, desired, is_recreate, spec_replicas};
use super::sync::{Controller, now};
use anyhow::Context as _;
use client_go_rs::events::EventType;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};

fn name(rs: &ReplicaSet) -> String {
    rs.metadata.name.clone().unwrap_or_default()
}

fn all_of(new_rs: Option<&ReplicaSet>, olds: &[ReplicaSet]) -> Vec<ReplicaSet> {
    olds.iter().cloned().chain(new_rs.cloned()).collect()
}

/// Replaces the entry named like `rs` in `list` with `rs`.
fn put(list: &mut [ReplicaSet], rs: ReplicaSet) {
    if let Some(slot) = list
        .iter_mut()
        .find(|r| r.metadata.name == rs.metadata.name)
    {
        *slot = rs;
    }
}

impl Controller {
    /// Scales without rolling out: a paused Deployment, or a resize of one mid-rollout.
    pub(super) async fn sync_scale(
        &self,
        d: &mut Deployment,
        new_rs: Option<ReplicaSet>,
        mut olds: Vec<ReplicaSet>,
    ) -> anyhow::Result<()> {
        let mut new_rs = new_rs;
        self.scale(d, &mut new_rs, &mut olds).await?;
        if conditions::is_paused(d) {
            self.cleanup(d, &olds).await?;
        }
        self.sync_status_only(d, new_rs.as_ref(), &olds).await
    }

    async fn scale(
        &self,
        d: &Deployment,
        new_rs: &mut Option<ReplicaSet>,
        olds: &mut [ReplicaSet],
    ) -> anyhow::Result<()> {
        let mut sorted: Vec<&ReplicaSet> = olds.iter().collect();
        sorted.sort_by(|a, b| by_creation(a, b));
        let target = replicas::active_or_latest(new_rs.as_ref(), &sorted).cloned();
        if let Some(rs) = target {
            if spec_replicas(&rs) != desired(d) {
                let updated = self.scale_rs(d, &rs, desired(d)).await?;
                self.remember(new_rs, olds, updated);
            }
            return Ok(());
        }
        if let Some(n) = new_rs.as_ref()
            && is_saturated(d, n)
        {
            for old in olds.iter_mut().filter(|o| spec_replicas(o) > 0) {
                *old = self.scale_rs(d, old, 0).await?;
            }
            return Ok(());
        }
        if is_recreate(d) {
            return Ok(());
        }
        let all = all_of(new_rs.as_ref(), olds);
        let active: Vec<&ReplicaSet> = all.iter().filter(|rs| spec_replicas(rs) > 0).collect();
        let status_replicas = d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        for (rs_name, size) in proportion::plan(d, &active, status_replicas) {
            let Some(rs) = all
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(&rs_name))
            else {
                continue;
            };
            // Written even at the same size: the replica annotations record the new size.
            let updated = self.write_scale(d, rs, size).await?;
            self.remember(new_rs, olds, updated);
        }
        Ok(())
    }

    fn remember(
        &self,
        new_rs: &mut Option<ReplicaSet>,
        olds: &mut [ReplicaSet],
        updated: ReplicaSet,
    ) {
        match new_rs {
            Some(n) if n.metadata.name == updated.metadata.name => *n = updated,
            _ => put(olds, updated),
        }
    }

    /// Scales `rs` to `size` unless it is there already.
    async fn scale_rs(
        &self,
        d: &Deployment,
        rs: &ReplicaSet,
        size: i32,
    ) -> anyhow::Result<ReplicaSet> {
        if spec_replicas(rs) == size {
            return Ok(rs.clone());
        }
        self.write_scale(d, rs, size).await
    }

    /// Writes `size` and the Deployment's replica annotations when either is stale, and
    /// records the scaling.
    async fn write_scale(
        &self,
        d: &Deployment,
        rs: &ReplicaSet,
        size: i32,
    ) -> anyhow::Result<ReplicaSet> {
        let before = spec_replicas(rs);
        let mut copy = rs.clone();
        let annotations_changed = super::annotations::set_replicas_annotations(&mut copy, d);
        if before == size && !annotations_changed {
            return Ok(copy);
        }
        if let Some(spec) = copy.spec.as_mut() {
            spec.replicas = Some(size);
        }
        let ns = copy.metadata.namespace.clone().unwrap_or_default();
        let rs_name = name(&copy);
        let updated = self
            .rs_api(&ns)
            .replace(&rs_name, &PostParams::default(), &copy)
            .await
            .with_context(|| format!("scaling replica set {rs_name} to {size}"))?;
        if before != size {
            let direction = if before < size { "up" } else { "down" };
            let msg = format!("Scaled {direction} replica set {rs_name} from {before} to {size}");
            self.event(d, EventType::Normal, "ScalingReplicaSet", msg);
        }
        Ok(updated)
    }

    pub(super) async fn rollout_rolling(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
        new_rs: Option<ReplicaSet>,
        mut olds: Vec<ReplicaSet>,
    ) -> anyhow::Result<()> {
        let mut new_rs = match new_rs {
            Some(n) => n,
            None => match self.get_all_and_sync_revision(d, rs_list, true).await? {
                (Some(n), _) => n,
                (None, _) => anyhow::bail!("the new replica set was not created"),
            },
        };
        // Grow the new set within the surge.
        let want = if spec_replicas(&new_rs) > desired(d) {
            desired(d)
        } else {
            let all = all_of(Some(&new_rs), &olds);
            replicas::new_rs_new_replicas(d, &all.iter().collect::<Vec<_>>(), &new_rs)
        };
        if want != spec_replicas(&new_rs) {
            new_rs = self.scale_rs(d, &new_rs, want).await?;
            return self.sync_rollout_status(d, Some(&new_rs), &olds).await;
        }
        // Shrink the old ones within the unavailability budget.
        let mut active: Vec<&ReplicaSet> = olds.iter().filter(|o| spec_replicas(o) > 0).collect();
        active.sort_by(|a, b| by_creation(a, b));
        let plan = replicas::plan_old_scale_down(d, &active, &new_rs);
        if !plan.is_empty() {
            for (rs_name, size) in plan {
                let Some(rs) = olds
                    .iter()
                    .find(|o| o.metadata.name.as_deref() == Some(&rs_name))
                    .cloned()
                else {
                    continue;
                };
                let updated = self.scale_rs(d, &rs, size).await?;
                put(&mut olds, updated);
            }
            return self.sync_rollout_status(d, Some(&new_rs), &olds).await;
        }
        if conditions::complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup(d, &olds).await?;
        }
        self.sync_rollout_status(d, Some(&new_rs), &olds).await
    }

    pub(super) async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
        new_rs: Option<ReplicaSet>,
        mut olds: Vec<ReplicaSet>,
        pods: &[(String, Pod)],
    ) -> anyhow::Result<()> {
        let mut scaled_down = false;
        for old in olds.iter_mut().filter(|o| spec_replicas(o) > 0) {
            *old = self.scale_rs(d, old, 0).await?;
            scaled_down = true;
        }
        if scaled_down || old_pods_running(new_rs.as_ref(), &olds, pods) {
            return self.sync_rollout_status(d, new_rs.as_ref(), &olds).await;
        }
        let new_rs = match new_rs {
            Some(n) => n,
            None => match self.get_all_and_sync_revision(d, rs_list, true).await? {
                (Some(n), _) => n,
                (None, _) => anyhow::bail!("the new replica set was not created"),
            },
        };
        let new_rs = self.scale_rs(d, &new_rs, desired(d)).await?;
        if conditions::complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup(d, &olds).await?;
        }
        self.sync_rollout_status(d, Some(&new_rs), &olds).await
    }

    /// Deletes the oldest revisions beyond `revisionHistoryLimit`, only those fully scaled down
    /// and settled.
    async fn cleanup(&self, d: &Deployment, olds: &[ReplicaSet]) -> anyhow::Result<()> {
        let Some(limit) = d.spec.as_ref().and_then(|s| s.revision_history_limit) else {
            return Ok(());
        };
        let mut cleanable: Vec<&ReplicaSet> = olds
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .collect();
        let excess = cleanable.len() as i64 - i64::from(limit);
        if excess <= 0 {
            return Ok(());
        }
        cleanable.sort_by(|a, b| {
            super::annotations::revision(a)
                .cmp(&super::annotations::revision(b))
                .then_with(|| by_creation(a, b))
        });
        for rs in cleanable.into_iter().take(excess as usize) {
            let settled = rs.status.as_ref().is_some_and(|s| {
                s.replicas == 0
                    && s.observed_generation.unwrap_or(0) >= rs.metadata.generation.unwrap_or(0)
            });
            if spec_replicas(rs) != 0 || !settled {
                continue;
            }
            let ns = rs.metadata.namespace.clone().unwrap_or_default();
            match self
                .rs_api(&ns)
                .delete(&name(rs), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("deleting old replica set {}", name(rs))));
                }
            }
        }
        Ok(())
    }

    /// Writes the counts (no progress verdict): for paused, resized or deleted Deployments.
    pub(super) async fn sync_status_only(
        &self,
        d: &Deployment,
        new_rs: Option<&ReplicaSet>,
        olds: &[ReplicaSet],
    ) -> anyhow::Result<()> {
        let all = all_of(new_rs, olds);
        let status =
            conditions::calculate_status(d, &all.iter().collect::<Vec<_>>(), new_rs, now());
        if d.status.as_ref() == Some(&status) {
            return Ok(());
        }
        let mut updated = d.clone();
        updated.status = Some(status);
        self.update_status(&updated).await.map(|_| ())
    }

    /// Writes the status with the progress verdict; with nothing new to say, schedules the
    /// check of the progress deadline.
    async fn sync_rollout_status(
        &self,
        d: &Deployment,
        new_rs: Option<&ReplicaSet>,
        olds: &[ReplicaSet],
    ) -> anyhow::Result<()> {
        let all = all_of(new_rs, olds);
        let now = now();
        let status = conditions::rollout_status(d, &all.iter().collect::<Vec<_>>(), new_rs, now);
        if d.status.as_ref() == Some(&status) {
            if let Some(after) = conditions::requeue_after(d, &status, now) {
                let key = client_go_rs::listers::object_key(d);
                self.queue.add_after(key, after);
            }
            return Ok(());
        }
        let mut updated = d.clone();
        updated.status = Some(status);
        self.update_status(&updated).await.map(|_| ())
    }
}

/// The new set at full size and fully available, with its annotation up to date.
fn is_saturated(d: &Deployment, new_rs: &ReplicaSet) -> bool {
    spec_replicas(new_rs) == desired(d)
        && super::annotations::desired_replicas_annotation(new_rs) == Some(desired(d))
        && replicas::available_replicas(new_rs) == desired(d)
}

/// Whether pods of old ReplicaSets may still run (Recreate waits until none may). Terminating
/// pods count: they may still be running until their kubelet confirms.
pub fn old_pods_running(
    new_rs: Option<&ReplicaSet>,
    olds: &[ReplicaSet],
    pods: &[(String, Pod)],
) -> bool {
    if olds.iter().map(replicas::status_replicas).sum::<i32>() > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|n| n.metadata.uid.as_deref());
    pods.iter().any(|(owner, pod)| {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        Some(owner.as_str()) != new_uid && !matches!(phase, Some("Succeeded") | Some("Failed"))
    })
}

#[cfg(test)]
mod tests {
    use super::super::replicas::tests::rs;
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;

    fn pod(phase: &str) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn saturation_needs_size_annotation_and_availability() {
        use super::super::annotations::set_replicas_annotations;
        use super::super::replicas::tests::deployment;
        use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
        let d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        let annotated = |size, available| {
            let mut r = rs("new", size, available);
            set_replicas_annotations(&mut r, &d);
            r
        };
        assert!(is_saturated(&d, &annotated(3, 3)));
        assert!(!is_saturated(&d, &annotated(3, 2)));
        assert!(!is_saturated(&d, &annotated(2, 2)));
        assert!(!is_saturated(&d, &rs("new", 3, 3)));
    }

    #[test]
    fn recreate_waits_for_old_pods() {
        let mut new_rs = rs("new", 0, 0);
        new_rs.metadata.uid = Some("n".into());
        let old = rs("old", 0, 0);
        let cases = [
            (vec![], false),
            (vec![("o".to_string(), pod("Running"))], true),
            (
                vec![
                    ("o".to_string(), pod("Succeeded")),
                    ("o".to_string(), pod("Failed")),
                ],
                false,
            ),
            (vec![("n".to_string(), pod("Running"))], false),
            (vec![("o".to_string(), pod("Unknown"))], true),
        ];
        for (i, (pods, want)) in cases.iter().enumerate() {
            assert_eq!(
                old_pods_running(Some(&new_rs), std::slice::from_ref(&old), pods),
                *want,
                "case {i}"
            );
        }
        assert!(old_pods_running(Some(&new_rs), &[rs("old", 1, 1)], &[]));
    }
}
