//! The NodeVolumeLimits plugin (upstream's CSILimits): the unique CSI volumes a node would
//! have attached, per driver, must stay within its CSINode's `allocatable.count`.
//!
//! Counted: claims bound to CSI volumes, unbound claims of a class with a provisioner, and the
//! node's VolumeAttachments. In-tree volumes migrated to CSI are not translated (left out).

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};
use crate::plugins::volume_binding::helpers::{
    claim_class, claim_volume_name, event_object, pod_uses_claim, pod_volumes, pvc_not_found,
    volume_claim_name, volume_is_for_pod,
};
use client_go_rs::listers::{Indexer, Lister};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass, VolumeAttachment};
use serde_json::Value;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

pub const NAME: &str = "NodeVolumeLimits";
const STATE_KEY: &str = "PreFilterNodeVolumeLimits";
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";
const VA_NODE_INDEX: &str = "scheduler.nodevolumelimits/spec.nodeName";

/// The pod's volumes that count: unique name (`driver/handle`) to driver.
#[derive(Debug, Clone)]
struct PreFilterState {
    /// An error Filter reports on every node (as upstream does from Filter).
    error: Option<Status>,
    new_volumes: HashMap<String, String>,
}

pub struct CsiLimits {
    pvcs: Lister<PersistentVolumeClaim>,
    pvs: Lister<PersistentVolume>,
    classes: Lister<StorageClass>,
    csi_nodes: Lister<CSINode>,
    attachments: Arc<Indexer<VolumeAttachment>>,
    /// Unbound claims of a provisioner class get a handle nobody else can have.
    random_prefix: String,
}

pub fn new(_args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let va = ctx.informers.informer::<VolumeAttachment>();
    // Another profile's instance may have added the same index already.
    let _ = va.add_indexer(VA_NODE_INDEX, |va: &VolumeAttachment| {
        vec![va.spec.node_name.clone()]
    });
    Ok(Arc::new(CsiLimits {
        pvcs: ctx.informers.informer::<PersistentVolumeClaim>().lister(),
        pvs: ctx.informers.informer::<PersistentVolume>().lister(),
        classes: ctx.informers.informer::<StorageClass>().lister(),
        csi_nodes: ctx.informers.informer::<CSINode>().lister(),
        attachments: va.indexer().clone(),
        random_prefix: format!("{:016x}", rand::random::<u64>()),
    }))
}

fn unique_name(driver: &str, handle: &str) -> String {
    format!("{driver}/{handle}")
}

impl CsiLimits {
    fn driver_from_class(&self, pvc: &PersistentVolumeClaim) -> Option<(String, String)> {
        // Without a class the claim must be Immediate, hence bound before it gets here.
        let class = self.classes.get(claim_class(pvc))?;
        let handle = format!(
            "{}-{}/{}",
            self.random_prefix,
            pvc.metadata.namespace.as_deref().unwrap_or_default(),
            pvc.metadata.name.as_deref().unwrap_or_default()
        );
        Some((class.provisioner.clone(), handle))
    }

    fn driver_info(&self, pvc: &PersistentVolumeClaim) -> Option<(String, String)> {
        let pv_name = claim_volume_name(pvc);
        if pv_name.is_empty() {
            return self.driver_from_class(pvc);
        }
        match self.pvs.get(pv_name) {
            // Deleted, or pre-bound to a volume not created yet: count it by its class.
            None => self.driver_from_class(pvc),
            Some(pv) => {
                let csi = pv.spec.as_ref()?.csi.as_ref()?;
                Some((csi.driver.clone(), csi.volume_handle.clone()))
            }
        }
    }

    /// Adds the pod's countable volumes to `out`. For the pod being scheduled a missing claim
    /// is an error; for pods already on the node it is not counted.
    fn attachable_volumes(
        &self,
        pod: &Pod,
        new_pod: bool,
        out: &mut HashMap<String, String>,
    ) -> Result<(), Status> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        for vol in pod_volumes(pod) {
            let Some((name, ephemeral)) = volume_claim_name(pod, vol) else {
                continue;
            };
            if name.is_empty() {
                return Err(Status::error("PersistentVolumeClaim had no name"));
            }
            let Some(pvc) = self.pvcs.indexer().get(ns, &name) else {
                if new_pod {
                    // The pod cannot run without it: no node will do until it exists.
                    return Err(Status::unresolvable(format!(
                        "looking up PVC {ns}/{name}: {}",
                        pvc_not_found(&name)
                    )));
                }
                continue;
            };
            if ephemeral {
                volume_is_for_pod(pod, &pvc).map_err(Status::error)?;
            }
            let Some((driver, handle)) = self.driver_info(&pvc) else {
                continue;
            };
            if driver.is_empty() || handle.is_empty() {
                continue;
            }
            out.insert(unique_name(&driver, &handle), driver);
        }
        Ok(())
    }

    /// The volumes the node's VolumeAttachments hold, unique name to driver.
    fn attached_by_attachments(&self, node_name: &str) -> HashMap<String, String> {
        let mut out = HashMap::new();
        let Ok(vas) = self.attachments.by_index(VA_NODE_INDEX, node_name) else {
            return out;
        };
        for va in vas {
            let Some(pv_name) = va.spec.source.persistent_volume_name.as_deref() else {
                continue;
            };
            if va.spec.attacher.is_empty() {
                continue;
            }
            let Some(pv) = self.pvs.get(pv_name) else {
                continue;
            };
            let Some(csi) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) else {
                continue;
            };
            if csi.driver.is_empty() || csi.volume_handle.is_empty() {
                continue;
            }
            out.insert(
                unique_name(&csi.driver, &csi.volume_handle),
                va.spec.attacher.clone(),
            );
        }
        out
    }
}

/// Driver name to `allocatable.count`, for the drivers that have one.
fn volume_limits(csi_node: &CSINode) -> impl Iterator<Item = (&str, i32)> {
    csi_node
        .spec
        .drivers
        .iter()
        .filter_map(|d| Some((d.name.as_str(), d.allocatable.as_ref()?.count?)))
}

impl PreFilterPlugin for CsiLimits {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let has_claims = pod_volumes(&pod.pod)
            .iter()
            .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some());
        if !has_claims {
            return (None, Status::skip());
        }
        let mut new_volumes = HashMap::new();
        let error = self
            .attachable_volumes(&pod.pod, true, &mut new_volumes)
            .err();
        if error.is_none() && new_volumes.is_empty() {
            // Nothing to count: Filter would pass on every node.
            return (None, Status::skip());
        }
        state.write(STATE_KEY, PreFilterState { error, new_volumes });
        (None, Status::success())
    }
}

impl FilterPlugin for CsiLimits {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(STATE_KEY) else {
            return Status::state_not_found(STATE_KEY);
        };
        if let Some(e) = &s.error {
            return e.clone();
        }
        // No CSINode (yet) means no limits are known.
        let Some(csi_node) = self.csi_nodes.get(node.node_name()) else {
            return Status::success();
        };
        let limits: HashMap<&str, i32> = volume_limits(&csi_node).collect();
        if !s
            .new_volumes
            .values()
            .any(|d| limits.contains_key(d.as_str()))
        {
            return Status::success();
        }

        let mut attached: HashMap<String, String> = HashMap::new();
        if !node.pvc_ref_counts.is_empty() {
            for p in &node.pods {
                if let Err(e) = self.attachable_volumes(&p.pod, false, &mut attached) {
                    return e;
                }
            }
        }
        let mut attached_count: HashMap<&str, i32> = HashMap::new();
        for driver in attached.values() {
            *attached_count.entry(driver.as_str()).or_default() += 1;
        }
        let by_attachments = self.attached_by_attachments(node.node_name());
        for (name, driver) in &by_attachments {
            if !attached.contains_key(name) {
                *attached_count.entry(driver.as_str()).or_default() += 1;
            }
        }

        let mut new_count: HashMap<&str, i32> = HashMap::new();
        for (name, driver) in &s.new_volumes {
            // A volume already on the node is not attached twice.
            if !attached.contains_key(name) && !by_attachments.contains_key(name) {
                *new_count.entry(driver.as_str()).or_default() += 1;
            }
        }
        for (driver, count) in new_count {
            if let Some(max) = limits.get(driver)
                && attached_count.get(driver).copied().unwrap_or(0) + count > *max
            {
                return Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
            }
        }
        Status::success()
    }
}

fn csi_node_updated_hint(_pod: &Pod, old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    let (Some(old), Some(new)) = (event_object::<CSINode>(old), event_object::<CSINode>(new))
    else {
        return QueueingHint::Queue;
    };
    let before: HashMap<&str, i32> = volume_limits(old).collect();
    let raised = new.spec.drivers.iter().any(|d| {
        match (
            before.get(d.name.as_str()),
            d.allocatable.as_ref().and_then(|a| a.count),
        ) {
            (Some(b), Some(n)) => n > *b,
            // A limit removed is a limit raised to infinity.
            (Some(_), None) => true,
            _ => false,
        }
    });
    if raised {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

fn pod_deleted_hint(_pod: &Pod, old: Option<&dyn Any>, _new: Option<&dyn Any>) -> QueueingHint {
    let Some(deleted) = event_object::<Pod>(old) else {
        return QueueingHint::Queue;
    };
    let bound = deleted
        .spec
        .as_ref()
        .is_some_and(|s| s.node_name.as_deref().is_some_and(|n| !n.is_empty()));
    let has_claims = pod_volumes(deleted)
        .iter()
        .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some());
    if bound && has_claims {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

/// Only the creation of a claim the pod uses (a missing claim fails the pod) matters.
fn claim_added_hint(pod: &Pod, _old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    let Some(pvc) = event_object::<PersistentVolumeClaim>(new) else {
        return QueueingHint::Queue;
    };
    let uses = pod_uses_claim(
        pod,
        pvc.metadata.namespace.as_deref().unwrap_or_default(),
        pvc.metadata.name.as_deref().unwrap_or_default(),
    );
    if uses {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

impl Plugin for CsiLimits {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            // Any new CSINode may carry room for the pod's volumes.
            ClusterEventWithHint::new(EventResource::CsiNode, action::ADD),
            ClusterEventWithHint::new(EventResource::CsiNode, action::UPDATE)
                .with_hint(csi_node_updated_hint),
            ClusterEventWithHint::new(EventResource::Pod, action::DELETE)
                .with_hint(pod_deleted_hint),
            ClusterEventWithHint::new(EventResource::PersistentVolumeClaim, action::ADD)
                .with_hint(claim_added_hint),
            ClusterEventWithHint::new(EventResource::VolumeAttachment, action::DELETE),
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing::{
        node, node_info, pod, pod_info, pod_with_claims, test_context,
    };
    use k8s_openapi::api::core::v1::{
        CSIPersistentVolumeSource, PersistentVolumeClaimSpec, PersistentVolumeSpec,
    };
    use k8s_openapi::api::storage::v1::{
        CSINodeDriver, CSINodeSpec, VolumeAttachmentSource, VolumeAttachmentSpec,
        VolumeNodeResources,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn meta(name: &str, ns: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: ns.map(str::to_string),
            ..Default::default()
        }
    }

    fn pvc(name: &str, volume: &str, class: &str) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: meta(name, Some("default")),
            spec: Some(PersistentVolumeClaimSpec {
                volume_name: (!volume.is_empty()).then(|| volume.to_string()),
                storage_class_name: (!class.is_empty()).then(|| class.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn csi_pv(name: &str, driver: &str) -> PersistentVolume {
        PersistentVolume {
            metadata: meta(name, None),
            spec: Some(PersistentVolumeSpec {
                csi: Some(CSIPersistentVolumeSource {
                    driver: driver.into(),
                    volume_handle: format!("handle-{name}"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn csi_node(name: &str, limits: &[(&str, Option<i32>)]) -> CSINode {
        CSINode {
            metadata: meta(name, None),
            spec: CSINodeSpec {
                drivers: limits
                    .iter()
                    .map(|(d, c)| CSINodeDriver {
                        name: d.to_string(),
                        node_id: name.into(),
                        allocatable: c.map(|c| VolumeNodeResources { count: Some(c) }),
                        topology_keys: None,
                    })
                    .collect(),
            },
        }
    }

    fn setup(ctx: &PluginContext) {
        let pvs = ctx.informers.informer::<PersistentVolume>();
        for (n, d) in [
            ("pv-a1", "ebs"),
            ("pv-a2", "ebs"),
            ("pv-a3", "ebs"),
            ("pv-b1", "gce"),
        ] {
            pvs.indexer().insert(Arc::new(csi_pv(n, d)));
        }
        pvs.indexer().insert(Arc::new(PersistentVolume {
            metadata: meta("pv-hostpath", None),
            spec: Some(PersistentVolumeSpec::default()),
            ..Default::default()
        }));
        let pvcs = ctx.informers.informer::<PersistentVolumeClaim>();
        for c in [
            pvc("a1", "pv-a1", ""),
            pvc("a2", "pv-a2", ""),
            pvc("a3", "pv-a3", ""),
            pvc("b1", "pv-b1", ""),
            pvc("hostpath", "pv-hostpath", ""),
            pvc("unbound-ebs", "", "ebs-class"),
            pvc("unbound-noclass", "", ""),
        ] {
            pvcs.indexer().insert(Arc::new(c));
        }
        ctx.informers
            .informer::<StorageClass>()
            .indexer()
            .insert(Arc::new(StorageClass {
                metadata: meta("ebs-class", None),
                provisioner: "ebs".into(),
                ..Default::default()
            }));
        let nodes = ctx.informers.informer::<CSINode>();
        nodes.indexer().insert(Arc::new(csi_node(
            "limit-2",
            &[("ebs", Some(2)), ("gce", Some(1))],
        )));
        nodes
            .indexer()
            .insert(Arc::new(csi_node("no-count", &[("ebs", None)])));
        let va = VolumeAttachment {
            metadata: meta("va-1", None),
            spec: VolumeAttachmentSpec {
                attacher: "ebs".into(),
                node_name: "limit-2-va".into(),
                source: VolumeAttachmentSource {
                    persistent_volume_name: Some("pv-a3".into()),
                    ..Default::default()
                },
            },
            status: None,
        };
        ctx.informers
            .informer::<VolumeAttachment>()
            .indexer()
            .insert(Arc::new(va));
        nodes
            .indexer()
            .insert(Arc::new(csi_node("limit-2-va", &[("ebs", Some(2))])));
    }

    #[tokio::test]
    async fn filter_table() {
        let ctx = test_context();
        setup(&ctx);
        let plugin = new(None, &ctx).expect("plugin");
        let pf = plugin.as_pre_filter().expect("prefilter");
        let f = plugin.as_filter().expect("filter");
        // (name, new pod's claims, node, existing pods' claims, prefilter code, filter code)
        type Case<'a> = (
            &'a str,
            Vec<&'a str>,
            &'a str,
            Vec<Vec<&'a str>>,
            Code,
            Code,
        );
        let cases: Vec<Case> = vec![
            (
                "no claims",
                vec![],
                "limit-2",
                vec![],
                Code::Skip,
                Code::Success,
            ),
            (
                "non-CSI volume",
                vec!["hostpath"],
                "limit-2",
                vec![],
                Code::Skip,
                Code::Success,
            ),
            (
                "unbound claim without class",
                vec!["unbound-noclass"],
                "limit-2",
                vec![],
                Code::Skip,
                Code::Success,
            ),
            (
                "within limit",
                vec!["a1", "a2"],
                "limit-2",
                vec![],
                Code::Success,
                Code::Success,
            ),
            (
                "over limit with one attached",
                vec!["a1", "a2"],
                "limit-2",
                vec![vec!["a3"]],
                Code::Success,
                Code::Unschedulable,
            ),
            (
                "shared volume counted once",
                vec!["a1", "a2"],
                "limit-2",
                vec![vec!["a1"]],
                Code::Success,
                Code::Success,
            ),
            (
                "other driver's limit",
                vec!["b1"],
                "limit-2",
                vec![vec!["a1", "a2"]],
                Code::Success,
                Code::Success,
            ),
            (
                "unbound claim counted by its class",
                vec!["a1", "unbound-ebs"],
                "limit-2",
                vec![vec!["a3"]],
                Code::Success,
                Code::Unschedulable,
            ),
            (
                "no count for driver",
                vec!["a1", "a2", "a3"],
                "no-count",
                vec![],
                Code::Success,
                Code::Success,
            ),
            (
                "no CSINode",
                vec!["a1", "a2", "a3"],
                "unknown",
                vec![],
                Code::Success,
                Code::Success,
            ),
            (
                "volume attachment counts",
                vec!["a1", "a2"],
                "limit-2-va",
                vec![],
                Code::Success,
                Code::Unschedulable,
            ),
            (
                "volume attachment of the pod's own volume",
                vec!["a1", "a3"],
                "limit-2-va",
                vec![],
                Code::Success,
                Code::Success,
            ),
        ];
        for (name, claims, node_name, existing, pf_code, f_code) in cases {
            let info = pod_info(pod_with_claims("new", &claims));
            let pods = existing
                .iter()
                .enumerate()
                .map(|(i, c)| pod_with_claims(&format!("old{i}"), c))
                .collect();
            let ni = node_info(node(node_name, &[], &[]), pods);
            let mut state = CycleState::new();
            let (_, s) = pf.pre_filter(&mut state, &info, &Snapshot::default());
            assert_eq!(s.code, pf_code, "{name}: {s:?}");
            if s.is_skip() {
                continue;
            }
            let s = f.filter(&state, &info, &ni);
            assert_eq!(s.code, f_code, "{name}: {s:?}");
            if f_code == Code::Unschedulable {
                assert_eq!(s.message(), ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, "{name}");
            }
        }
    }

    #[tokio::test]
    async fn missing_claim_is_unresolvable_in_filter() {
        let ctx = test_context();
        setup(&ctx);
        let plugin = new(None, &ctx).expect("plugin");
        let info = pod_info(pod_with_claims("new", &["nope"]));
        let mut state = CycleState::new();
        let (_, s) = plugin.as_pre_filter().expect("prefilter").pre_filter(
            &mut state,
            &info,
            &Snapshot::default(),
        );
        assert!(s.is_success());
        let ni = node_info(node("limit-2", &[], &[]), vec![]);
        let s = plugin
            .as_filter()
            .expect("filter")
            .filter(&state, &info, &ni);
        assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
        assert_eq!(
            s.message(),
            "looking up PVC default/nope: persistentvolumeclaim \"nope\" not found"
        );
    }

    #[test]
    fn claim_and_pod_hints() {
        let p = pod_with_claims("p", &["a1"]);
        assert_eq!(
            claim_added_hint(&p, None, Some(&pvc("a1", "", ""))),
            QueueingHint::Queue
        );
        assert_eq!(
            claim_added_hint(&p, None, Some(&pvc("b1", "", ""))),
            QueueingHint::Skip
        );
        let mut bound = pod_with_claims("old", &["x"]);
        assert_eq!(pod_deleted_hint(&p, Some(&bound), None), QueueingHint::Skip);
        if let Some(s) = bound.spec.as_mut() {
            s.node_name = Some("n".into());
        }
        assert_eq!(
            pod_deleted_hint(&p, Some(&bound), None),
            QueueingHint::Queue
        );
        let mut no_claims = pod("old2", &[]);
        if let Some(s) = no_claims.spec.as_mut() {
            s.node_name = Some("n".into());
        }
        assert_eq!(
            pod_deleted_hint(&p, Some(&no_claims), None),
            QueueingHint::Skip
        );
    }

    #[test]
    fn csi_node_hint_table() {
        let p = pod("p", &[]);
        let cases = vec![
            ("raised", Some(1), Some(2), QueueingHint::Queue),
            ("lowered", Some(2), Some(1), QueueingHint::Skip),
            ("same", Some(2), Some(2), QueueingHint::Skip),
            ("removed", Some(2), None, QueueingHint::Queue),
        ];
        for (name, before, after, want) in cases {
            let old = csi_node("n", &[("ebs", before)]);
            let new = csi_node("n", &[("ebs", after)]);
            assert_eq!(
                csi_node_updated_hint(&p, Some(&old), Some(&new)),
                want,
                "{name}"
            );
        }
    }
}
