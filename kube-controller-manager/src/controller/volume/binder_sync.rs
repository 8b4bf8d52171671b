//! The binder's two syncs, as upstream's `syncClaim` and `syncVolume`.

use super::binder::{Binder, name_of};
use super::matching::{
    ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER, check_volume_satisfies_claim, claim_class, claim_volume_name,
    find_best_match, has_annotation, is_bound_to_claim, volume_mode_mismatch, volume_phase,
};
use client_go_rs::events::EventType;
use client_go_rs::listers::split_key;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, PostParams};

const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
const DEFAULT_CLASS_ANN: &str = "storageclass.kubernetes.io/is-default-class";

impl Binder {
    pub async fn sync_claim(&self, key: String) -> anyhow::Result<()> {
        let Some((Some(ns), name)) = split_key(&key) else {
            return Ok(());
        };
        let Some(pvc) = self.claims.namespace(ns).get(name) else {
            return Ok(());
        };
        if has_annotation(&pvc.metadata, ANN_BIND_COMPLETED) {
            self.sync_bound_claim(&pvc).await
        } else {
            self.sync_unbound_claim(&pvc).await
        }
    }

    fn delay_binding(&self, pvc: &PersistentVolumeClaim) -> bool {
        let class = claim_class(pvc);
        !class.is_empty()
            && self
                .classes
                .get(&class)
                .is_some_and(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"))
    }

    async fn sync_unbound_claim(&self, pvc: &PersistentVolumeClaim) -> anyhow::Result<()> {
        let volume_name = claim_volume_name(pvc).to_string();
        if volume_name.is_empty() {
            let delay = self.delay_binding(pvc);
            let volumes = self.volumes.list();
            if let Some(pv) = find_best_match(pvc, &volumes, delay) {
                return self.bind(&pv, pvc).await;
            }
            // Claims created without a class get the default one once it exists (upstream's
            // retroactive default StorageClass assignment).
            if pvc
                .spec
                .as_ref()
                .is_some_and(|s| s.storage_class_name.is_none())
                && let Some(default) = self.default_class()
            {
                let mut updated = pvc.clone();
                updated
                    .spec
                    .get_or_insert_with(Default::default)
                    .storage_class_name = Some(default);
                let name = name_of(pvc);
                Api::<PersistentVolumeClaim>::namespaced(
                    self.client.clone(),
                    pvc.metadata.namespace.as_deref().unwrap_or_default(),
                )
                .replace(&name, &PostParams::default(), &updated)
                .await
                .map_err(|e| anyhow::anyhow!("assigning the default class to claim {name}: {e}"))?;
                return Ok(());
            }
            let class = claim_class(pvc);
            if delay && !has_annotation(&pvc.metadata, ANN_SELECTED_NODE) {
                self.claim_event(
                    pvc,
                    EventType::Normal,
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding".into(),
                );
            } else if !class.is_empty() {
                self.provision(pvc, &class).await?;
            } else {
                self.claim_event(
                    pvc,
                    EventType::Normal,
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set"
                        .into(),
                );
            }
            return self.set_claim_phase(pvc, "Pending", None).await;
        }
        // The user asked for a volume by name.
        let Some(pv) = self.volumes.get(&volume_name) else {
            return self.set_claim_phase(pvc, "Pending", None).await;
        };
        let claim_ref = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        if claim_ref.is_none() {
            if let Some(why) = check_volume_satisfies_claim(&pv, pvc) {
                self.claim_event(
                    pvc,
                    EventType::Warning,
                    "VolumeMismatch",
                    format!("Cannot bind to requested volume {volume_name:?}: {why}"),
                );
                return self.set_claim_phase(pvc, "Pending", None).await;
            }
            return self.bind(&pv, pvc).await;
        }
        if is_bound_to_claim(&pv, pvc) {
            return self.bind(&pv, pvc).await;
        }
        if !has_annotation(&pvc.metadata, ANN_BOUND_BY_CONTROLLER) {
            self.claim_event(
                pvc,
                EventType::Warning,
                "FailedBinding",
                format!("volume {volume_name:?} already bound to a different claim."),
            );
            return self.set_claim_phase(pvc, "Pending", None).await;
        }
        // The controller's own half-done binding to a volume taken since: start over.
        anyhow::bail!(
            "claim {} is bound by the controller to volume {volume_name}, which is bound to another claim",
            name_of(pvc)
        )
    }

    fn default_class(&self) -> Option<String> {
        let mut defaults: Vec<_> = self
            .classes
            .list()
            .into_iter()
            .filter(|c| {
                c.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(DEFAULT_CLASS_ANN))
                    .is_some_and(|v| v == "true")
            })
            .collect();
        // Several defaults: the newest wins, as upstream.
        defaults.sort_by(|a, b| {
            b.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0)
                .cmp(&a.metadata.creation_timestamp.as_ref().map(|t| t.0))
        });
        defaults.first().map(|c| name_of(c.as_ref()))
    }

    /// No provisioner runs in this controller: an external one is asked through the claim's
    /// annotation, as upstream's `provisionClaimOperationExternal`.
    async fn provision(&self, pvc: &PersistentVolumeClaim, class: &str) -> anyhow::Result<()> {
        let Some(sc) = self.classes.get(class) else {
            self.claim_event(
                pvc,
                EventType::Warning,
                "ProvisioningFailed",
                format!("storageclass.storage.k8s.io {class:?} not found"),
            );
            return Ok(());
        };
        let provisioner = sc.provisioner.clone();
        if provisioner == NO_PROVISIONER || provisioner.starts_with("kubernetes.io/") {
            self.claim_event(
                pvc,
                EventType::Warning,
                "ProvisioningFailed",
                "no provisionable volume plugin matched".into(),
            );
            return Ok(());
        }
        let annotations = pvc.metadata.annotations.clone().unwrap_or_default();
        if annotations.get(ANN_STORAGE_PROVISIONER) != Some(&provisioner)
            || annotations.get(ANN_BETA_STORAGE_PROVISIONER) != Some(&provisioner)
        {
            let mut updated = pvc.clone();
            let a = updated
                .metadata
                .annotations
                .get_or_insert_with(Default::default);
            a.insert(ANN_STORAGE_PROVISIONER.into(), provisioner.clone());
            a.insert(ANN_BETA_STORAGE_PROVISIONER.into(), provisioner.clone());
            let name = name_of(pvc);
            Api::<PersistentVolumeClaim>::namespaced(
                self.client.clone(),
                pvc.metadata.namespace.as_deref().unwrap_or_default(),
            )
            .replace(&name, &PostParams::default(), &updated)
            .await
            .map_err(|e| anyhow::anyhow!("annotating claim {name} for its provisioner: {e}"))?;
        }
        self.claim_event(
            pvc,
            EventType::Normal,
            "ExternalProvisioning",
            format!(
                "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
            ),
        );
        Ok(())
    }

    async fn sync_bound_claim(&self, pvc: &PersistentVolumeClaim) -> anyhow::Result<()> {
        let volume_name = claim_volume_name(pvc).to_string();
        if volume_name.is_empty() {
            return self.claim_lost(pvc, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!").await;
        }
        let Some(pv) = self.volumes.get(&volume_name) else {
            return self
                .claim_lost(
                    pvc,
                    "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                )
                .await;
        };
        let claim_ref = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        match claim_ref {
            None => self.bind(&pv, pvc).await,
            Some(r) if r.uid.is_some() && r.uid == pvc.metadata.uid => self.bind(&pv, pvc).await,
            Some(_) => {
                self.claim_event(
                    pvc,
                    EventType::Warning,
                    "ClaimMisbound",
                    "Two claims are bound to the same volume, this one is bound incorrectly".into(),
                );
                self.set_claim_phase(pvc, "Lost", None).await
            }
        }
    }

    async fn claim_lost(&self, pvc: &PersistentVolumeClaim, msg: &str) -> anyhow::Result<()> {
        if super::matching::claim_phase(pvc) != "Lost" {
            self.claim_event(pvc, EventType::Warning, "ClaimLost", msg.into());
        }
        self.set_claim_phase(pvc, "Lost", None).await
    }

    pub async fn sync_volume(&self, name: String) -> anyhow::Result<()> {
        let Some(pv) = self.volumes.get(&name) else {
            return Ok(());
        };
        let Some(claim_ref) = pv.spec.as_ref().and_then(|s| s.claim_ref.clone()) else {
            self.set_volume_phase(&pv, "Available", None).await?;
            return Ok(());
        };
        let ns = claim_ref.namespace.clone().unwrap_or_default();
        let claim_name = claim_ref.name.clone().unwrap_or_default();
        if claim_ref.uid.as_deref().is_none_or(str::is_empty) {
            // Pre-bound by the user: the claim's sync binds it.
            self.set_volume_phase(&pv, "Available", None).await?;
            self.claim_queue.add(format!("{ns}/{claim_name}"));
            return Ok(());
        }
        let mut claim = self.claims.namespace(&ns).get(&claim_name);
        if claim.is_none() {
            // A claim created a moment ago may not be in the cache: ask the server before
            // releasing its volume.
            let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &ns);
            claim = api
                .get_opt(&claim_name)
                .await
                .map_err(|e| anyhow::anyhow!("getting claim {ns}/{claim_name}: {e}"))?
                .map(std::sync::Arc::new);
        }
        let claim = claim.filter(|c| c.metadata.uid == claim_ref.uid);
        let Some(claim) = claim else {
            return self.release(&pv).await;
        };
        let bound_to = claim_volume_name(&claim);
        if bound_to.is_empty() {
            if volume_mode_mismatch(&pv, &claim) {
                // The claim's sync would never pick this volume: say why on both.
                self.volume_event(
                    &pv,
                    EventType::Warning,
                    "VolumeMismatch",
                    format!("Cannot bind PersistentVolume to requested PersistentVolumeClaim {claim_name:?} due to incompatible volumeMode."),
                );
                self.claim_event(
                    &claim,
                    EventType::Warning,
                    "VolumeMismatch",
                    format!("Cannot bind PersistentVolume {name:?} to requested PersistentVolumeClaim due to incompatible volumeMode."),
                );
                return Ok(());
            }
            // The scheduler (or this controller, half-way) bound the volume: the claim's
            // sync completes it.
            self.claim_queue.add(format!("{ns}/{claim_name}"));
            return Ok(());
        }
        if bound_to == name {
            self.set_volume_phase(&pv, "Bound", None).await?;
            return Ok(());
        }
        // The claim is bound to another volume: this one is free again.
        self.unbind_volume(&pv).await
    }

    async fn release(&self, pv: &PersistentVolume) -> anyhow::Result<()> {
        match volume_phase(pv) {
            "Released" => self.reclaim(pv).await,
            "Failed" => Ok(()),
            _ => {
                let updated = self.set_volume_phase(pv, "Released", None).await?;
                self.reclaim(&updated).await
            }
        }
    }
}
