//! The VolumeZone plugin: a pod's bound volumes labelled with a zone or region can only be
//! used from nodes in that zone or region.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};
use crate::plugins::volume_binding::helpers::{
    claim_class, claim_volume_name, event_object, pod_uses_claim, pod_volumes, pv_not_found,
    pvc_not_found, storage_class_not_found,
};
use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::Value;
use std::any::Any;
use std::sync::Arc;

pub const NAME: &str = "VolumeZone";
const STATE_KEY: &str = "PreFilterVolumeZone";
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const GA_ZONE: &str = "topology.kubernetes.io/zone";
const GA_REGION: &str = "topology.kubernetes.io/region";
const TOPOLOGY_LABELS: [&str; 4] = [BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION];

/// One topology constraint of one volume: the label key and the values it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PvTopology {
    key: &'static str,
    /// The GA key a beta key also matches on nodes that only carry GA labels.
    ga_key: &'static str,
    values: Vec<String>,
}

#[derive(Debug, Clone)]
struct PreFilterState {
    topologies: Vec<PvTopology>,
}

pub struct VolumeZone {
    pvcs: Lister<PersistentVolumeClaim>,
    pvs: Lister<PersistentVolume>,
    classes: Lister<StorageClass>,
}

pub fn new(_args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(VolumeZone {
        pvcs: ctx.informers.informer::<PersistentVolumeClaim>().lister(),
        pvs: ctx.informers.informer::<PersistentVolume>().lister(),
        classes: ctx.informers.informer::<StorageClass>().lister(),
    }))
}

fn ga_key(key: &'static str) -> &'static str {
    match key {
        BETA_ZONE => GA_ZONE,
        BETA_REGION => GA_REGION,
        k => k,
    }
}

/// A volume's topology labels; multi-zone values are joined by `__`.
fn pv_topologies(pv: &PersistentVolume) -> impl Iterator<Item = PvTopology> + '_ {
    let labels = pv.metadata.labels.as_ref();
    TOPOLOGY_LABELS.into_iter().filter_map(move |key| {
        let value = labels?.get(key)?;
        Some(PvTopology {
            key,
            ga_key: ga_key(key),
            values: value
                .split("__")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        })
    })
}

impl VolumeZone {
    fn pod_topologies(&self, pod: &Pod) -> Result<Vec<PvTopology>, Status> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        for vol in pod_volumes(pod) {
            let Some(claim) = &vol.persistent_volume_claim else {
                continue;
            };
            let name = claim.claim_name.as_str();
            if name.is_empty() {
                return Err(Status::unresolvable("PersistentVolumeClaim had no name"));
            }
            let Some(pvc) = self.pvcs.namespace(ns).get(name) else {
                return Err(Status::unresolvable(pvc_not_found(name)));
            };
            let pv_name = claim_volume_name(&pvc);
            if pv_name.is_empty() {
                let class_name = claim_class(&pvc);
                if class_name.is_empty() {
                    return Err(Status::unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name",
                    ));
                }
                let Some(class) = self.classes.get(class_name) else {
                    return Err(Status::unresolvable(storage_class_not_found(class_name)));
                };
                match class.volume_binding_mode.as_deref() {
                    None => {
                        return Err(Status::unresolvable(format!(
                            "VolumeBindingMode not set for StorageClass {class_name:?}"
                        )));
                    }
                    // VolumeBinding picks a volume for this node later.
                    Some("WaitForFirstConsumer") => continue,
                    Some(_) => return Err(Status::unresolvable("PersistentVolume had no name")),
                }
            }
            let Some(pv) = self.pvs.get(pv_name) else {
                return Err(Status::unresolvable(pv_not_found(pv_name)));
            };
            out.extend(pv_topologies(&pv));
        }
        Ok(out)
    }
}

fn node_fits(topologies: &[PvTopology], node: &NodeInfo) -> Status {
    let Some(labels) = node.node.as_ref().and_then(|n| n.metadata.labels.as_ref()) else {
        return Status::success();
    };
    // A node without any topology label is not constrained by zones at all.
    if !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k)) {
        return Status::success();
    }
    for t in topologies {
        let v = labels.get(t.key).or_else(|| labels.get(t.ga_key));
        if !v.is_some_and(|v| t.values.iter().any(|x| x == v)) {
            return Status::unresolvable(ERR_REASON_CONFLICT);
        }
    }
    Status::success()
}

impl PreFilterPlugin for VolumeZone {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.pod_topologies(&pod.pod) {
            Err(s) => (None, s),
            Ok(t) if t.is_empty() => (None, Status::skip()),
            Ok(topologies) => {
                state.write(STATE_KEY, PreFilterState { topologies });
                (None, Status::success())
            }
        }
    }
}

impl FilterPlugin for VolumeZone {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod_volumes(&pod.pod).is_empty() {
            return Status::success();
        }
        match state.read::<PreFilterState>(STATE_KEY) {
            Some(s) => node_fits(&s.topologies, node),
            // Upstream recomputes when PreFilter did not run.
            None => match self.pod_topologies(&pod.pod) {
                Ok(t) => node_fits(&t, node),
                Err(s) => s,
            },
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

fn storage_class_hint(_pod: &Pod, _old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    match event_object::<StorageClass>(new) {
        Some(sc) if sc.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer") => {
            QueueingHint::Queue
        }
        _ => QueueingHint::Skip,
    }
}

fn volume_hint(_pod: &Pod, old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    let (Some(old), Some(new)) = (
        event_object::<PersistentVolume>(old),
        event_object::<PersistentVolume>(new),
    ) else {
        return QueueingHint::Queue;
    };
    if pv_topologies(old).eq(pv_topologies(new)) {
        QueueingHint::Skip
    } else {
        QueueingHint::Queue
    }
}

impl Plugin for VolumeZone {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(EventResource::StorageClass, action::ADD)
                .with_hint(storage_class_hint),
            ClusterEventWithHint::new(EventResource::Node, action::ADD | action::UPDATE_NODE_LABEL),
            ClusterEventWithHint::new(
                EventResource::PersistentVolumeClaim,
                action::ADD | action::UPDATE,
            )
            .with_hint(claim_hint),
            ClusterEventWithHint::new(
                EventResource::PersistentVolume,
                action::ADD | action::UPDATE,
            )
            .with_hint(volume_hint),
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
    use crate::framework::testing::{node, node_info, pod_info, pod_with_claims, test_context};
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, PersistentVolumeSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn labels(pairs: &[(&str, &str)]) -> Option<std::collections::BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn pv(name: &str, l: &[(&str, &str)]) -> PersistentVolume {
        PersistentVolume {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: labels(l),
                ..Default::default()
            },
            spec: Some(PersistentVolumeSpec::default()),
            ..Default::default()
        }
    }

    fn pvc(name: &str, volume: &str, class: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                volume_name: (!volume.is_empty()).then(|| volume.to_string()),
                storage_class_name: class.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn class(name: &str, mode: Option<&str>) -> StorageClass {
        StorageClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            provisioner: "p".into(),
            volume_binding_mode: mode.map(str::to_string),
            ..Default::default()
        }
    }

    fn fill(ctx: &PluginContext) {
        let pvs = ctx.informers.informer::<PersistentVolume>();
        for v in [
            pv("vol_1", &[(BETA_ZONE, "us-west1-a")]),
            pv(
                "vol_2",
                &[(BETA_REGION, "us-west1"), (BETA_ZONE, "us-west1-b")],
            ),
            pv("vol_3", &[(BETA_REGION, "us-west1")]),
            pv("vol_multi", &[(GA_ZONE, "us-west1-a__us-west1-b")]),
            pv("vol_ga", &[(GA_ZONE, "us-west1-a")]),
            pv("vol_none", &[]),
        ] {
            pvs.indexer().insert(Arc::new(v));
        }
        let pvcs = ctx.informers.informer::<PersistentVolumeClaim>();
        for c in [
            pvc("pvc_1", "vol_1", None),
            pvc("pvc_2", "vol_2", None),
            pvc("pvc_3", "vol_3", None),
            pvc("pvc_multi", "vol_multi", None),
            pvc("pvc_ga", "vol_ga", None),
            pvc("pvc_none", "vol_none", None),
            pvc("pvc_wffc", "", Some("wffc")),
            pvc("pvc_immediate", "", Some("immediate")),
            pvc("pvc_nomode", "", Some("nomode")),
            pvc("pvc_lost", "missing", None),
        ] {
            pvcs.indexer().insert(Arc::new(c));
        }
        let scs = ctx.informers.informer::<StorageClass>();
        scs.indexer()
            .insert(Arc::new(class("wffc", Some("WaitForFirstConsumer"))));
        scs.indexer()
            .insert(Arc::new(class("immediate", Some("Immediate"))));
        scs.indexer().insert(Arc::new(class("nomode", None)));
    }

    #[tokio::test]
    async fn filter_table() {
        let ctx = test_context();
        fill(&ctx);
        let plugin = new(None, &ctx).expect("plugin");
        let pf = plugin.as_pre_filter().expect("prefilter");
        let f = plugin.as_filter().expect("filter");
        type Case<'a> = (
            &'a str,
            Vec<&'a str>,
            Vec<(&'a str, &'a str)>,
            Code,
            &'a str,
        );
        let cases: Vec<Case> = vec![
            (
                "label zone matches",
                vec!["pvc_1"],
                vec![(BETA_ZONE, "us-west1-a")],
                Code::Success,
                "",
            ),
            (
                "label zone conflicts",
                vec!["pvc_1"],
                vec![(BETA_ZONE, "us-west1-b")],
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_CONFLICT,
            ),
            (
                "node without zone labels",
                vec!["pvc_1"],
                vec![("uselessLabel", "none")],
                Code::Success,
                "",
            ),
            (
                "region and zone match",
                vec!["pvc_2"],
                vec![(BETA_REGION, "us-west1"), (BETA_ZONE, "us-west1-b")],
                Code::Success,
                "",
            ),
            (
                "region conflicts",
                vec!["pvc_3"],
                vec![(BETA_REGION, "us-east1")],
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_CONFLICT,
            ),
            (
                "multi-zone value",
                vec!["pvc_multi"],
                vec![(GA_ZONE, "us-west1-b")],
                Code::Success,
                "",
            ),
            (
                "beta volume label, GA node label",
                vec!["pvc_1"],
                vec![(GA_ZONE, "us-west1-a")],
                Code::Success,
                "",
            ),
            (
                "GA volume label, beta-only node",
                vec!["pvc_ga"],
                vec![(BETA_ZONE, "us-west1-a")],
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_CONFLICT,
            ),
            (
                "two volumes, one conflicts",
                vec!["pvc_1", "pvc_2"],
                vec![(BETA_ZONE, "us-west1-a")],
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_CONFLICT,
            ),
        ];
        for (name, claims, node_labels, code, reason) in cases {
            let info = pod_info(pod_with_claims("p", &claims));
            let mut state = CycleState::new();
            let (_, s) = pf.pre_filter(&mut state, &info, &Snapshot::default());
            assert!(s.is_success(), "{name}: prefilter {s:?}");
            let ni = node_info(node("n", &[], &node_labels), vec![]);
            let s = f.filter(&state, &info, &ni);
            assert_eq!(s.code, code, "{name}");
            assert_eq!(s.message(), reason, "{name}");
        }
    }

    #[tokio::test]
    async fn pre_filter_table() {
        let ctx = test_context();
        fill(&ctx);
        let plugin = new(None, &ctx).expect("plugin");
        let pf = plugin.as_pre_filter().expect("prefilter");
        let cases: Vec<(&str, Vec<&str>, Code, &str)> = vec![
            ("no volumes", vec![], Code::Skip, ""),
            (
                "volume without zone labels",
                vec!["pvc_none"],
                Code::Skip,
                "",
            ),
            (
                "unbound wait-for-first-consumer claim",
                vec!["pvc_wffc"],
                Code::Skip,
                "",
            ),
            (
                "claim not found",
                vec!["nope"],
                Code::UnschedulableAndUnresolvable,
                "persistentvolumeclaim \"nope\" not found",
            ),
            (
                "unbound immediate claim",
                vec!["pvc_immediate"],
                Code::UnschedulableAndUnresolvable,
                "PersistentVolume had no name",
            ),
            (
                "class without binding mode",
                vec!["pvc_nomode"],
                Code::UnschedulableAndUnresolvable,
                "VolumeBindingMode not set for StorageClass \"nomode\"",
            ),
            (
                "volume not found",
                vec!["pvc_lost"],
                Code::UnschedulableAndUnresolvable,
                "persistentvolume \"missing\" not found",
            ),
            ("zoned volume", vec!["pvc_1"], Code::Success, ""),
        ];
        for (name, claims, code, reason) in cases {
            let info = pod_info(pod_with_claims("p", &claims));
            let mut state = CycleState::new();
            let (_, s) = pf.pre_filter(&mut state, &info, &Snapshot::default());
            assert_eq!(s.code, code, "{name}");
            assert_eq!(s.message(), reason, "{name}");
        }
    }

    #[tokio::test]
    async fn hints() {
        let p = pod_with_claims("p", &["pvc_1"]);
        let c = pvc("pvc_1", "vol_1", None);
        let other = pvc("other", "vol_1", None);
        assert_eq!(claim_hint(&p, None, Some(&c)), QueueingHint::Queue);
        assert_eq!(claim_hint(&p, None, Some(&other)), QueueingHint::Skip);
        let a = pv("v", &[(GA_ZONE, "a")]);
        let b = pv("v", &[(GA_ZONE, "b")]);
        assert_eq!(
            volume_hint(&p, Some(&a), Some(&a.clone())),
            QueueingHint::Skip
        );
        assert_eq!(volume_hint(&p, Some(&a), Some(&b)), QueueingHint::Queue);
        let w = class("w", Some("WaitForFirstConsumer"));
        let i = class("i", Some("Immediate"));
        assert_eq!(storage_class_hint(&p, None, Some(&w)), QueueingHint::Queue);
        assert_eq!(storage_class_hint(&p, None, Some(&i)), QueueingHint::Skip);
    }
}
