//! Which nodes a DaemonSet's pod belongs on (upstream's `NodeShouldRunDaemonPod`), the
//! tolerations every daemon pod gets, and the node affinity that pins a pod to its node.

use crate::controller::utils::taints::tolerates;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, Toleration,
};
use std::collections::BTreeMap;

/// The field a `matchFields` requirement names a node by.
const NODE_NAME_FIELD: &str = "metadata.name";

/// Whether the daemon pod should be created on `node`, and whether one already there may keep
/// running (it may when only NoSchedule taints are untolerated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub should_run: bool,
    pub should_continue_running: bool,
}

impl Placement {
    const NO: Placement = Placement {
        should_run: false,
        should_continue_running: false,
    };
}

/// Upstream's `NodeShouldRunDaemonPod`: the template's node name, node selector and required
/// node affinity must fit the node, and the pod (with the daemon tolerations) must tolerate
/// the node's NoSchedule and NoExecute taints; a pod already running only needs NoExecute.
pub fn node_should_run(node: &Node, ds: &DaemonSet) -> Placement {
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let mut spec = template_spec(ds);
    if spec
        .node_name
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != node_name)
    {
        return Placement::NO;
    }
    spec.node_name = Some(node_name.to_string());
    add_daemon_tolerations(&mut spec);
    if !fits_node_affinity(&spec, node) {
        return Placement::NO;
    }
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    let untolerated = |effects: &[&str]| {
        taints
            .iter()
            .filter(|t| effects.contains(&t.effect.as_str()))
            .any(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
    };
    if untolerated(&["NoSchedule", "NoExecute"]) {
        return Placement {
            should_run: false,
            should_continue_running: !untolerated(&["NoExecute"]),
        };
    }
    Placement {
        should_run: true,
        should_continue_running: true,
    }
}

fn template_spec(ds: &DaemonSet) -> PodSpec {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .unwrap_or_default()
}

fn toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some(effect.to_string()),
        ..Default::default()
    }
}

/// Upstream's `AddOrUpdateDaemonPodTolerations`: daemons keep running through node
/// conditions that would evict or repel ordinary pods.
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut wanted = vec![
        toleration("node.kubernetes.io/not-ready", "NoExecute"),
        toleration("node.kubernetes.io/unreachable", "NoExecute"),
        toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        wanted.push(toleration(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
    }
    for t in wanted {
        add_or_update_toleration(spec, t);
    }
}

/// Upstream's `AddOrUpdateTolerationInPodSpec`: a toleration with the same key, operator,
/// value and effect is replaced (dropping e.g. its `tolerationSeconds`), otherwise appended.
fn add_or_update_toleration(spec: &mut PodSpec, wanted: Toleration) {
    let list = spec.tolerations.get_or_insert_with(Vec::new);
    let same = |t: &Toleration| {
        t.key == wanted.key
            && t.operator == wanted.operator
            && t.value.as_deref().unwrap_or("") == wanted.value.as_deref().unwrap_or("")
            && t.effect == wanted.effect
    };
    match list.iter_mut().find(|t| same(t)) {
        Some(existing) => *existing = wanted,
        None => list.push(wanted),
    }
}

/// Upstream's `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity becomes
/// exactly "the node named `node`", so the scheduler binds the pod there.
pub fn pin_to_node(affinity: Option<Affinity>, node: &str) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: NODE_NAME_FIELD.to_string(),
                operator: "In".to_string(),
                values: Some(vec![node.to_string()]),
            }]),
            match_expressions: None,
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// The node a daemon pod belongs to: its `nodeName`, or, while unscheduled, the node its
/// required affinity pins it to (upstream's `GetTargetNodeName`).
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(name.to_string());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|r| r.key == NODE_NAME_FIELD && r.operator == "In")
        .and_then(|r| match r.values.as_deref() {
            Some([one]) => Some(one.clone()),
            _ => None,
        })
}

/// The pod's `nodeSelector` and required node affinity against the node (upstream's
/// `RequiredNodeAffinity.Match`).
fn fits_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let selector_fits = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    if !selector_fits {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        None => true,
        Some(sel) => {
            let name = node.metadata.name.as_deref().unwrap_or("");
            sel.node_selector_terms
                .iter()
                .any(|t| term_matches(t, labels, name))
        }
    }
}

/// Terms are ORed, the requirements of one term ANDed; a term with no requirement matches
/// nothing.
fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            r.key == NODE_NAME_FIELD
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement_matches(r, Some(name))
        })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(v), [bound]) = (value, values) else {
                return false;
            };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) if op == "Gt" => v > b,
                (Ok(v), Ok(b)) => v < b,
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DaemonSetSpec;
    use k8s_openapi::api::core::v1::{NodeSpec, PodTemplateSpec, Taint};
    use kube::api::ObjectMeta;

    fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(
                    taints
                        .iter()
                        .map(|(k, e)| Taint {
                            key: k.to_string(),
                            effect: e.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn ds(spec: PodSpec) -> DaemonSet {
        DaemonSet {
            spec: Some(DaemonSetSpec {
                template: PodTemplateSpec {
                    metadata: None,
                    spec: Some(spec),
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn affinity(exprs: Vec<NodeSelectorRequirement>) -> Option<Affinity> {
        Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(exprs),
                        match_fields: None,
                    }],
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn placement() {
        let yes = (true, true);
        let no = (false, false);
        let selector = |k: &str, v: &str| PodSpec {
            node_selector: Some([(k.to_string(), v.to_string())].into()),
            ..Default::default()
        };
        let tolerating = |key: &str| PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some(key.into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let cases: Vec<(&str, Node, PodSpec, (bool, bool))> = vec![
            ("plain", node("a", &[], &[]), PodSpec::default(), yes),
            (
                "selector match",
                node("a", &[("disk", "ssd")], &[]),
                selector("disk", "ssd"),
                yes,
            ),
            (
                "selector mismatch",
                node("a", &[("disk", "hdd")], &[]),
                selector("disk", "ssd"),
                no,
            ),
            (
                "other node name",
                node("a", &[], &[]),
                PodSpec {
                    node_name: Some("b".into()),
                    ..Default::default()
                },
                no,
            ),
            (
                "NoSchedule untolerated: keep running only",
                node("a", &[], &[("dedicated", "NoSchedule")]),
                PodSpec::default(),
                (false, true),
            ),
            (
                "NoExecute untolerated",
                node("a", &[], &[("dedicated", "NoExecute")]),
                PodSpec::default(),
                no,
            ),
            (
                "tolerated",
                node("a", &[], &[("dedicated", "NoExecute")]),
                tolerating("dedicated"),
                yes,
            ),
            (
                "PreferNoSchedule ignored",
                node("a", &[], &[("x", "PreferNoSchedule")]),
                PodSpec::default(),
                yes,
            ),
            (
                "default toleration: unschedulable",
                node(
                    "a",
                    &[],
                    &[("node.kubernetes.io/unschedulable", "NoSchedule")],
                ),
                PodSpec::default(),
                yes,
            ),
            (
                "default toleration: not-ready",
                node("a", &[], &[("node.kubernetes.io/not-ready", "NoExecute")]),
                PodSpec::default(),
                yes,
            ),
            (
                "network-unavailable without hostNetwork",
                node(
                    "a",
                    &[],
                    &[("node.kubernetes.io/network-unavailable", "NoSchedule")],
                ),
                PodSpec::default(),
                (false, true),
            ),
            (
                "network-unavailable with hostNetwork",
                node(
                    "a",
                    &[],
                    &[("node.kubernetes.io/network-unavailable", "NoSchedule")],
                ),
                PodSpec {
                    host_network: Some(true),
                    ..Default::default()
                },
                yes,
            ),
            (
                "affinity In",
                node("a", &[("zone", "z1")], &[]),
                PodSpec {
                    affinity: affinity(vec![req("zone", "In", &["z1", "z2"])]),
                    ..Default::default()
                },
                yes,
            ),
            (
                "affinity NotIn",
                node("a", &[("zone", "z1")], &[]),
                PodSpec {
                    affinity: affinity(vec![req("zone", "NotIn", &["z1"])]),
                    ..Default::default()
                },
                no,
            ),
            (
                "affinity Gt",
                node("a", &[("cores", "8")], &[]),
                PodSpec {
                    affinity: affinity(vec![req("cores", "Gt", &["4"])]),
                    ..Default::default()
                },
                yes,
            ),
            (
                "affinity DoesNotExist",
                node("a", &[("gpu", "1")], &[]),
                PodSpec {
                    affinity: affinity(vec![req("gpu", "DoesNotExist", &[])]),
                    ..Default::default()
                },
                no,
            ),
        ];
        for (what, n, spec, (run, cont)) in cases {
            let got = node_should_run(&n, &ds(spec));
            assert_eq!(
                (got.should_run, got.should_continue_running),
                (run, cont),
                "{what}"
            );
        }
    }

    #[test]
    fn daemon_tolerations_replace_same_and_append_new() {
        let mut spec = PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("node.kubernetes.io/not-ready".into()),
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                toleration_seconds: Some(300),
                ..Default::default()
            }]),
            ..Default::default()
        };
        add_daemon_tolerations(&mut spec);
        let list = spec.tolerations.unwrap_or_default();
        assert_eq!(list.len(), 6);
        assert_eq!(list[0].toleration_seconds, None);
        add_daemon_tolerations(&mut PodSpec {
            host_network: Some(true),
            ..Default::default()
        });
        let mut host = PodSpec {
            host_network: Some(true),
            ..Default::default()
        };
        add_daemon_tolerations(&mut host);
        assert_eq!(host.tolerations.map(|t| t.len()), Some(7));
    }

    #[test]
    fn pinning_replaces_required_terms_and_is_read_back() {
        let pinned = pin_to_node(affinity(vec![req("zone", "In", &["z1"])]), "n1");
        let pod = Pod {
            spec: Some(PodSpec {
                affinity: Some(pinned.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(target_node(&pod).as_deref(), Some("n1"));
        let terms = pinned
            .node_affinity
            .and_then(|n| n.required_during_scheduling_ignored_during_execution)
            .map(|s| s.node_selector_terms)
            .unwrap_or_default();
        assert_eq!(terms.len(), 1);
        assert!(terms[0].match_expressions.is_none());
        let bound = Pod {
            spec: Some(PodSpec {
                node_name: Some("n2".into()),
                affinity: pod.spec.and_then(|s| s.affinity),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(target_node(&bound).as_deref(), Some("n2"));
        assert_eq!(target_node(&Pod::default()), None);
    }
}
