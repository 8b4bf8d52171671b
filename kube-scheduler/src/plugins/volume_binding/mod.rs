//! The VolumeBinding plugin: a pod's PersistentVolumeClaims must exist, Immediate claims must
//! be bound, bound volumes must be reachable from the node, and WaitForFirstConsumer claims
//! must find a volume or a provisioner for it. Reserve assumes the choice, PreBind writes it
//! through the API and waits for the PV controller to complete the bindings.
//!
//! `helpers` holds the storage facts the other volume plugins share.

mod assume_cache;
pub mod binder;
pub mod helpers;

use crate::apis::config::args::{VolumeBindingArgs, decode_args};
use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, PreBindPlugin,
    PreFilterPlugin, PreFilterResult, ReservePlugin, Snapshot, Status,
};
use assume_cache::AssumeCache;
use async_trait::async_trait;
use binder::{
    CapacityFacts, ClaimFacts, PodVolumeClaims, PodVolumes, VolumeFacts, claim_fully_bound,
    find_pod_volumes,
};
use client_go_rs::listers::Lister;
use helpers::{
    ANN_SELECTED_NODE, claim_class, claim_volume_name, event_object, node_labels, pod_uses_claim,
    pod_volumes, pvc_not_found, volume_claim_name, volume_is_for_pod,
};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use kube::Api;
use kube::api::PostParams;
use parking_lot::Mutex;
use serde_json::Value;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "VolumeBinding";
const STATE_KEY: &str = "VolumeBinding";
const ERR_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
/// How often PreBind looks at the informers while it waits for the bindings to complete.
const BIND_POLL_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Clone, Default)]
struct StateData {
    /// `None` when the pod has no claims (PreFilter skipped).
    claims: Option<Arc<PodVolumeClaims>>,
    /// Filter's findings per feasible node; Filter runs in parallel, hence the lock. Clones of
    /// the state (preemption) share it, as upstream's.
    by_node: Arc<Mutex<HashMap<String, Arc<PodVolumes>>>>,
    /// Set by Reserve: nothing is left to bind.
    all_bound: bool,
}

pub struct VolumeBinding {
    client: kube::Client,
    pvcs: Arc<AssumeCache<PersistentVolumeClaim>>,
    pvs: Arc<AssumeCache<PersistentVolume>>,
    classes: Lister<StorageClass>,
    drivers: Lister<CSIDriver>,
    storage_capacities: Lister<CSIStorageCapacity>,
    bind_timeout: Duration,
}

pub fn new(args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(build(args, ctx)?))
}

fn build(args: Option<&Value>, ctx: &PluginContext) -> Result<VolumeBinding, String> {
    let args: VolumeBindingArgs = decode_args(args)?;
    if args.bind_timeout_seconds < 0 {
        return Err(format!(
            "bindTimeoutSeconds: Invalid value: {}: invalid BindTimeoutSeconds, should not be a negative value",
            args.bind_timeout_seconds
        ));
    }
    // Registered so the factory lists and watches CSINodes for the CSINode events below.
    let _ = ctx.informers.informer::<CSINode>();
    Ok(VolumeBinding {
        client: ctx.client.clone(),
        pvcs: Arc::new(AssumeCache::new(
            ctx.informers.informer::<PersistentVolumeClaim>().lister(),
        )),
        pvs: Arc::new(AssumeCache::new(
            ctx.informers.informer::<PersistentVolume>().lister(),
        )),
        classes: ctx.informers.informer::<StorageClass>().lister(),
        drivers: ctx.informers.informer::<CSIDriver>().lister(),
        storage_capacities: ctx.informers.informer::<CSIStorageCapacity>().lister(),
        bind_timeout: Duration::from_secs(args.bind_timeout_seconds as u64),
    })
}

/// The nodes named by a local volume's node affinity: per term the intersection of its
/// `kubernetes.io/hostname In` values, unioned over terms (upstream's
/// `GetLocalPersistentVolumeNodeNames`; a term without such an expression adds nothing).
fn local_volume_node_names(pv: &PersistentVolume) -> Option<HashSet<String>> {
    let required = pv
        .spec
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required
        .as_ref()?;
    let mut out = HashSet::new();
    for term in &required.node_selector_terms {
        let mut nodes: Option<HashSet<&String>> = None;
        for e in term.match_expressions.iter().flatten() {
            if e.key != "kubernetes.io/hostname" || e.operator != "In" {
                continue;
            }
            let values: HashSet<&String> = e.values.iter().flatten().collect();
            nodes = Some(match nodes {
                None => values,
                Some(n) => n.intersection(&values).copied().collect(),
            });
        }
        out.extend(nodes.into_iter().flatten().cloned());
    }
    (!out.is_empty()).then_some(out)
}

/// The only nodes the bound claims' local volumes allow, when some volume names nodes
/// (upstream's `GetEligibleNodes`: it narrows the nodes Filter visits).
fn eligible_nodes(claims: &PodVolumeClaims) -> Option<HashSet<String>> {
    let mut eligible: Option<HashSet<String>> = None;
    for (_, volume) in &claims.bound {
        // A missing volume leaves the decision to Filter.
        let Some(names) = local_volume_node_names(&volume.as_ref()?.pv) else {
            continue;
        };
        eligible = Some(match eligible {
            None => names,
            Some(e) => e.intersection(&names).cloned().collect(),
        });
    }
    eligible
}

fn claim_key(pvc: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        pvc.metadata.namespace.as_deref().unwrap_or_default(),
        pvc.metadata.name.as_deref().unwrap_or_default()
    )
}

fn not_found_state() -> Status {
    Status::state_not_found(STATE_KEY)
}

impl VolumeBinding {
    /// The pod's claims; an error (shown as UnschedulableAndUnresolvable) when one is missing,
    /// lost, being deleted, or not the pod's own ephemeral claim. `Ok(None)`: no claims.
    fn pod_claims(&self, pod: &Pod) -> Result<Option<Vec<Arc<PersistentVolumeClaim>>>, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        for vol in pod_volumes(pod) {
            let Some((name, ephemeral)) = volume_claim_name(pod, vol) else {
                continue;
            };
            let Some(pvc) = self.pvcs.get(ns, &name) else {
                return Err(if ephemeral {
                    // Normal right after the pod is created: the ephemeral volume controller
                    // has not made the claim yet.
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}"
                    )
                } else {
                    pvc_not_found(&name)
                });
            };
            if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
                return Err(format!(
                    "persistentvolumeclaim {name:?} bound to non-existent persistentvolume {:?}",
                    claim_volume_name(&pvc)
                ));
            }
            if pvc.metadata.deletion_timestamp.is_some() {
                return Err(format!("persistentvolumeclaim {name:?} is being deleted"));
            }
            if ephemeral {
                volume_is_for_pod(pod, &pvc)?;
            }
            out.push(pvc);
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// Whether an unbound claim waits for its first consumer.
    fn delay_binding(&self, pvc: &PersistentVolumeClaim) -> Result<bool, String> {
        let class = claim_class(pvc);
        if class.is_empty() {
            return Ok(false);
        }
        let Some(sc) = self.classes.get(class) else {
            return Ok(false);
        };
        match sc.volume_binding_mode.as_deref() {
            None => Err(format!(
                "VolumeBindingMode not set for StorageClass {class:?}"
            )),
            Some(mode) => Ok(mode == "WaitForFirstConsumer"),
        }
    }

    fn sort_claims(
        &self,
        pvcs: Vec<Arc<PersistentVolumeClaim>>,
    ) -> Result<PodVolumeClaims, String> {
        let mut out = PodVolumeClaims::default();
        for pvc in pvcs {
            if claim_fully_bound(&pvc) {
                let pv = self.pvs.get(claim_volume_name(&pvc)).map(VolumeFacts::new);
                out.bound.push((pvc, pv));
            } else if claim_volume_name(&pvc).is_empty() && self.delay_binding(&pvc)? {
                out.unbound_delay_binding.push(ClaimFacts::new(pvc));
            } else {
                // Immediate claims, and claims pre-bound to a volume, are the PV controller's.
                out.unbound_immediate.push(pvc);
            }
        }
        out.unbound_delay_binding.sort_by_key(|c| c.requested);
        for claim in &out.unbound_delay_binding {
            let class = claim_class(&claim.pvc);
            if !out.unbound_volumes.contains_key(class) {
                let facts = self
                    .pvs
                    .list_class(class)
                    .into_iter()
                    .map(VolumeFacts::new)
                    .collect();
                out.unbound_volumes.insert(class.to_string(), facts);
                out.capacities
                    .insert(class.to_string(), self.storage_pools(class));
            }
        }
        Ok(out)
    }

    /// The storage pools of a class whose CSI driver opted into capacity tracking; `None`
    /// when there is nothing to check (no such class, not a CSI driver, or not opted in).
    fn storage_pools(&self, class: &str) -> Option<Vec<CapacityFacts>> {
        let sc = self.classes.get(class)?;
        let driver = self.drivers.get(&sc.provisioner)?;
        if driver.spec.storage_capacity != Some(true) {
            return None;
        }
        Some(
            self.storage_capacities
                .list_matching(|c| c.storage_class_name == class)
                .iter()
                .map(|c| CapacityFacts::new(c))
                .collect(),
        )
    }

    fn assume(&self, volumes: &PodVolumes) {
        for (pv, _) in &volumes.static_bindings {
            self.pvs
                .assume(pv.metadata.name.clone().unwrap_or_default(), pv.clone());
        }
        for pvc in &volumes.dynamic_provisions {
            self.pvcs.assume(claim_key(pvc), pvc.clone());
        }
    }

    fn revert(&self, volumes: &PodVolumes) {
        for (pv, _) in &volumes.static_bindings {
            self.pvs
                .restore(pv.metadata.name.as_deref().unwrap_or_default());
        }
        for pvc in &volumes.dynamic_provisions {
            self.pvcs.restore(&claim_key(pvc));
        }
    }

    /// Writes the chosen bindings: volumes get their claimRef, provisioned claims their node.
    async fn write_bindings(&self, volumes: &PodVolumes) -> Result<(), String> {
        let pv_api: Api<PersistentVolume> = Api::all(self.client.clone());
        for (pv, _) in &volumes.static_bindings {
            let name = pv.metadata.name.as_deref().unwrap_or_default();
            let updated = pv_api
                .replace(name, &PostParams::default(), pv)
                .await
                .map_err(|e| format!("binding volumes: {}", api_message(e)))?;
            self.pvs.assume(name.to_string(), Arc::new(updated));
        }
        for pvc in &volumes.dynamic_provisions {
            let ns = pvc.metadata.namespace.as_deref().unwrap_or_default();
            let name = pvc.metadata.name.as_deref().unwrap_or_default();
            let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
            let updated = api
                .replace(name, &PostParams::default(), pvc)
                .await
                .map_err(|e| format!("binding volumes: {}", api_message(e)))?;
            self.pvcs.assume(claim_key(pvc), Arc::new(updated));
        }
        Ok(())
    }

    /// Whether the PV controller has completed every binding; an error when it never will
    /// (upstream's `checkBindings`).
    fn bindings_done(&self, volumes: &PodVolumes, node_name: &str) -> Result<bool, String> {
        let current_claim = |pvc: &PersistentVolumeClaim| {
            let ns = pvc.metadata.namespace.as_deref().unwrap_or_default();
            let name = pvc.metadata.name.as_deref().unwrap_or_default();
            self.pvcs
                .lister()
                .namespace(ns)
                .get(name)
                .ok_or_else(|| format!("failed to check binding: {}", pvc_not_found(name)))
        };
        for (pv, pvc) in &volumes.static_bindings {
            let pv_name = pv.metadata.name.as_deref().unwrap_or_default();
            // The assume cache holds what PreBind wrote until the informer has caught up, so a
            // lagging informer does not look like a dropped claimRef.
            let Some(cur_pv) = self.pvs.get(pv_name) else {
                return Err(format!(
                    "failed to check binding: {}",
                    helpers::pv_not_found(pv_name)
                ));
            };
            let current = current_claim(pvc)?;
            let claim_ref_set = cur_pv
                .spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .is_some_and(|r| r.uid.as_deref().is_some_and(|u| !u.is_empty()));
            if !claim_ref_set {
                return Err(format!("ClaimRef got reset for pv {pv_name:?}"));
            }
            if !claim_fully_bound(&current) {
                return Ok(false);
            }
        }
        for pvc in &volumes.dynamic_provisions {
            let current = current_claim(pvc)?;
            let name = current.metadata.name.as_deref().unwrap_or_default();
            // The provisioner gives up by removing the annotation: the pod is scheduled again.
            let Some(annotations) = &current.metadata.annotations else {
                return Err(format!("selectedNode annotation reset for PVC {name:?}"));
            };
            if annotations.get(ANN_SELECTED_NODE).map(String::as_str) != Some(node_name) {
                return Err(format!("provisioning failed for PVC {name:?}"));
            }
            if !claim_fully_bound(&current) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn api_message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message,
        e => e.to_string(),
    }
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let pvcs = match self.pod_claims(&pod.pod) {
            Err(e) => return (None, Status::unresolvable(e)),
            Ok(None) => {
                state.write(STATE_KEY, StateData::default());
                return (None, Status::skip());
            }
            Ok(Some(pvcs)) => pvcs,
        };
        let claims = match self.sort_claims(pvcs) {
            Ok(c) => c,
            Err(e) => return (None, Status::error(e)),
        };
        if !claims.unbound_immediate.is_empty() {
            // The PV controller binds these; their update events bring the pod back.
            return (None, Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
        }
        let result = eligible_nodes(&claims).map(|names| PreFilterResult {
            node_names: Some(names),
        });
        state.write(
            STATE_KEY,
            StateData {
                claims: Some(Arc::new(claims)),
                ..Default::default()
            },
        );
        (result, Status::success())
    }
}

impl FilterPlugin for VolumeBinding {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(data) = state.read::<StateData>(STATE_KEY) else {
            return not_found_state();
        };
        let (Some(claims), Some(n)) = (&data.claims, &node.node) else {
            return Status::success();
        };
        let node_name = node.node_name();
        match find_pod_volumes(claims, &self.classes, node_name, node_labels(n)) {
            Err(e) => Status::error(e),
            Ok(f) if !f.reasons.is_empty() => Status::with_reasons(
                crate::framework::Code::UnschedulableAndUnresolvable,
                f.reasons.iter().map(|r| r.to_string()).collect(),
            ),
            Ok(f) => {
                data.by_node
                    .lock()
                    .insert(node_name.to_string(), Arc::new(f.volumes));
                Status::success()
            }
        }
    }
}

impl ReservePlugin for VolumeBinding {
    fn reserve(&self, state: &mut CycleState, _pod: &PodInfo, node_name: &str) -> Status {
        let Some(data) = state.read_mut::<StateData>(STATE_KEY) else {
            return not_found_state();
        };
        let chosen = data.by_node.lock().get(node_name).cloned();
        data.all_bound = match chosen {
            Some(v) if !v.is_empty() => {
                self.assume(&v);
                false
            }
            _ => true,
        };
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &PodInfo, node_name: &str) {
        let Some(data) = state.read::<StateData>(STATE_KEY) else {
            return;
        };
        if let Some(v) = data.by_node.lock().get(node_name) {
            self.revert(v);
        }
    }
}

#[async_trait]
impl PreBindPlugin for VolumeBinding {
    async fn pre_bind(&self, state: &CycleState, _pod: &PodInfo, node_name: &str) -> Status {
        let Some(data) = state.read::<StateData>(STATE_KEY) else {
            return not_found_state();
        };
        if data.all_bound {
            return Status::success();
        }
        let Some(volumes) = data.by_node.lock().get(node_name).cloned() else {
            return Status::error(format!("no pod volumes found for node {node_name:?}"));
        };
        if let Err(e) = self.write_bindings(&volumes).await {
            self.revert(&volumes);
            return Status::error(e);
        }
        // Bounded by bindTimeoutSeconds, and only for pods whose volumes needed binding.
        let deadline = tokio::time::Instant::now() + self.bind_timeout;
        loop {
            match self.bindings_done(&volumes, node_name) {
                Ok(true) => return Status::success(),
                Ok(false) => {}
                Err(e) => return Status::error(format!("binding volumes: {e}")),
            }
            if tokio::time::Instant::now() >= deadline {
                return Status::error("binding volumes: context deadline exceeded");
            }
            tokio::time::sleep(BIND_POLL_INTERVAL).await;
        }
    }
}

fn claim_hint(pod: &Pod, _old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    match event_object::<PersistentVolumeClaim>(new) {
        Some(pvc)
            if pod_uses_claim(
                pod,
                pvc.metadata.namespace.as_deref().unwrap_or_default(),
                pvc.metadata.name.as_deref().unwrap_or_default(),
            ) =>
        {
            QueueingHint::Queue
        }
        _ => QueueingHint::Skip,
    }
}

fn storage_class_hint(_pod: &Pod, old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    let old = event_object::<StorageClass>(old);
    let new = event_object::<StorageClass>(new);
    match (old, new) {
        // Only a change of allowedTopologies can change this plugin's answer.
        (Some(o), Some(n)) if o.allowed_topologies == n.allowed_topologies => QueueingHint::Skip,
        _ => QueueingHint::Queue,
    }
}

fn csi_node_hint(_pod: &Pod, old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    const MIGRATED: &str = "storage.alpha.kubernetes.io/migrated-plugins";
    let ann = |n: &CSINode| {
        n.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(MIGRATED).cloned())
    };
    match (event_object::<CSINode>(old), event_object::<CSINode>(new)) {
        (Some(o), Some(n)) if ann(o) == ann(n) => QueueingHint::Skip,
        _ => QueueingHint::Queue,
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(EventResource::StorageClass, action::ADD | action::UPDATE)
                .with_hint(storage_class_hint),
            ClusterEventWithHint::new(
                EventResource::PersistentVolumeClaim,
                action::ADD | action::UPDATE,
            )
            .with_hint(claim_hint),
            ClusterEventWithHint::new(
                EventResource::PersistentVolume,
                action::ADD | action::UPDATE,
            ),
            ClusterEventWithHint::new(EventResource::Node, action::ADD | action::UPDATE_NODE_LABEL),
            ClusterEventWithHint::new(EventResource::CsiNode, action::ADD | action::UPDATE)
                .with_hint(csi_node_hint),
            ClusterEventWithHint::new(EventResource::CsiDriver, action::UPDATE),
            ClusterEventWithHint::new(
                EventResource::CsiStorageCapacity,
                action::ADD | action::UPDATE,
            ),
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        Some(self)
    }
}

/// `volume.kubernetes.io/selected-node`, for other plugins and tests.
pub const SELECTED_NODE_ANNOTATION: &str = ANN_SELECTED_NODE;

#[cfg(test)]
mod tests;
