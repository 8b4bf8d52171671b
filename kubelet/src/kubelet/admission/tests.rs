use super::*;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSpec, NodeStatus, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn node() -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            labels: Some(
                [
                    ("zone".to_string(), "a".to_string()),
                    ("rank".to_string(), "5".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: Some(vec![Taint {
                key: "dedicated".into(),
                value: Some("x".into()),
                effect: "NoExecute".into(),
                time_added: None,
            }]),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            allocatable: Some(
                [
                    ("cpu".to_string(), Q("2".into())),
                    ("memory".to_string(), Q("1Gi".into())),
                    ("pods".to_string(), Q("3".into())),
                ]
                .into(),
            ),
            ..Default::default()
        }),
    }
}

fn pod(cpu: &str, mem: &str) -> Pod {
    let mut requests = BTreeMap::new();
    if !cpu.is_empty() {
        requests.insert("cpu".to_string(), Q(cpu.into()));
    }
    if !mem.is_empty() {
        requests.insert("memory".to_string(), Q(mem.into()));
    }
    Pod {
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            tolerations: Some(vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with<F: FnOnce(&mut PodSpec)>(mut p: Pod, f: F) -> Pod {
    f(p.spec.as_mut().expect("spec"));
    p
}

fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    }
}

fn affinity(reqs: Vec<NodeSelectorRequirement>) -> Option<Affinity> {
    Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(reqs),
                    match_fields: None,
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

#[test]
fn admission_table() {
    let one = Arc::new(pod("1500m", "512Mi"));
    type Case = (&'static str, Pod, Vec<Arc<Pod>>, Option<&'static str>);
    let cases: Vec<Case> = vec![
        ("fits", pod("500m", "100Mi"), vec![one.clone()], None),
        ("cpu", pod("600m", ""), vec![one.clone()], Some("OutOfcpu")),
        (
            "memory",
            pod("", "600Mi"),
            vec![one.clone()],
            Some("OutOfmemory"),
        ),
        (
            "pods",
            pod("", ""),
            vec![one.clone(), one.clone(), one.clone()],
            Some("OutOfpods"),
        ),
        (
            "selector ok",
            with(pod("", ""), |s| {
                s.node_selector = Some([("zone".to_string(), "a".to_string())].into())
            }),
            vec![],
            None,
        ),
        (
            "selector",
            with(pod("", ""), |s| {
                s.node_selector = Some([("zone".to_string(), "b".to_string())].into())
            }),
            vec![],
            Some("NodeAffinity"),
        ),
        (
            "affinity in",
            with(pod("", ""), |s| {
                s.affinity = affinity(vec![req("zone", "In", &["a", "b"])])
            }),
            vec![],
            None,
        ),
        (
            "affinity gt",
            with(pod("", ""), |s| {
                s.affinity = affinity(vec![req("rank", "Gt", &["7"])])
            }),
            vec![],
            Some("NodeAffinity"),
        ),
        (
            "affinity notin",
            with(pod("", ""), |s| {
                s.affinity = affinity(vec![req("zone", "NotIn", &["a"])])
            }),
            vec![],
            Some("NodeAffinity"),
        ),
        (
            "untolerated",
            with(pod("", ""), |s| s.tolerations = None),
            vec![],
            Some("Taint"),
        ),
    ];
    for (name, p, others, want) in cases {
        let got = admit(&p, &node(), &others).err().map(|r| r.reason);
        assert_eq!(got.as_deref(), want, "{name}");
    }
}

#[test]
fn init_containers_count_at_their_peak() {
    let p = with(pod("100m", ""), |s| {
        s.init_containers = Some(vec![Container {
            name: "i".into(),
            resources: Some(ResourceRequirements {
                requests: Some([("cpu".to_string(), Q("1".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        }]);
    });
    assert_eq!(pod_request(&p, "cpu"), 1000);
}

#[test]
fn pressure_admission() {
    use k8s_openapi::api::core::v1::NodeCondition;
    use serde_json::json;
    let under = |kinds: &[&str]| Node {
        status: Some(NodeStatus {
            conditions: Some(
                ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
                    .iter()
                    .map(|k| NodeCondition {
                        type_: k.to_string(),
                        status: if kinds.contains(k) || *k == "Ready" {
                            "True"
                        } else {
                            "False"
                        }
                        .into(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    let pod = |extra: serde_json::Value| -> Pod {
        let mut p = json!({
            "metadata": {"name": "p", "uid": "u"},
            "spec": {"containers": [{"name": "c"}]},
        });
        if let Some(spec) = extra.get("spec").and_then(|s| s.as_object()) {
            p["spec"].as_object_mut().unwrap().extend(spec.clone());
        }
        if let Some(meta) = extra.get("metadata").and_then(|s| s.as_object()) {
            p["metadata"].as_object_mut().unwrap().extend(meta.clone());
        }
        serde_json::from_value(p).unwrap()
    };
    let best_effort = pod(json!({}));
    let burstable = pod(json!({"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"memory": "10Mi"}}}
    ]}}));
    let tolerating = pod(json!({"spec": {"tolerations": [
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}
    ]}}));
    let critical = pod(json!({"spec": {"priority": 2_000_001_000}}));
    let static_pod =
        pod(json!({"metadata": {"annotations": {"kubernetes.io/config.source": "file"}}}));
    let memory = "The node had condition: [MemoryPressure]. ";
    let cases: Vec<(&str, &Pod, &[&str], Option<&str>)> = vec![
        ("no pressure", &best_effort, &[], None),
        (
            "memory: best effort refused",
            &best_effort,
            &["MemoryPressure"],
            Some(memory),
        ),
        (
            "memory: burstable admitted",
            &burstable,
            &["MemoryPressure"],
            None,
        ),
        (
            "memory: tolerating best effort",
            &tolerating,
            &["MemoryPressure"],
            None,
        ),
        ("memory: critical", &critical, &["MemoryPressure"], None),
        (
            "disk: everyone",
            &burstable,
            &["DiskPressure"],
            Some("The node had condition: [DiskPressure]. "),
        ),
        (
            "memory and disk: even the tolerating one",
            &tolerating,
            &["MemoryPressure", "DiskPressure"],
            Some("The node had condition: [MemoryPressure DiskPressure]. "),
        ),
        (
            "pid",
            &burstable,
            &["PIDPressure"],
            Some("The node had condition: [PIDPressure]. "),
        ),
        ("disk: static pod", &static_pod, &["DiskPressure"], None),
    ];
    for (name, p, kinds, want) in cases {
        let got = admit_under_pressure(p, &under(kinds));
        match want {
            None => assert_eq!(got, Ok(()), "{name}"),
            Some(message) => {
                let r = got.expect_err(name);
                assert_eq!(
                    (r.reason.as_str(), r.message.as_str()),
                    ("Evicted", message),
                    "{name}"
                );
            }
        }
    }
    // admit() asks the eviction manager first.
    let r = admit(&best_effort, &under(&["MemoryPressure"]), &[]).unwrap_err();
    assert_eq!(r.reason, "Evicted");
}
