//! The volume binder: which volumes a pod's claims would use on a node (matching available
//! PVs, or dynamic provisioning), and binding them through the API in PreBind.

use super::helpers::{
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER,
    claim_class, claim_volume_name, has_annotation, match_topology_selector_terms, selected_node,
    volume_class,
};
use crate::plugins::helper::node_affinity::NodeSelector;
use api_types::labels::Selector;
use api_types::resource::Quantity;
use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSIStorageCapacity, StorageClass};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

pub const ERR_REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
pub const ERR_REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// A volume with what Filter checks on every node parsed once per cycle.
#[derive(Debug, Clone)]
pub struct VolumeFacts {
    pub pv: Arc<PersistentVolume>,
    pub capacity: Quantity,
    /// The required node affinity; `None`: every node.
    pub affinity: Option<NodeSelector>,
}

impl VolumeFacts {
    pub fn new(pv: Arc<PersistentVolume>) -> Self {
        let affinity = pv
            .spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
            .map(NodeSelector::parse);
        Self {
            capacity: capacity(&pv),
            affinity,
            pv,
        }
    }

    /// Upstream's `CheckNodeAffinity` builds a node from the labels alone: `matchFields`
    /// never match.
    pub fn fits(&self, labels: &BTreeMap<String, String>) -> bool {
        self.affinity
            .as_ref()
            .is_none_or(|s| s.matches_parts(labels, ""))
    }
}

/// An unbound claim with its request and selector parsed once per cycle.
#[derive(Debug, Clone)]
pub struct ClaimFacts {
    pub pvc: Arc<PersistentVolumeClaim>,
    pub requested: Quantity,
    /// An unparsable selector is an error on every node, as upstream's.
    pub selector: Result<Option<Selector>, String>,
}

impl ClaimFacts {
    pub fn new(pvc: Arc<PersistentVolumeClaim>) -> Self {
        let selector = match pvc.spec.as_ref().and_then(|s| s.selector.as_ref()) {
            None => Ok(None),
            Some(ls) => Selector::from_label_selector(Some(ls))
                .map(Some)
                .map_err(|e| {
                    format!(
                        "error creating internal label selector for claim: {}/{}: {e}",
                        pvc.metadata.namespace.as_deref().unwrap_or_default(),
                        pvc.metadata.name.as_deref().unwrap_or_default()
                    )
                }),
        };
        Self {
            requested: requested_storage(&pvc),
            selector,
            pvc,
        }
    }
}

/// The pod's claims, sorted out once in PreFilter.
#[derive(Debug, Clone, Default)]
pub struct PodVolumeClaims {
    /// Bound claims with their volumes (`None`: the volume does not exist).
    pub bound: Vec<(Arc<PersistentVolumeClaim>, Option<VolumeFacts>)>,
    /// WaitForFirstConsumer claims without a volume, smallest request first (so the smallest
    /// claims get the smallest fitting volumes).
    pub unbound_delay_binding: Vec<ClaimFacts>,
    /// Claims that should have been bound already (Immediate, or pre-bound to a volume).
    pub unbound_immediate: Vec<Arc<PersistentVolumeClaim>>,
    /// The candidate volumes of each class the delayed claims ask for.
    pub unbound_volumes: HashMap<String, Vec<VolumeFacts>>,
    /// Per class of the delayed claims, the storage pools its provisioner reports when that
    /// CSI driver opted into capacity tracking (`None`: no capacity check).
    pub capacities: HashMap<String, Option<Vec<CapacityFacts>>>,
}

/// One CSIStorageCapacity: how big a volume it can still provision, and for which nodes.
#[derive(Debug, Clone)]
pub struct CapacityFacts {
    /// `maximumVolumeSize` if given (more precise), else `capacity`.
    pub limit: Option<Quantity>,
    /// `nodeTopology`; `None` (or unparsable): no node has access.
    pub nodes: Option<Selector>,
}

impl CapacityFacts {
    pub fn new(c: &CSIStorageCapacity) -> Self {
        let limit = c
            .maximum_volume_size
            .as_ref()
            .or(c.capacity.as_ref())
            .and_then(|q| Quantity::parse(&q.0));
        let nodes = c
            .node_topology
            .as_ref()
            .and_then(|t| Selector::from_label_selector(Some(t)).ok());
        Self { limit, nodes }
    }

    fn fits(&self, size: &Quantity, labels: &BTreeMap<String, String>) -> bool {
        self.limit.as_ref().is_some_and(|l| l >= size)
            && self.nodes.as_ref().is_some_and(|s| s.matches(labels))
    }
}

/// What binding the pod's volumes on one node takes.
#[derive(Debug, Clone, Default)]
pub struct PodVolumes {
    /// Existing volumes to bind, each with its claim; the volume already has the claimRef set.
    pub static_bindings: Vec<(Arc<PersistentVolume>, Arc<PersistentVolumeClaim>)>,
    /// Claims to provision on this node; each already carries the selected-node annotation.
    pub dynamic_provisions: Vec<Arc<PersistentVolumeClaim>>,
}

impl PodVolumes {
    pub fn is_empty(&self) -> bool {
        self.static_bindings.is_empty() && self.dynamic_provisions.is_empty()
    }
}

pub fn requested_storage(pvc: &PersistentVolumeClaim) -> Quantity {
    requested_storage_opt(pvc).unwrap_or_else(|| Quantity::from_int(0))
}

/// The storage a claim requests; `None` when it names none (nothing to check capacity for).
fn requested_storage_opt(pvc: &PersistentVolumeClaim) -> Option<Quantity> {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| Quantity::parse(&q.0))
}

fn capacity(pv: &PersistentVolume) -> Quantity {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| Quantity::parse(&q.0))
        .unwrap_or_else(|| Quantity::from_int(0))
}

/// A claim is fully bound once the PV controller has finished with it.
pub fn claim_fully_bound(pvc: &PersistentVolumeClaim) -> bool {
    !claim_volume_name(pvc).is_empty()
        && has_annotation(&pvc.metadata.annotations, ANN_BIND_COMPLETED)
}

fn volume_bound_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    r.name == pvc.metadata.name
        && r.namespace == pvc.metadata.namespace
        && r.uid
            .as_deref()
            .is_none_or(|u| u.is_empty() || Some(u) == pvc.metadata.uid.as_deref())
}

fn volume_mode_mismatch(pvc: &PersistentVolumeClaim, pv: &PersistentVolume) -> bool {
    let want = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let have = pv
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    want != have
}

fn access_modes_fit(pvc: &PersistentVolumeClaim, pv: &PersistentVolume) -> bool {
    let have = pv
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default();
    pvc.spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
        .iter()
        .all(|m| have.contains(m))
}

/// The volume for a claim on a node with `labels`: the one pre-bound to it if that fits the
/// node, else the smallest available one that satisfies it (upstream's `FindMatchingVolume`).
pub fn find_matching_volume(
    claim: &ClaimFacts,
    volumes: &[VolumeFacts],
    labels: &BTreeMap<String, String>,
    excluded: &HashSet<String>,
) -> Result<Option<Arc<PersistentVolume>>, String> {
    let pvc = &*claim.pvc;
    let class = claim_class(pvc);
    let selector = claim.selector.as_ref().map_err(Clone::clone)?;
    let mut smallest: Option<&VolumeFacts> = None;
    for v in volumes {
        let pv = &*v.pv;
        let name = pv.metadata.name.as_deref().unwrap_or_default();
        if !excluded.is_empty() && excluded.contains(name) {
            continue;
        }
        let bound_here = volume_bound_to_claim(pv, pvc);
        if pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_some()) && !bound_here {
            continue;
        }
        if v.capacity < claim.requested
            || volume_mode_mismatch(pvc, pv)
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if bound_here {
            // A volume pre-bound to the claim is the only candidate.
            return Ok(v.fits(labels).then(|| v.pv.clone()));
        }
        if pv.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Available") {
            continue;
        }
        if let Some(sel) = selector
            && !sel.matches(&pv.metadata.labels.as_ref())
        {
            continue;
        }
        // Node affinity is the dearest check: last.
        if volume_class(pv) != class || !access_modes_fit(pvc, pv) || !v.fits(labels) {
            continue;
        }
        if smallest.is_none_or(|s| s.capacity > v.capacity) {
            smallest = Some(v);
        }
    }
    Ok(smallest.map(|v| v.pv.clone()))
}

/// The failure reasons of one node, in upstream's order.
#[derive(Debug, Default)]
pub struct Findings {
    pub volumes: PodVolumes,
    pub reasons: Vec<&'static str>,
}

/// What binding the pod's claims on `node_name` would take, or why it cannot.
pub fn find_pod_volumes(
    claims: &PodVolumeClaims,
    classes: &Lister<StorageClass>,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<Findings, String> {
    let mut bound_ok = true;
    let mut pvs_found = true;
    let mut unbound_ok = true;
    let mut enough_space = true;
    let mut out = Findings::default();

    for (_, volume) in &claims.bound {
        match volume {
            None => {
                pvs_found = false;
                break;
            }
            Some(v) if !v.fits(labels) => {
                bound_ok = false;
                break;
            }
            Some(_) => {}
        }
    }

    if !claims.unbound_delay_binding.is_empty() {
        let mut to_provision = Vec::new();
        let mut to_match = Vec::new();
        let mut node_mismatch = false;
        for claim in &claims.unbound_delay_binding {
            match selected_node(&claim.pvc) {
                // Provisioning for another node is under way: only that node can do.
                Some(n) if n != node_name => {
                    node_mismatch = true;
                    break;
                }
                Some(_) => to_provision.push(claim.pvc.clone()),
                None => to_match.push(claim),
            }
        }
        if node_mismatch {
            unbound_ok = false;
        } else {
            let mut chosen = HashSet::new();
            for claim in to_match {
                let candidates = claims
                    .unbound_volumes
                    .get(claim_class(&claim.pvc))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                match find_matching_volume(claim, candidates, labels, &chosen)? {
                    Some(pv) => {
                        chosen.insert(pv.metadata.name.clone().unwrap_or_default());
                        out.volumes
                            .static_bindings
                            .push((bind_volume_to_claim(&pv, &claim.pvc), claim.pvc.clone()));
                    }
                    None => {
                        unbound_ok = false;
                        to_provision.push(claim.pvc.clone());
                    }
                }
            }
            if !to_provision.is_empty() {
                (unbound_ok, enough_space) = (true, true);
                for pvc in to_provision {
                    let class_name = claim_class(&pvc);
                    if class_name.is_empty() {
                        return Err(format!(
                            "no class for claim \"{}/{}\"",
                            pvc.metadata.namespace.as_deref().unwrap_or_default(),
                            pvc.metadata.name.as_deref().unwrap_or_default()
                        ));
                    }
                    let Some(class) = classes.get(class_name) else {
                        return Err(format!("failed to find storage class {class_name:?}"));
                    };
                    if class.provisioner.is_empty()
                        || class.provisioner == NOT_SUPPORTED_PROVISIONER
                        || !match_topology_selector_terms(
                            class.allowed_topologies.as_deref().unwrap_or_default(),
                            labels,
                        )
                    {
                        unbound_ok = false;
                        out.volumes.dynamic_provisions.clear();
                        break;
                    }
                    if let Some(Some(pools)) = claims.capacities.get(class_name)
                        && let Some(size) = requested_storage_opt(&pvc)
                        && !pools.iter().any(|p| p.fits(&size, labels))
                    {
                        enough_space = false;
                        out.volumes.dynamic_provisions.clear();
                        break;
                    }
                    out.volumes
                        .dynamic_provisions
                        .push(select_node_for_claim(&pvc, node_name));
                }
            }
        }
    }

    if !bound_ok {
        out.reasons.push(ERR_REASON_NODE_CONFLICT);
    }
    if !unbound_ok {
        out.reasons.push(ERR_REASON_BIND_CONFLICT);
    }
    if !pvs_found {
        out.reasons.push(ERR_REASON_PV_NOT_EXIST);
    }
    if !enough_space {
        out.reasons.push(ERR_REASON_NOT_ENOUGH_SPACE);
    }
    Ok(out)
}

/// The volume with its claimRef pointing at `pvc` (upstream's `GetBindVolumeToClaim`).
pub fn bind_volume_to_claim(
    pv: &Arc<PersistentVolume>,
    pvc: &PersistentVolumeClaim,
) -> Arc<PersistentVolume> {
    let by_user = volume_bound_to_claim(pv, pvc);
    let claim_ref_matches = pv
        .spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .is_some_and(|r| {
            r.name == pvc.metadata.name
                && r.namespace == pvc.metadata.namespace
                && r.uid == pvc.metadata.uid
        });
    let needs_annotation =
        !by_user && !has_annotation(&pv.metadata.annotations, ANN_BOUND_BY_CONTROLLER);
    if claim_ref_matches && !needs_annotation {
        return pv.clone();
    }
    let mut clone = (**pv).clone();
    if !claim_ref_matches && let Some(spec) = clone.spec.as_mut() {
        spec.claim_ref = Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            name: pvc.metadata.name.clone(),
            namespace: pvc.metadata.namespace.clone(),
            uid: pvc.metadata.uid.clone(),
            resource_version: pvc.metadata.resource_version.clone(),
            ..Default::default()
        });
    }
    if needs_annotation {
        clone
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
    }
    Arc::new(clone)
}

fn select_node_for_claim(
    pvc: &Arc<PersistentVolumeClaim>,
    node_name: &str,
) -> Arc<PersistentVolumeClaim> {
    if selected_node(pvc) == Some(node_name) {
        return pvc.clone();
    }
    let mut clone = (**pvc).clone();
    clone
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(ANN_SELECTED_NODE.into(), node_name.to_string());
    Arc::new(clone)
}
