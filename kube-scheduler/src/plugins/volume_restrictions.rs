//! The VolumeRestrictions plugin: in-tree disks that only one node (or one writer) may mount
//! (GCE PD, AWS EBS, RBD, iSCSI), and ReadWriteOncePod claims already used by another pod.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, PreFilterExtensions,
    PreFilterPlugin, PreFilterResult, Snapshot, Status,
};
use crate::plugins::volume_binding::helpers::{event_object, pod_volumes, pvc_not_found};
use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Volume};
use serde_json::Value;
use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

pub const NAME: &str = "VolumeRestrictions";
const STATE_KEY: &str = "PreFilterVolumeRestrictions";
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
pub const ERR_REASON_RWOP_CONFLICT: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

#[derive(Debug, Clone, Default)]
struct PreFilterState {
    /// The pod's ReadWriteOncePod claims (names in the pod's namespace).
    rwop_claims: HashSet<String>,
    /// How many of them other pods use (preemption's simulations move it up and down).
    conflicting_refs: i64,
}

impl PreFilterState {
    fn refs_of(&self, namespace: &str, other: &Pod) -> i64 {
        if self.rwop_claims.is_empty()
            || other.metadata.namespace.as_deref().unwrap_or_default() != namespace
        {
            return 0;
        }
        pod_volumes(other)
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .filter(|c| self.rwop_claims.contains(&c.claim_name))
            .count() as i64
    }
}

pub struct VolumeRestrictions {
    pvcs: Lister<PersistentVolumeClaim>,
}

pub fn new(_args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(VolumeRestrictions {
        pvcs: ctx.informers.informer::<PersistentVolumeClaim>().lister(),
    }))
}

fn needs_restrictions_check(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

/// Whether `v` and an existing pod's volume are the same disk mounted in a way that conflicts:
/// the same disk twice unless both mounts are read-only (EBS: never twice).
fn is_volume_conflict(v: &Volume, existing: &Pod) -> bool {
    pod_volumes(existing).iter().any(|e| {
        if let (Some(a), Some(b)) = (&v.gce_persistent_disk, &e.gce_persistent_disk)
            && a.pd_name == b.pd_name
            && !(a.read_only == Some(true) && b.read_only == Some(true))
        {
            return true;
        }
        if let (Some(a), Some(b)) = (&v.aws_elastic_block_store, &e.aws_elastic_block_store)
            && a.volume_id == b.volume_id
        {
            return true;
        }
        if let (Some(a), Some(b)) = (&v.iscsi, &e.iscsi)
            && a.iqn == b.iqn
            && !(a.read_only == Some(true) && b.read_only == Some(true))
        {
            return true;
        }
        if let (Some(a), Some(b)) = (&v.rbd, &e.rbd) {
            // The API server defaults the pool to "rbd".
            let pool = |p: &Option<String>| p.clone().unwrap_or_else(|| "rbd".into());
            let overlap = a.monitors.iter().any(|m| b.monitors.contains(m));
            if overlap
                && pool(&a.pool) == pool(&b.pool)
                && a.image == b.image
                && !(a.read_only == Some(true) && b.read_only == Some(true))
            {
                return true;
            }
        }
        false
    })
}

impl VolumeRestrictions {
    fn rwop_claims(&self, pod: &Pod) -> Result<HashSet<String>, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let mut out = HashSet::new();
        for claim in pod_volumes(pod)
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
        {
            let Some(pvc) = self.pvcs.namespace(ns).get(&claim.claim_name) else {
                return Err(pvc_not_found(&claim.claim_name));
            };
            let rwop = pvc
                .spec
                .as_ref()
                .and_then(|s| s.access_modes.as_ref())
                .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"));
            if rwop {
                out.insert(claim.claim_name.clone());
            }
        }
        Ok(out)
    }
}

impl PreFilterPlugin for VolumeRestrictions {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let needs_check = pod_volumes(&pod.pod).iter().any(needs_restrictions_check);
        let rwop_claims = match self.rwop_claims(&pod.pod) {
            Ok(c) => c,
            Err(e) => return (None, Status::unresolvable(e)),
        };
        let ns = pod.namespace();
        let conflicting_refs = rwop_claims
            .iter()
            .filter(|c| snapshot.used_pvc_set.contains(&format!("{ns}/{c}")))
            .count() as i64;
        if !needs_check && conflicting_refs == 0 {
            return (None, Status::skip());
        }
        state.write(
            STATE_KEY,
            PreFilterState {
                rwop_claims,
                conflicting_refs,
            },
        );
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

fn update_refs(state: &mut CycleState, pod: &PodInfo, other: &PodInfo, sign: i64) -> Status {
    let Some(s) = state.read_mut::<PreFilterState>(STATE_KEY) else {
        return Status::state_not_found(STATE_KEY);
    };
    s.conflicting_refs += sign * s.refs_of(pod.namespace(), &other.pod);
    Status::success()
}

impl PreFilterExtensions for VolumeRestrictions {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &Arc<PodInfo>,
        _node: &NodeInfo,
    ) -> Status {
        update_refs(state, pod_to_schedule, pod_to_add, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        _node: &NodeInfo,
    ) -> Status {
        update_refs(state, pod_to_schedule, pod_to_remove, -1)
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for v in pod_volumes(&pod.pod)
            .iter()
            .filter(|v| needs_restrictions_check(v))
        {
            if node.pods.iter().any(|p| is_volume_conflict(v, &p.pod)) {
                return Status::unschedulable(ERR_REASON_DISK_CONFLICT);
            }
        }
        let Some(s) = state.read::<PreFilterState>(STATE_KEY) else {
            return Status::state_not_found(STATE_KEY);
        };
        // Unschedulable, not unresolvable: preempting the other user frees the claim.
        if s.conflicting_refs > 0 {
            return Status::unschedulable(ERR_REASON_RWOP_CONFLICT);
        }
        Status::success()
    }
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            // Volumes are immutable in a pod spec: only a deletion releases a disk or a claim.
            ClusterEventWithHint::new(EventResource::Pod, action::DELETE).with_hint(
                |pod: &Pod, old: Option<&dyn Any>, _new: Option<&dyn Any>| {
                    pod_deleted_hint(pod, old)
                },
            ),
            ClusterEventWithHint::new(EventResource::Node, action::ADD),
            ClusterEventWithHint::new(EventResource::PersistentVolumeClaim, action::ADD)
                .with_hint(claim_added_hint),
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

/// A deleted pod in the same namespace frees its disks and its claims. Whether a shared
/// claim is ReadWriteOncePod is not looked up, as upstream (the hint must stay cheap).
fn pod_deleted_hint(pod: &Pod, deleted: Option<&dyn Any>) -> QueueingHint {
    let Some(deleted) = event_object::<Pod>(deleted) else {
        return QueueingHint::Queue;
    };
    if deleted.metadata.namespace != pod.metadata.namespace {
        return QueueingHint::Skip;
    }
    let disk_conflict = pod_volumes(pod)
        .iter()
        .filter(|v| needs_restrictions_check(v))
        .any(|v| is_volume_conflict(v, deleted));
    if disk_conflict {
        return QueueingHint::Queue;
    }
    let mine: HashSet<&str> = pod_volumes(pod)
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.as_str())
        .collect();
    let shares_claim = pod_volumes(deleted)
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .any(|c| mine.contains(c.claim_name.as_str()));
    if shares_claim {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

fn claim_added_hint(pod: &Pod, _old: Option<&dyn Any>, new: Option<&dyn Any>) -> QueueingHint {
    let Some(pvc) = event_object::<PersistentVolumeClaim>(new) else {
        return QueueingHint::Queue;
    };
    let uses = pvc.metadata.namespace == pod.metadata.namespace
        && pod_volumes(pod)
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .any(|c| Some(&c.claim_name) == pvc.metadata.name.as_ref());
    if uses {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing::{node, node_info, pod, pod_info, test_context};
    use k8s_openapi::api::core::v1::{
        AWSElasticBlockStoreVolumeSource, GCEPersistentDiskVolumeSource, ISCSIVolumeSource,
        PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, RBDVolumeSource,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod_with(name: &str, vols: Vec<Volume>) -> Pod {
        let mut p = pod(name, &[]);
        if let Some(s) = p.spec.as_mut() {
            s.volumes = Some(vols);
        }
        p
    }

    fn gce(pd: &str, ro: bool) -> Volume {
        Volume {
            name: "v".into(),
            gce_persistent_disk: Some(GCEPersistentDiskVolumeSource {
                pd_name: pd.into(),
                read_only: Some(ro),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn ebs(id: &str) -> Volume {
        Volume {
            name: "v".into(),
            aws_elastic_block_store: Some(AWSElasticBlockStoreVolumeSource {
                volume_id: id.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn rbd(mons: &[&str], image: &str, ro: bool) -> Volume {
        Volume {
            name: "v".into(),
            rbd: Some(RBDVolumeSource {
                monitors: mons.iter().map(|s| s.to_string()).collect(),
                image: image.into(),
                read_only: Some(ro),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn iscsi(iqn: &str, ro: bool) -> Volume {
        Volume {
            name: "v".into(),
            iscsi: Some(ISCSIVolumeSource {
                iqn: iqn.into(),
                target_portal: "127.0.0.1:3260".into(),
                lun: 0,
                read_only: Some(ro),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn claim(name: &str) -> Volume {
        Volume {
            name: name.into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: name.into(),
                read_only: None,
            }),
            ..Default::default()
        }
    }
    fn pvc(name: &str, modes: &[&str]) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(modes.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn disk_conflicts_table() {
        let ctx = test_context();
        let plugin = new(None, &ctx).expect("plugin");
        let pf = plugin.as_pre_filter().expect("prefilter");
        let f = plugin.as_filter().expect("filter");
        let cases: Vec<(&str, Volume, Vec<Volume>, Code)> = vec![
            (
                "gce same disk rw",
                gce("foo", false),
                vec![gce("foo", false)],
                Code::Unschedulable,
            ),
            (
                "gce other disk",
                gce("foo", false),
                vec![gce("bar", false)],
                Code::Success,
            ),
            (
                "gce both read-only",
                gce("foo", true),
                vec![gce("foo", true)],
                Code::Success,
            ),
            (
                "gce one writer",
                gce("foo", true),
                vec![gce("foo", false)],
                Code::Unschedulable,
            ),
            (
                "ebs same volume",
                ebs("foo"),
                vec![ebs("foo")],
                Code::Unschedulable,
            ),
            (
                "ebs other volume",
                ebs("foo"),
                vec![ebs("bar")],
                Code::Success,
            ),
            (
                "rbd overlapping monitors",
                rbd(&["a", "b"], "img", false),
                vec![rbd(&["b", "c"], "img", false)],
                Code::Unschedulable,
            ),
            (
                "rbd disjoint monitors",
                rbd(&["a"], "img", false),
                vec![rbd(&["c"], "img", false)],
                Code::Success,
            ),
            (
                "rbd other image",
                rbd(&["a"], "img", false),
                vec![rbd(&["a"], "img2", false)],
                Code::Success,
            ),
            (
                "rbd both read-only",
                rbd(&["a"], "img", true),
                vec![rbd(&["a"], "img", true)],
                Code::Success,
            ),
            (
                "iscsi same iqn",
                iscsi("iqn.a", false),
                vec![iscsi("iqn.a", false)],
                Code::Unschedulable,
            ),
            (
                "iscsi both read-only",
                iscsi("iqn.a", true),
                vec![iscsi("iqn.a", true)],
                Code::Success,
            ),
            (
                "iscsi other iqn",
                iscsi("iqn.a", false),
                vec![iscsi("iqn.b", false)],
                Code::Success,
            ),
        ];
        for (name, v, existing, code) in cases {
            let info = pod_info(pod_with("new", vec![v]));
            let ni = node_info(node("n", &[], &[]), vec![pod_with("old", existing)]);
            let snapshot = Snapshot::from_node_infos(vec![ni.clone()]);
            let mut state = CycleState::new();
            let (_, s) = pf.pre_filter(&mut state, &info, &snapshot);
            assert!(s.is_success(), "{name}: {s:?}");
            let s = f.filter(&state, &info, &ni);
            assert_eq!(s.code, code, "{name}");
            if code != Code::Success {
                assert_eq!(s.message(), ERR_REASON_DISK_CONFLICT, "{name}");
            }
        }
    }

    #[tokio::test]
    async fn read_write_once_pod_table() {
        let ctx = test_context();
        let informer = ctx.informers.informer::<PersistentVolumeClaim>();
        informer
            .indexer()
            .insert(Arc::new(pvc("rwop", &["ReadWriteOncePod"])));
        informer
            .indexer()
            .insert(Arc::new(pvc("rwo", &["ReadWriteOnce"])));
        let plugin = new(None, &ctx).expect("plugin");
        let pf = plugin.as_pre_filter().expect("prefilter");
        let f = plugin.as_filter().expect("filter");
        let ext = pf.pre_filter_extensions().expect("extensions");

        let user = pod_with("user", vec![claim("rwop"), claim("rwo")]);
        let ni = node_info(node("n", &[], &[]), vec![user.clone()]);
        let used = Snapshot::from_node_infos(vec![ni.clone()]);
        let empty_node = node_info(node("m", &[], &[]), vec![]);
        let unused = Snapshot::from_node_infos(vec![empty_node.clone()]);

        // (name, claims, snapshot, prefilter code, filter code, filter reason)
        type Case<'a> = (&'a str, Vec<&'a str>, &'a Snapshot, Code, Code, &'a str);
        let cases: Vec<Case> = vec![
            ("no volumes", vec![], &used, Code::Skip, Code::Success, ""),
            (
                "rwo claim in use",
                vec!["rwo"],
                &used,
                Code::Skip,
                Code::Success,
                "",
            ),
            (
                "rwop claim unused",
                vec!["rwop"],
                &unused,
                Code::Skip,
                Code::Success,
                "",
            ),
            (
                "rwop claim in use",
                vec!["rwop"],
                &used,
                Code::Success,
                Code::Unschedulable,
                ERR_REASON_RWOP_CONFLICT,
            ),
            (
                "missing claim",
                vec!["nope"],
                &used,
                Code::UnschedulableAndUnresolvable,
                Code::Success,
                "persistentvolumeclaim \"nope\" not found",
            ),
        ];
        for (name, claims, snapshot, pf_code, f_code, reason) in cases {
            let info = pod_info(pod_with("new", claims.iter().map(|c| claim(c)).collect()));
            let mut state = CycleState::new();
            let (_, s) = pf.pre_filter(&mut state, &info, snapshot);
            assert_eq!(s.code, pf_code, "{name}");
            if !s.is_success() {
                if pf_code != Code::Skip {
                    assert_eq!(s.message(), reason, "{name}");
                }
                continue;
            }
            let s = f.filter(&state, &info, &empty_node);
            assert_eq!(s.code, f_code, "{name}");
            assert_eq!(s.message(), reason, "{name}");
        }

        // Preemption removing the user clears the conflict; adding it back restores it.
        let info = pod_info(pod_with("new", vec![claim("rwop")]));
        let mut state = CycleState::new();
        let _ = pf.pre_filter(&mut state, &info, &used);
        let user_info = pod_info(user);
        assert!(
            ext.remove_pod(&mut state, &info, &user_info, &ni)
                .is_success()
        );
        assert!(f.filter(&state, &info, &ni).is_success());
        assert!(ext.add_pod(&mut state, &info, &user_info, &ni).is_success());
        assert_eq!(f.filter(&state, &info, &ni).code, Code::Unschedulable);
    }

    #[test]
    fn hints() {
        let p = pod_with("new", vec![claim("rwop"), gce("disk", false)]);
        let holder = pod_with("holder", vec![claim("rwop")]);
        let disk = pod_with("disk", vec![gce("disk", false)]);
        let other = pod_with("other", vec![gce("x", false)]);
        assert_eq!(pod_deleted_hint(&p, Some(&holder)), QueueingHint::Queue);
        assert_eq!(pod_deleted_hint(&p, Some(&disk)), QueueingHint::Queue);
        assert_eq!(pod_deleted_hint(&p, Some(&other)), QueueingHint::Skip);
        let mut elsewhere = holder.clone();
        elsewhere.metadata.namespace = Some("other".into());
        assert_eq!(pod_deleted_hint(&p, Some(&elsewhere)), QueueingHint::Skip);
        assert_eq!(
            claim_added_hint(&p, None, Some(&pvc("rwop", &[]))),
            QueueingHint::Queue
        );
        assert_eq!(
            claim_added_hint(&p, None, Some(&pvc("x", &[]))),
            QueueingHint::Skip
        );
    }
}
