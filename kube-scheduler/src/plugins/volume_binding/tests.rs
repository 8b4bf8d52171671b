use super::binder::{
    ERR_REASON_BIND_CONFLICT, ERR_REASON_NODE_CONFLICT, ERR_REASON_PV_NOT_EXIST,
    bind_volume_to_claim,
};
use super::helpers::ANN_BIND_COMPLETED;
use super::*;
use crate::framework::Code;
use crate::framework::testing::{
    node, node_info, pod, pod_info, pod_with_claims, resources, test_context,
};
use k8s_openapi::api::core::v1::{
    EphemeralVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolumeClaimSpec, PersistentVolumeSpec, PersistentVolumeStatus,
    TopologySelectorLabelRequirement, TopologySelectorTerm, VolumeNodeAffinity,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const WFFC: &str = "wait";
const IMMEDIATE: &str = "immediate";
const NO_PROVISIONER: &str = "local";
const TOPOLOGY: &str = "topo";

fn class(name: &str, mode: &str, provisioner: &str, zone: Option<&str>) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        provisioner: provisioner.into(),
        volume_binding_mode: Some(mode.into()),
        allowed_topologies: zone.map(|z| {
            vec![TopologySelectorTerm {
                match_label_expressions: Some(vec![TopologySelectorLabelRequirement {
                    key: "topology.kubernetes.io/zone".into(),
                    values: vec![z.into()],
                }]),
            }]
        }),
        ..Default::default()
    }
}

fn pvc(name: &str, class: &str, size: &str, volume: &str, bound: bool) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            annotations: bound.then(|| {
                [(ANN_BIND_COMPLETED.to_string(), "yes".to_string())]
                    .into_iter()
                    .collect()
            }),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: Some(class.into()),
            volume_name: (!volume.is_empty()).then(|| volume.to_string()),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(resources(&[("storage", size)])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pv(name: &str, class: &str, size: &str, node_name: Option<&str>) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            storage_class_name: Some(class.into()),
            capacity: Some(resources(&[("storage", size)])),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            node_affinity: node_name.map(|n| VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: "kubernetes.io/hostname".into(),
                            operator: "In".into(),
                            values: Some(vec![n.into()]),
                        }]),
                        match_fields: None,
                    }],
                }),
            }),
            ..Default::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        }),
    }
}

fn with_selected_node(mut c: PersistentVolumeClaim, node: &str) -> PersistentVolumeClaim {
    c.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(ANN_SELECTED_NODE.into(), node.into());
    c
}

fn setup(ctx: &PluginContext) {
    let scs = ctx.informers.informer::<StorageClass>();
    for c in [
        class(WFFC, "WaitForFirstConsumer", "csi.example", None),
        class(IMMEDIATE, "Immediate", "csi.example", None),
        class(NO_PROVISIONER, "WaitForFirstConsumer", NOT_SUPPORTED, None),
        class(
            TOPOLOGY,
            "WaitForFirstConsumer",
            "csi.example",
            Some("zone-a"),
        ),
    ] {
        scs.indexer().insert(Arc::new(c));
    }
    let pvs = ctx.informers.informer::<PersistentVolume>();
    let mut bound_pv = pv("pv-bound", IMMEDIATE, "1Gi", Some("node-a"));
    if let Some(s) = bound_pv.spec.as_mut() {
        s.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
            name: Some("bound".into()),
            namespace: Some("default".into()),
            uid: Some("uid-bound".into()),
            ..Default::default()
        });
    }
    for v in [
        bound_pv,
        pv("local-a-small", NO_PROVISIONER, "1Gi", Some("node-a")),
        pv("local-a-big", NO_PROVISIONER, "10Gi", Some("node-a")),
        pv("local-b", NO_PROVISIONER, "5Gi", Some("node-b")),
    ] {
        pvs.indexer().insert(Arc::new(v));
    }
    let pvcs = ctx.informers.informer::<PersistentVolumeClaim>();
    for c in [
        pvc("bound", IMMEDIATE, "1Gi", "pv-bound", true),
        pvc("bound-missing-pv", IMMEDIATE, "1Gi", "pv-gone", true),
        pvc("immediate", IMMEDIATE, "1Gi", "", false),
        pvc("prebound", WFFC, "1Gi", "pv-x", false),
        pvc("wffc", WFFC, "1Gi", "", false),
        pvc("local", NO_PROVISIONER, "1Gi", "", false),
        pvc("local-big", NO_PROVISIONER, "8Gi", "", false),
        pvc("local-huge", NO_PROVISIONER, "100Gi", "", false),
        pvc("topo", TOPOLOGY, "1Gi", "", false),
        with_selected_node(pvc("selected-b", WFFC, "1Gi", "", false), "node-b"),
    ] {
        pvcs.indexer().insert(Arc::new(c));
    }
}

const NOT_SUPPORTED: &str = helpers::NOT_SUPPORTED_PROVISIONER;

fn nodes() -> Vec<NodeInfo> {
    vec![
        node_info(
            node("node-a", &[], &[("topology.kubernetes.io/zone", "zone-a")]),
            vec![],
        ),
        node_info(
            node("node-b", &[], &[("topology.kubernetes.io/zone", "zone-b")]),
            vec![],
        ),
    ]
}

#[tokio::test]
async fn pre_filter_table() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = new(None, &ctx).expect("plugin");
    let pf = plugin.as_pre_filter().expect("prefilter");
    let cases: Vec<(&str, Vec<&str>, Code, &str)> = vec![
        ("no claims", vec![], Code::Skip, ""),
        ("all bound", vec!["bound"], Code::Success, ""),
        (
            "claim not found",
            vec!["nope"],
            Code::UnschedulableAndUnresolvable,
            "persistentvolumeclaim \"nope\" not found",
        ),
        (
            "unbound immediate",
            vec!["immediate"],
            Code::UnschedulableAndUnresolvable,
            ERR_UNBOUND_IMMEDIATE,
        ),
        (
            "pre-bound to a volume counts as immediate",
            vec!["prebound"],
            Code::UnschedulableAndUnresolvable,
            ERR_UNBOUND_IMMEDIATE,
        ),
        ("wait for first consumer", vec!["wffc"], Code::Success, ""),
    ];
    for (name, claims, code, reason) in cases {
        let info = pod_info(pod_with_claims("p", &claims));
        let mut state = CycleState::new();
        let (_, s) = pf.pre_filter(&mut state, &info, &Snapshot::default());
        assert_eq!(s.code, code, "{name}");
        assert_eq!(s.message(), reason, "{name}");
    }

    // A generic ephemeral volume whose claim does not exist yet.
    let mut p = pod("eph", &[]);
    if let Some(s) = p.spec.as_mut() {
        s.volumes = Some(vec![k8s_openapi::api::core::v1::Volume {
            name: "scratch".into(),
            ephemeral: Some(EphemeralVolumeSource::default()),
            ..Default::default()
        }]);
    }
    let (_, s) = pf.pre_filter(&mut CycleState::new(), &pod_info(p), &Snapshot::default());
    assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
    assert_eq!(
        s.message(),
        "waiting for ephemeral volume controller to create the persistentvolumeclaim \"eph-scratch\""
    );
}

#[tokio::test]
async fn filter_table() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = new(None, &ctx).expect("plugin");
    let pf = plugin.as_pre_filter().expect("prefilter");
    let f = plugin.as_filter().expect("filter");
    let [a, b]: [NodeInfo; 2] = nodes().try_into().expect("two nodes");
    // (name, claims, node, code, reasons)
    type Case<'a> = (&'a str, Vec<&'a str>, &'a NodeInfo, Code, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "bound volume on its node",
            vec!["bound"],
            &a,
            Code::Success,
            vec![],
        ),
        (
            "bound volume elsewhere",
            vec!["bound"],
            &b,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_NODE_CONFLICT],
        ),
        (
            "bound to a missing volume",
            vec!["bound-missing-pv"],
            &a,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_PV_NOT_EXIST],
        ),
        (
            "local volume on node a",
            vec!["local"],
            &a,
            Code::Success,
            vec![],
        ),
        (
            "local volume on node b",
            vec!["local"],
            &b,
            Code::Success,
            vec![],
        ),
        (
            "no local volume big enough on b",
            vec!["local-big"],
            &b,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_BIND_CONFLICT],
        ),
        (
            "two claims, two volumes on a",
            vec!["local", "local-big"],
            &a,
            Code::Success,
            vec![],
        ),
        (
            "two claims, one volume on b",
            vec!["local", "local-big"],
            &b,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_BIND_CONFLICT],
        ),
        (
            "no volume big enough anywhere",
            vec!["local-huge"],
            &a,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_BIND_CONFLICT],
        ),
        (
            "dynamic provisioning",
            vec!["wffc"],
            &b,
            Code::Success,
            vec![],
        ),
        (
            "allowed topology matches",
            vec!["topo"],
            &a,
            Code::Success,
            vec![],
        ),
        (
            "allowed topology does not match",
            vec!["topo"],
            &b,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_BIND_CONFLICT],
        ),
        (
            "provisioning selected another node",
            vec!["selected-b"],
            &a,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_BIND_CONFLICT],
        ),
        (
            "provisioning selected this node",
            vec!["selected-b"],
            &b,
            Code::Success,
            vec![],
        ),
        (
            "bound elsewhere and nothing to bind",
            vec!["bound", "local-huge"],
            &b,
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT],
        ),
    ];
    for (name, claims, ni, code, reasons) in cases {
        let info = pod_info(pod_with_claims("p", &claims));
        let mut state = CycleState::new();
        let (_, s) = pf.pre_filter(&mut state, &info, &Snapshot::default());
        assert!(s.is_success(), "{name}: prefilter {s:?}");
        let s = f.filter(&state, &info, ni);
        assert_eq!(s.code, code, "{name}");
        assert_eq!(s.reasons, reasons, "{name}");
    }
}

#[tokio::test]
async fn smallest_volume_is_chosen_and_reserve_assumes_it() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = new(None, &ctx).expect("plugin");
    let pf = plugin.as_pre_filter().expect("prefilter");
    let f = plugin.as_filter().expect("filter");
    let r = plugin.as_reserve().expect("reserve");
    let [a, _b]: [NodeInfo; 2] = nodes().try_into().expect("two nodes");

    let first = pod_info(pod_with_claims("first", &["local"]));
    let mut state = CycleState::new();
    assert!(
        pf.pre_filter(&mut state, &first, &Snapshot::default())
            .1
            .is_success()
    );
    assert!(f.filter(&state, &first, &a).is_success());
    {
        let data = state.read::<StateData>(STATE_KEY).expect("state");
        let by_node = data.by_node.lock();
        let chosen = &by_node["node-a"].static_bindings;
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].0.metadata.name.as_deref(), Some("local-a-small"));
        let claim_ref = chosen[0].0.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        assert_eq!(claim_ref.and_then(|r| r.name.as_deref()), Some("local"));
    }
    assert!(r.reserve(&mut state, &first, "node-a").is_success());
    assert!(!state.read::<StateData>(STATE_KEY).expect("state").all_bound);

    // The assumed volume is no longer available to a second claim of the same size.
    let second = pod_info(pod_with_claims("second", &["local-big"]));
    let mut state2 = CycleState::new();
    assert!(
        pf.pre_filter(&mut state2, &second, &Snapshot::default())
            .1
            .is_success()
    );
    assert!(f.filter(&state2, &second, &a).is_success());
    let third_claim = pvc("third", NO_PROVISIONER, "1Gi", "", false);
    ctx.informers
        .informer::<PersistentVolumeClaim>()
        .indexer()
        .insert(Arc::new(third_claim));
    let third = pod_info(pod_with_claims("third", &["third"]));
    let mut state3 = CycleState::new();
    assert!(
        pf.pre_filter(&mut state3, &third, &Snapshot::default())
            .1
            .is_success()
    );
    assert!(f.filter(&state3, &third, &a).is_success());
    {
        let data = state3.read::<StateData>(STATE_KEY).expect("state");
        let by_node = data.by_node.lock();
        assert_eq!(
            by_node["node-a"].static_bindings[0]
                .0
                .metadata
                .name
                .as_deref(),
            Some("local-a-big"),
            "the smaller volume is assumed by the first pod"
        );
    }

    // Unreserve gives the volume back.
    r.unreserve(&mut state, &first, "node-a");
    let mut state4 = CycleState::new();
    assert!(
        pf.pre_filter(&mut state4, &third, &Snapshot::default())
            .1
            .is_success()
    );
    assert!(f.filter(&state4, &third, &a).is_success());
    let data = state4.read::<StateData>(STATE_KEY).expect("state");
    assert_eq!(
        data.by_node.lock()["node-a"].static_bindings[0]
            .0
            .metadata
            .name
            .as_deref(),
        Some("local-a-small")
    );
}

#[tokio::test]
async fn reserve_and_pre_bind_without_claims() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = new(None, &ctx).expect("plugin");
    let info = pod_info(pod_with_claims("p", &["bound"]));
    let mut state = CycleState::new();
    let pf = plugin.as_pre_filter().expect("prefilter");
    assert!(
        pf.pre_filter(&mut state, &info, &Snapshot::default())
            .1
            .is_success()
    );
    let [a, _]: [NodeInfo; 2] = nodes().try_into().expect("two nodes");
    assert!(
        plugin
            .as_filter()
            .expect("filter")
            .filter(&state, &info, &a)
            .is_success()
    );
    let r = plugin.as_reserve().expect("reserve");
    assert!(r.reserve(&mut state, &info, "node-a").is_success());
    // Nothing to bind: PreBind answers at once without touching the API.
    let s = plugin
        .as_pre_bind()
        .expect("prebind")
        .pre_bind(&state, &info, "node-a")
        .await;
    assert!(s.is_success(), "{s:?}");

    let mut empty = CycleState::new();
    let s = plugin
        .as_filter()
        .expect("filter")
        .filter(&empty, &info, &a);
    assert_eq!(s.code, Code::Error);
    assert!(r.reserve(&mut empty, &info, "node-a").code == Code::Error);
}

#[tokio::test]
async fn provisioning_claim_gets_selected_node() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = new(None, &ctx).expect("plugin");
    let info = pod_info(pod_with_claims("p", &["wffc"]));
    let mut state = CycleState::new();
    let pf = plugin.as_pre_filter().expect("prefilter");
    assert!(
        pf.pre_filter(&mut state, &info, &Snapshot::default())
            .1
            .is_success()
    );
    let [_, b]: [NodeInfo; 2] = nodes().try_into().expect("two nodes");
    assert!(
        plugin
            .as_filter()
            .expect("filter")
            .filter(&state, &info, &b)
            .is_success()
    );
    let data = state.read::<StateData>(STATE_KEY).expect("state");
    let by_node = data.by_node.lock();
    let prov = &by_node["node-b"].dynamic_provisions;
    assert_eq!(prov.len(), 1);
    assert_eq!(helpers::selected_node(&prov[0]), Some("node-b"));
}

#[test]
fn args_are_validated() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let ctx = test_context();
        let bad = serde_json::json!({"bindTimeoutSeconds": -1});
        assert!(new(Some(&bad), &ctx).is_err());
        let good = serde_json::json!({"bindTimeoutSeconds": 30});
        assert!(new(Some(&good), &ctx).is_ok());
    });
}

#[test]
fn hints() {
    let p = pod_with_claims("p", &["wffc"]);
    let mine = pvc("wffc", WFFC, "1Gi", "", false);
    let other = pvc("other", WFFC, "1Gi", "", false);
    assert_eq!(claim_hint(&p, None, Some(&mine)), QueueingHint::Queue);
    assert_eq!(claim_hint(&p, None, Some(&other)), QueueingHint::Skip);
    let c1 = class(TOPOLOGY, "WaitForFirstConsumer", "x", Some("zone-a"));
    let c2 = class(TOPOLOGY, "WaitForFirstConsumer", "x", Some("zone-b"));
    assert_eq!(storage_class_hint(&p, None, Some(&c1)), QueueingHint::Queue);
    assert_eq!(
        storage_class_hint(&p, Some(&c1), Some(&c1.clone())),
        QueueingHint::Skip
    );
    assert_eq!(
        storage_class_hint(&p, Some(&c1), Some(&c2)),
        QueueingHint::Queue
    );
}

#[tokio::test]
async fn bound_local_volumes_narrow_the_nodes() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = new(None, &ctx).expect("plugin");
    let pf = plugin.as_pre_filter().expect("prefilter");
    let names = |claims: &[&str]| {
        let info = pod_info(pod_with_claims("p", claims));
        let (r, s) = pf.pre_filter(&mut CycleState::new(), &info, &Snapshot::default());
        assert!(s.is_success(), "{claims:?}: {s:?}");
        r.and_then(|r| r.node_names).map(|n| {
            let mut n: Vec<String> = n.into_iter().collect();
            n.sort();
            n
        })
    };
    assert_eq!(names(&["bound"]), Some(vec!["node-a".to_string()]));
    // Unbound claims and missing volumes do not narrow anything.
    assert_eq!(names(&["local"]), None);
    assert_eq!(names(&["bound", "bound-missing-pv"]), None);

    let mut far = pv("pv-bound-b", IMMEDIATE, "1Gi", Some("node-b"));
    if let Some(s) = far.spec.as_mut() {
        s.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
            name: Some("bound-b".into()),
            namespace: Some("default".into()),
            ..Default::default()
        });
    }
    ctx.informers
        .informer::<PersistentVolume>()
        .indexer()
        .insert(Arc::new(far));
    ctx.informers
        .informer::<PersistentVolumeClaim>()
        .indexer()
        .insert(Arc::new(pvc(
            "bound-b",
            IMMEDIATE,
            "1Gi",
            "pv-bound-b",
            true,
        )));
    // Volumes on two different nodes: no node can have both.
    assert_eq!(names(&["bound", "bound-b"]), Some(vec![]));
}

#[tokio::test]
async fn bindings_done_table() {
    let ctx = test_context();
    setup(&ctx);
    let plugin = build(None, &ctx).expect("plugin");
    let pvcs = ctx.informers.informer::<PersistentVolumeClaim>();
    let pv_a = Arc::new(pv("local-a-small", NO_PROVISIONER, "1Gi", Some("node-a")));
    let claim = Arc::new(pvc("local", NO_PROVISIONER, "1Gi", "", false));
    let bound_pv = bind_volume_to_claim(&pv_a, &claim);
    ctx.informers
        .informer::<PersistentVolume>()
        .indexer()
        .insert(bound_pv.clone());
    let static_binding = PodVolumes {
        static_bindings: vec![(bound_pv, claim.clone())],
        dynamic_provisions: vec![],
    };
    // The PV controller has not finished yet.
    assert_eq!(plugin.bindings_done(&static_binding, "node-a"), Ok(false));
    pvcs.indexer().insert(Arc::new(pvc(
        "local",
        NO_PROVISIONER,
        "1Gi",
        "local-a-small",
        true,
    )));
    assert_eq!(plugin.bindings_done(&static_binding, "node-a"), Ok(true));
    // The PV controller unbound the volume again.
    let mut reset = pv("local-a-small", NO_PROVISIONER, "1Gi", Some("node-a"));
    reset.metadata.resource_version = Some("2".into());
    ctx.informers
        .informer::<PersistentVolume>()
        .indexer()
        .insert(Arc::new(reset));
    assert_eq!(
        plugin.bindings_done(&static_binding, "node-a"),
        Err("ClaimRef got reset for pv \"local-a-small\"".to_string())
    );

    let provision = PodVolumes {
        static_bindings: vec![],
        dynamic_provisions: vec![Arc::new(with_selected_node(
            pvc("wffc", WFFC, "1Gi", "", false),
            "node-b",
        ))],
    };
    // (informer's claim, result)
    let cases: Vec<(PersistentVolumeClaim, Result<bool, String>)> = vec![
        (
            pvc("wffc", WFFC, "1Gi", "", false),
            Err("selectedNode annotation reset for PVC \"wffc\"".into()),
        ),
        (
            with_selected_node(pvc("wffc", WFFC, "1Gi", "", false), "node-a"),
            Err("provisioning failed for PVC \"wffc\"".into()),
        ),
        (
            with_selected_node(pvc("wffc", WFFC, "1Gi", "", false), "node-b"),
            Ok(false),
        ),
        (
            with_selected_node(pvc("wffc", WFFC, "1Gi", "pvc-123", true), "node-b"),
            Ok(true),
        ),
    ];
    for (claim, want) in cases {
        pvcs.indexer().insert(Arc::new(claim));
        assert_eq!(plugin.bindings_done(&provision, "node-b"), want);
    }
    pvcs.indexer().delete("default/wffc");
    assert_eq!(
        plugin.bindings_done(&provision, "node-b"),
        Err("failed to check binding: persistentvolumeclaim \"wffc\" not found".into())
    );
}

#[tokio::test]
async fn storage_capacity_table() {
    use k8s_openapi::api::storage::v1::{CSIDriverSpec, CSIStorageCapacity};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    let ctx = test_context();
    setup(&ctx);
    ctx.informers
        .informer::<StorageClass>()
        .indexer()
        .insert(Arc::new(class(
            "cap",
            "WaitForFirstConsumer",
            "cap.example",
            None,
        )));
    ctx.informers
        .informer::<CSIDriver>()
        .indexer()
        .insert(Arc::new(CSIDriver {
            metadata: ObjectMeta {
                name: Some("cap.example".into()),
                ..Default::default()
            },
            spec: CSIDriverSpec {
                storage_capacity: Some(true),
                ..Default::default()
            },
        }));
    let pool = |name: &str, zone: &str, capacity: &str, max: Option<&str>| CSIStorageCapacity {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("kube-system".into()),
            ..Default::default()
        },
        storage_class_name: "cap".into(),
        capacity: Some(ApiQuantity(capacity.into())),
        maximum_volume_size: max.map(|m| ApiQuantity(m.into())),
        node_topology: Some(LabelSelector {
            match_labels: Some(
                [("topology.kubernetes.io/zone".to_string(), zone.to_string())]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        }),
    };
    let pools = ctx.informers.informer::<CSIStorageCapacity>();
    // Zone a has room for 10Gi; zone b reports 100Gi free but no volume above 2Gi.
    pools
        .indexer()
        .insert(Arc::new(pool("pool-a", "zone-a", "10Gi", None)));
    pools
        .indexer()
        .insert(Arc::new(pool("pool-b", "zone-b", "100Gi", Some("2Gi"))));
    let claims = ctx.informers.informer::<PersistentVolumeClaim>();
    claims
        .indexer()
        .insert(Arc::new(pvc("cap-small", "cap", "1Gi", "", false)));
    claims
        .indexer()
        .insert(Arc::new(pvc("cap-big", "cap", "5Gi", "", false)));
    claims
        .indexer()
        .insert(Arc::new(pvc("cap-huge", "cap", "50Gi", "", false)));

    let plugin = new(None, &ctx).expect("plugin");
    let pf = plugin.as_pre_filter().expect("prefilter");
    let f = plugin.as_filter().expect("filter");
    let [a, b]: [NodeInfo; 2] = nodes().try_into().expect("two nodes");
    let enough = Vec::<&str>::new();
    let not_enough = vec![binder::ERR_REASON_NOT_ENOUGH_SPACE];
    let cases = vec![
        ("small on a", "cap-small", &a, &enough),
        ("small on b", "cap-small", &b, &enough),
        ("big on a", "cap-big", &a, &enough),
        (
            "big above b's maximum volume size",
            "cap-big",
            &b,
            &not_enough,
        ),
        ("huge above a's capacity", "cap-huge", &a, &not_enough),
        // A class whose driver did not opt in is not checked.
        ("no capacity tracking", "wffc", &b, &enough),
    ];
    for (name, claim, ni, reasons) in cases {
        let info = pod_info(pod_with_claims("p", &[claim]));
        let mut state = CycleState::new();
        assert!(
            pf.pre_filter(&mut state, &info, &Snapshot::default())
                .1
                .is_success()
        );
        let s = f.filter(&state, &info, ni);
        assert_eq!(&s.reasons, reasons, "{name}");
    }
}
