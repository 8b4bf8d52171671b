//! persistentvolume-binder-controller: binds claims to existing volumes (no provisioner runs
//! here: a class with one gets the external-provisioning annotation and waits), marks volumes
//! of deleted claims Released and reclaims them.

use super::super::utils::controller_ref::object_reference;
use super::super::worker::run_workers;
use super::super::{ControllerContext, InitResult, Running};
use super::matching::{
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, claim_phase, claim_volume_name, has_annotation,
    is_bound_to_claim, volume_phase,
};
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::informers::{Deleted, EventHandlerFuncs};
use client_go_rs::listers::{Lister, object_key};
use client_go_rs::workqueue::RateLimitingQueue;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, PostParams};
use std::sync::Arc;

const NAME: &str = "persistentvolume-binder";

pub(super) struct Binder {
    pub client: kube::Client,
    pub volumes: Lister<PersistentVolume>,
    pub claims: Lister<PersistentVolumeClaim>,
    pub classes: Lister<StorageClass>,
    pub recorder: EventRecorder,
    pub claim_queue: RateLimitingQueue<String>,
}

fn api_err(what: String) -> impl FnOnce(kube::Error) -> anyhow::Error {
    move |e| anyhow::anyhow!("{what}: {e}")
}

pub(super) fn name_of<K: kube::Resource>(o: &K) -> String {
    o.meta().name.clone().unwrap_or_default()
}

impl Binder {
    fn pv_api(&self) -> Api<PersistentVolume> {
        Api::all(self.client.clone())
    }

    fn pvc_api(&self, pvc: &PersistentVolumeClaim) -> Api<PersistentVolumeClaim> {
        Api::namespaced(
            self.client.clone(),
            pvc.metadata.namespace.as_deref().unwrap_or_default(),
        )
    }

    pub fn claim_event(
        &self,
        pvc: &PersistentVolumeClaim,
        t: EventType,
        reason: &str,
        msg: String,
    ) {
        let r = object_reference(&pvc.metadata, "v1", "PersistentVolumeClaim");
        self.recorder.event(&r, t, reason, msg);
    }

    pub fn volume_event(&self, pv: &PersistentVolume, t: EventType, reason: &str, msg: String) {
        let r = object_reference(&pv.metadata, "v1", "PersistentVolume");
        self.recorder.event(&r, t, reason, msg);
    }

    /// Sets the volume's phase (and its transition time) unless it already has it.
    pub async fn set_volume_phase(
        &self,
        pv: &PersistentVolume,
        phase: &str,
        message: Option<String>,
    ) -> anyhow::Result<PersistentVolume> {
        if volume_phase(pv) == phase {
            return Ok(pv.clone());
        }
        let mut updated = pv.clone();
        let status = updated
            .status
            .get_or_insert_with(PersistentVolumeStatus::default);
        status.phase = Some(phase.to_string());
        status.message = message;
        status.last_phase_transition_time = Some(Time(jiff::Timestamp::now()));
        let name = name_of(pv);
        self.pv_api()
            .replace_status(&name, &PostParams::default(), &updated)
            .await
            .map_err(api_err(format!("setting phase {phase} of volume {name}")))
    }

    /// Sets the claim's phase; a Bound claim reports the volume's capacity and access modes.
    pub async fn set_claim_phase(
        &self,
        pvc: &PersistentVolumeClaim,
        phase: &str,
        volume: Option<&PersistentVolume>,
    ) -> anyhow::Result<()> {
        let mut updated = pvc.clone();
        let status = updated
            .status
            .get_or_insert_with(PersistentVolumeClaimStatus::default);
        let before = status.clone();
        status.phase = Some(phase.to_string());
        if let Some(pv) = volume {
            let spec = pv.spec.clone().unwrap_or_default();
            status.access_modes = spec.access_modes;
            status.capacity = spec.capacity;
        } else if phase != "Bound" {
            status.access_modes = None;
            status.capacity = None;
        }
        if *status == before {
            return Ok(());
        }
        let name = name_of(pvc);
        self.pvc_api(pvc)
            .replace_status(&name, &PostParams::default(), &updated)
            .await
            .map_err(api_err(format!("setting phase {phase} of claim {name}")))?;
        Ok(())
    }

    /// Completes a binding: the volume's claimRef, both phases Bound, the claim's volumeName
    /// and annotations (each write only when something is missing).
    pub async fn bind(
        &self,
        pv: &PersistentVolume,
        pvc: &PersistentVolumeClaim,
    ) -> anyhow::Result<()> {
        let pv_name = name_of(pv);
        let mut volume = pv.clone();
        let ref_has_uid = pv
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_some_and(|r| r.uid.is_some() && r.uid == pvc.metadata.uid);
        if !ref_has_uid {
            let spec = volume.spec.get_or_insert_with(Default::default);
            let pre_bound = is_bound_to_claim(pv, pvc);
            spec.claim_ref = Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                name: pvc.metadata.name.clone(),
                namespace: pvc.metadata.namespace.clone(),
                uid: pvc.metadata.uid.clone(),
                resource_version: pvc.metadata.resource_version.clone(),
                field_path: None,
            });
            // A volume the user pre-bound by name stays the user's binding.
            if !pre_bound {
                volume
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
            }
            volume = self
                .pv_api()
                .replace(&pv_name, &PostParams::default(), &volume)
                .await
                .map_err(api_err(format!("binding volume {pv_name} to its claim")))?;
        }
        let volume = self.set_volume_phase(&volume, "Bound", None).await?;

        let claim_name = name_of(pvc);
        let mut claim = pvc.clone();
        let mut changed = false;
        if claim_volume_name(pvc) != pv_name {
            claim.spec.get_or_insert_with(Default::default).volume_name = Some(pv_name.clone());
            claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
            changed = true;
        }
        if !has_annotation(&pvc.metadata, ANN_BIND_COMPLETED) {
            claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(ANN_BIND_COMPLETED.into(), "yes".into());
            changed = true;
        }
        if changed {
            claim = self
                .pvc_api(pvc)
                .replace(&claim_name, &PostParams::default(), &claim)
                .await
                .map_err(api_err(format!(
                    "binding claim {claim_name} to volume {pv_name}"
                )))?;
        }
        if claim_phase(&claim) != "Bound"
            || claim
                .status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .is_none()
        {
            self.set_claim_phase(&claim, "Bound", Some(&volume)).await?;
        }
        Ok(())
    }

    /// Undoes the volume side of a binding the controller made; a user's pre-binding keeps
    /// its name and loses only the uid.
    pub async fn unbind_volume(&self, pv: &PersistentVolume) -> anyhow::Result<()> {
        let name = name_of(pv);
        let mut volume = pv.clone();
        if has_annotation(&pv.metadata, ANN_BOUND_BY_CONTROLLER) {
            if let Some(spec) = volume.spec.as_mut() {
                spec.claim_ref = None;
            }
            if let Some(a) = volume.metadata.annotations.as_mut() {
                a.remove(ANN_BOUND_BY_CONTROLLER);
            }
        } else if let Some(r) = volume.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
            r.uid = None;
        }
        let volume = self
            .pv_api()
            .replace(&name, &PostParams::default(), &volume)
            .await
            .map_err(api_err(format!("unbinding volume {name}")))?;
        self.set_volume_phase(&volume, "Available", None).await?;
        Ok(())
    }

    /// A Released volume by its reclaim policy: Retain keeps it for the administrator,
    /// Delete removes the object (there is no storage behind it here), Recycle is gone.
    pub async fn reclaim(&self, pv: &PersistentVolume) -> anyhow::Result<()> {
        let name = name_of(pv);
        let policy = pv
            .spec
            .as_ref()
            .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
            .unwrap_or("Retain");
        match policy {
            "Delete" => {
                if let Some(p) = pv
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(super::matching::ANN_PROVISIONED_BY))
                    .filter(|p| !p.starts_with("kubernetes.io/"))
                {
                    // Its external provisioner deletes the storage and the object.
                    tracing::debug!(volume = %name, provisioner = %p, "waiting for the external provisioner to delete the volume");
                    return Ok(());
                }
                match self.pv_api().delete(&name, &DeleteParams::default()).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                    Err(e) => Err(anyhow::anyhow!("deleting released volume {name}: {e}")),
                }
            }
            "Recycle" => {
                let msg = "No recycler plugin found for the volume!".to_string();
                self.volume_event(pv, EventType::Warning, "VolumeFailedRecycle", msg.clone());
                self.set_volume_phase(pv, "Failed", Some(msg)).await?;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Claims waiting for a volume, to look again when one becomes Available.
    pub fn enqueue_unbound_claims(&self) {
        for c in self.claims.list() {
            if claim_volume_name(&c).is_empty() && c.metadata.deletion_timestamp.is_none() {
                self.claim_queue.add(object_key(c.as_ref()));
            }
        }
    }
}

/// Whether a volume event should wake the claims waiting for a volume: it is free and Available
/// and just became so or changed. Upstream leaves this to its periodic resync; doing it on the
/// event binds a waiting claim without that delay.
fn offers_itself(old: Option<&PersistentVolume>, new: &PersistentVolume) -> bool {
    let free =
        volume_phase(new) == "Available" && new.spec.as_ref().is_none_or(|s| s.claim_ref.is_none());
    free && old.is_none_or(|o| volume_phase(o) != "Available" || o.spec != new.spec)
}

/// Upstream's `--pvclaimbinder-sync-period` default: every volume and claim is synced again
/// this often, which retries what an event alone would not (a conflict lost to another
/// writer, a half-done binding whose event was missed).
const RESYNC_PERIOD: std::time::Duration = std::time::Duration::from_secs(15);

async fn resync(
    binder: &Binder,
    (volumes, volume_queue): (Lister<PersistentVolume>, RateLimitingQueue<String>),
    shutdown: tokio_util::sync::CancellationToken,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(RESYNC_PERIOD) => {}
        }
        for c in binder.claims.list() {
            binder.claim_queue.add(object_key(c.as_ref()));
        }
        for v in volumes.list() {
            volume_queue.add(name_of(v.as_ref()));
        }
    }
}

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(async move {
        let client = ctx.client_for("persistent-volume-binder").await?;
        let volumes = ctx.informers.informer::<PersistentVolume>();
        let claims = ctx.informers.informer::<PersistentVolumeClaim>();
        let classes = ctx.informers.informer::<StorageClass>();
        let claim_queue = RateLimitingQueue::<String>::default_controller("claims");
        let volume_queue = RateLimitingQueue::<String>::default_controller("volumes");
        let binder = Arc::new(Binder {
            client,
            volumes: volumes.lister(),
            claims: claims.lister(),
            classes: classes.lister(),
            recorder: ctx.recorder("persistentvolume-controller"),
            claim_queue: claim_queue.clone(),
        });

        let (v1, v2, v3, vc) = (
            volume_queue.clone(),
            volume_queue.clone(),
            claim_queue.clone(),
            volume_queue.clone(),
        );
        let (b_add, b_update) = (binder.clone(), binder.clone());
        volumes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |v: &Arc<PersistentVolume>, _| {
                    v1.add(name_of(v.as_ref()));
                    if offers_itself(None, v) {
                        b_add.enqueue_unbound_claims();
                    }
                })
                .on_update(
                    move |old: &Arc<PersistentVolume>, v: &Arc<PersistentVolume>| {
                        v2.add(name_of(v.as_ref()));
                        if offers_itself(Some(old), v) {
                            b_update.enqueue_unbound_claims();
                        }
                    },
                )
                .on_delete(move |d: &Deleted<PersistentVolume>| {
                    // Its claim has lost the volume.
                    if let Some(r) = d.object().spec.as_ref().and_then(|s| s.claim_ref.as_ref()) {
                        let ns = r.namespace.as_deref().unwrap_or_default();
                        v3.add(format!("{ns}/{}", r.name.as_deref().unwrap_or_default()));
                    }
                }),
        );
        let (c1, c2) = (claim_queue.clone(), claim_queue.clone());
        claims.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |c: &Arc<PersistentVolumeClaim>, _| c1.add(object_key(c.as_ref())))
                .on_update(move |_, c: &Arc<PersistentVolumeClaim>| c2.add(object_key(c.as_ref())))
                .on_delete(move |d: &Deleted<PersistentVolumeClaim>| {
                    // Its volume is Released now.
                    let name = claim_volume_name(d.object());
                    if !name.is_empty() {
                        vc.add(name.to_string());
                    }
                }),
        );
        let b = binder.clone();
        classes.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |_: &Arc<StorageClass>, _| b.enqueue_unbound_claims()),
        );

        let shutdown = ctx.shutdown.clone();
        let volume_lister = (volumes.lister(), volume_queue.clone());
        Ok(Some(Box::pin(async move {
            if !volumes.wait_for_cache_sync(&shutdown).await
                || !claims.wait_for_cache_sync(&shutdown).await
                || !classes.wait_for_cache_sync(&shutdown).await
            {
                return;
            }
            let b1 = binder.clone();
            let binder_for_resync = binder.clone();
            let resync_shutdown = shutdown.clone();
            let claims_run = run_workers(NAME, claim_queue, 1, shutdown.clone(), move |key| {
                let b = b1.clone();
                async move { b.sync_claim(key).await }
            });
            let volumes_run = run_workers(NAME, volume_queue, 1, shutdown, move |name| {
                let b = binder.clone();
                async move { b.sync_volume(name).await }
            });
            let resync = resync(&binder_for_resync, volume_lister, resync_shutdown);
            tokio::join!(claims_run, volumes_run, resync);
        }) as Running))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(v: serde_json::Value) -> PersistentVolume {
        serde_json::from_value(v).expect("pv")
    }

    #[test]
    fn which_volume_events_wake_waiting_claims() {
        let available = pv(
            json!({"metadata": {"name": "a"}, "spec": {"capacity": {"storage": "1Gi"}}, "status": {"phase": "Available"}}),
        );
        let pending = pv(
            json!({"metadata": {"name": "a"}, "spec": {"capacity": {"storage": "1Gi"}}, "status": {"phase": "Pending"}}),
        );
        let grown = pv(
            json!({"metadata": {"name": "a"}, "spec": {"capacity": {"storage": "2Gi"}}, "status": {"phase": "Available"}}),
        );
        let claimed = pv(
            json!({"metadata": {"name": "a"}, "spec": {"claimRef": {"name": "c"}}, "status": {"phase": "Available"}}),
        );
        assert!(offers_itself(None, &available));
        assert!(!offers_itself(None, &pending));
        assert!(offers_itself(Some(&pending), &available));
        assert!(!offers_itself(Some(&available), &available), "a resync");
        assert!(offers_itself(Some(&available), &grown));
        assert!(!offers_itself(Some(&pending), &claimed));
    }
}
