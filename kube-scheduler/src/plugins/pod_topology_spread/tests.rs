use super::*;
use crate::apis::config::args::PodTopologySpreadConstraintsDefaulting as Defaulting;
use crate::framework::testing::{node, node_info, pod, pod_info, test_context};
use crate::framework::{Code, CycleState, NodeInfo, NodeScore, PodInfo, Snapshot, Status};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use std::collections::BTreeMap;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A pod with labels, placed on `node_name` (empty: pending).
fn labelled(name: &str, node_name: &str, l: &[(&str, &str)]) -> Pod {
    let mut p = pod(name, &[]);
    p.metadata.labels = Some(labels(l));
    if let Some(s) = p.spec.as_mut()
        && !node_name.is_empty()
    {
        s.node_name = Some(node_name.into());
    }
    p
}

fn exists(key: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: key.into(),
            operator: "Exists".into(),
            values: None,
        }]),
        ..Default::default()
    }
}

fn constraint(
    max_skew: i32,
    key: &str,
    action: &str,
    selector: LabelSelector,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: action.into(),
        label_selector: Some(selector),
        ..Default::default()
    }
}

fn with_constraints(mut p: Pod, cs: Vec<TopologySpreadConstraint>) -> Pod {
    if let Some(s) = p.spec.as_mut() {
        s.topology_spread_constraints = Some(cs);
    }
    p
}

/// name, incoming pod, existing pods, per node: its code.
type FilterCase = (&'static str, Pod, Vec<Pod>, Vec<(&'static str, Code)>);
/// name, constraints, existing pods, feasible nodes, normalized scores.
type ScoreCase = (
    &'static str,
    Vec<TopologySpreadConstraint>,
    Vec<Pod>,
    &'static [&'static str],
    Vec<(&'static str, i64)>,
);

const ZONE: &str = "zone";
const HOST: &str = "kubernetes.io/hostname";

/// node-a, node-b in zone1; node-x, node-y in zone2; pods placed by their node_name.
fn cluster(pods: Vec<Pod>, extra_nodes: Vec<k8s_openapi::api::core::v1::Node>) -> Snapshot {
    let mut nodes = vec![
        node("node-a", &[], &[(ZONE, "zone1")]),
        node("node-b", &[], &[(ZONE, "zone1")]),
        node("node-x", &[], &[(ZONE, "zone2")]),
        node("node-y", &[], &[(ZONE, "zone2")]),
    ];
    nodes.extend(extra_nodes);
    let infos: Vec<NodeInfo> = nodes
        .into_iter()
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            let on: Vec<Pod> = pods
                .iter()
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&name))
                .cloned()
                .collect();
            node_info(n, on)
        })
        .collect();
    Snapshot::from_node_infos(infos)
}

fn plugin(defaulting: Defaulting) -> PodTopologySpread {
    PodTopologySpread::new(
        PodTopologySpreadArgs {
            defaulting_type: defaulting,
            ..Default::default()
        },
        &test_context(),
    )
}

fn filter_all(
    pl: &PodTopologySpread,
    p: &PodInfo,
    snap: &Snapshot,
) -> (Status, Vec<(String, Status)>) {
    let mut state = CycleState::new();
    let (_, s) = pl.run_pre_filter(&mut state, p, snap);
    let results = snap
        .node_info_list
        .iter()
        .map(|n| (n.node_name().to_string(), pl.filter(&state, p, n)))
        .collect();
    (s, results)
}

fn codes(results: &[(String, Status)]) -> Vec<(&str, Code)> {
    results.iter().map(|(n, s)| (n.as_str(), s.code)).collect()
}

#[tokio::test]
async fn filter_single_and_multiple_constraints() {
    use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU};
    let hard_zone = |skew| constraint(skew, ZONE, "DoNotSchedule", exists("foo"));
    let cases: Vec<FilterCase> = vec![
        (
            "no existing pods: every node fits",
            with_constraints(labelled("p", "", &[("foo", "")]), vec![hard_zone(1)]),
            vec![],
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        ),
        (
            "pods spread 3/1 over zones: only zone2 keeps skew <= 1",
            with_constraints(labelled("p", "", &[("foo", "")]), vec![hard_zone(1)]),
            vec![
                labelled("a1", "node-a", &[("foo", "")]),
                labelled("a2", "node-a", &[("foo", "")]),
                labelled("b1", "node-b", &[("foo", "")]),
                labelled("y1", "node-y", &[("foo", "")]),
            ],
            vec![("node-a", U), ("node-b", U), ("node-x", S), ("node-y", S)],
        ),
        (
            "3/1 with maxSkew 2: zone1 still too full",
            with_constraints(labelled("p", "", &[("foo", "")]), vec![hard_zone(2)]),
            vec![
                labelled("a1", "node-a", &[("foo", "")]),
                labelled("a2", "node-a", &[("foo", "")]),
                labelled("b1", "node-b", &[("foo", "")]),
                labelled("y1", "node-y", &[("foo", "")]),
            ],
            vec![("node-a", U), ("node-b", U), ("node-x", S), ("node-y", S)],
        ),
        (
            "incoming pod not matching its selector adds nothing: 2/1 fits everywhere",
            with_constraints(labelled("p", "", &[("bar", "")]), vec![hard_zone(1)]),
            vec![
                labelled("a1", "node-a", &[("foo", "")]),
                labelled("b1", "node-b", &[("foo", "")]),
                labelled("y1", "node-y", &[("foo", "")]),
            ],
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        ),
        (
            "terminating and other-namespace pods are not counted",
            with_constraints(labelled("p", "", &[("foo", "")]), vec![hard_zone(1)]),
            vec![
                {
                    let mut p = labelled("a1", "node-a", &[("foo", "")]);
                    p.metadata.deletion_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            jiff::Timestamp::UNIX_EPOCH,
                        ));
                    p
                },
                {
                    let mut p = labelled("a2", "node-a", &[("foo", "")]);
                    p.metadata.namespace = Some("other".into());
                    p
                },
            ],
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        ),
        (
            "two constraints: zone and hostname must both hold",
            with_constraints(
                labelled("p", "", &[("foo", "")]),
                vec![
                    hard_zone(1),
                    constraint(1, HOST, "DoNotSchedule", exists("foo")),
                ],
            ),
            vec![
                labelled("a1", "node-a", &[("foo", "")]),
                labelled("x1", "node-x", &[("foo", "")]),
                labelled("x2", "node-x", &[("foo", "")]),
                labelled("y1", "node-y", &[("foo", "")]),
            ],
            // zone1 has 1, zone2 has 3: zone2 fails; node-a has 1 vs min 0 on node-b.
            vec![("node-a", U), ("node-b", S), ("node-x", U), ("node-y", U)],
        ),
    ];
    let pl = plugin(Defaulting::List);
    for (name, p, existing, want) in cases {
        let snap = cluster(existing, vec![]);
        let p = pod_info(p);
        let (pre, results) = filter_all(&pl, &p, &snap);
        assert!(pre.is_success(), "{name}: prefilter {pre:?}");
        assert_eq!(codes(&results), want, "{name}");
    }
    // A node without the topology key can never satisfy the constraint.
    let snap = cluster(vec![], vec![node("node-z", &[], &[])]);
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![hard_zone(1)],
    ));
    let (_, results) = filter_all(&pl, &p, &snap);
    let (_, s) = results
        .iter()
        .find(|(n, _)| n == "node-z")
        .expect("node-z filtered");
    assert_eq!(s.code, UU);
    assert_eq!(s.reasons, vec![ERR_REASON_NODE_LABEL_NOT_MATCH.to_string()]);
    let (_, s) = &results[0];
    assert!(s.is_success());
}

#[tokio::test]
async fn filter_reason_min_domains_and_match_label_keys() {
    let pl = plugin(Defaulting::List);
    let pods = vec![
        labelled("a1", "node-a", &[("foo", ""), ("rev", "1")]),
        labelled("x1", "node-x", &[("foo", ""), ("rev", "1")]),
    ];
    // Two domains with one pod each: fits with maxSkew 1 ...
    let mut c = constraint(1, ZONE, "DoNotSchedule", exists("foo"));
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![c.clone()],
    ));
    let (_, results) = filter_all(&pl, &p, &cluster(pods.clone(), vec![]));
    assert!(results.iter().all(|(_, s)| s.is_success()));
    // ... but with minDomains 3 the global minimum is 0, so 1 + 1 - 0 > 1 everywhere.
    c.min_domains = Some(3);
    let p = pod_info(with_constraints(labelled("p", "", &[("foo", "")]), vec![c]));
    let (_, results) = filter_all(&pl, &p, &cluster(pods.clone(), vec![]));
    for (_, s) in &results {
        assert_eq!(s.code, Code::Unschedulable);
        assert_eq!(
            s.reasons,
            vec![ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string()]
        );
    }
    // matchLabelKeys: only pods of the same revision count; rev=2 has none anywhere.
    let mut c = constraint(0, ZONE, "DoNotSchedule", exists("foo"));
    c.max_skew = 1;
    c.match_label_keys = Some(vec!["rev".into()]);
    let extra = vec![
        pods[0].clone(),
        labelled("a2", "node-a", &[("foo", ""), ("rev", "2")]),
        labelled("b2", "node-b", &[("foo", ""), ("rev", "2")]),
    ];
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", ""), ("rev", "2")]),
        vec![c.clone()],
    ));
    let (_, results) = filter_all(&pl, &p, &cluster(extra.clone(), vec![]));
    // rev=2: zone1 has 2, zone2 has 0 -> only zone2 fits.
    assert_eq!(
        codes(&results),
        vec![
            ("node-a", Code::Unschedulable),
            ("node-b", Code::Unschedulable),
            ("node-x", Code::Success),
            ("node-y", Code::Success)
        ]
    );
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", ""), ("rev", "1")]),
        vec![c],
    ));
    // rev=1: zone1 has 1, zone2 has 0 -> zone1 at 1+1-0 fails, zone2 fits.
    let (_, results) = filter_all(&pl, &p, &cluster(extra, vec![]));
    assert_eq!(results[0].1.code, Code::Unschedulable);
    assert!(results[2].1.is_success());
}

#[tokio::test]
async fn node_inclusion_policies() {
    let pl = plugin(Defaulting::List);
    // zone1 holds 2 matching pods, zone2 none; the pod may only go to zone1 (nodeSelector).
    let pods = vec![
        labelled("a1", "node-a", &[("foo", "")]),
        labelled("b1", "node-b", &[("foo", "")]),
    ];
    let mut p = with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![constraint(1, ZONE, "DoNotSchedule", exists("foo"))],
    );
    if let Some(s) = p.spec.as_mut() {
        s.node_selector = Some(labels(&[(ZONE, "zone1")]));
    }
    // Honor (default): zone2 is not a domain, so zone1 is the minimum and node-a fits.
    let (_, results) = filter_all(&pl, &pod_info(p.clone()), &cluster(pods.clone(), vec![]));
    assert!(results[0].1.is_success(), "{results:?}");
    // Ignore: zone2 counts with 0, so zone1 is too full.
    if let Some(c) = p
        .spec
        .as_mut()
        .and_then(|s| s.topology_spread_constraints.as_mut())
    {
        c[0].node_affinity_policy = Some("Ignore".into());
    }
    let (_, results) = filter_all(&pl, &pod_info(p), &cluster(pods.clone(), vec![]));
    assert_eq!(results[0].1.code, Code::Unschedulable);

    // Taints: node-x and node-y are tainted; under Honor zone2 is not a domain.
    let tainted = |mut n: k8s_openapi::api::core::v1::Node| {
        n.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
            taints: Some(vec![k8s_openapi::api::core::v1::Taint {
                key: "dedicated".into(),
                value: Some("x".into()),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        n
    };
    let infos = vec![
        node_info(node("node-a", &[], &[(ZONE, "zone1")]), pods.clone()),
        node_info(tainted(node("node-x", &[], &[(ZONE, "zone2")])), vec![]),
    ];
    let snap = Snapshot::from_node_infos(infos);
    let mut c = constraint(1, ZONE, "DoNotSchedule", exists("foo"));
    c.node_taints_policy = Some("Honor".into());
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![c.clone()],
    ));
    let (_, results) = filter_all(&pl, &p, &snap);
    assert!(results[0].1.is_success(), "{results:?}");
    c.node_taints_policy = Some("Ignore".into());
    let p = pod_info(with_constraints(labelled("p", "", &[("foo", "")]), vec![c]));
    let (_, results) = filter_all(&pl, &p, &snap);
    assert_eq!(results[0].1.code, Code::Unschedulable);
}

#[tokio::test]
async fn prefilter_skip_missing_state_and_extensions() {
    let pl = plugin(Defaulting::List);
    let snap = cluster(vec![], vec![]);
    let plain = pod_info(labelled("p", "", &[("foo", "")]));
    let mut state = CycleState::new();
    let (_, s) = pl.run_pre_filter(&mut state, &plain, &snap);
    assert!(s.is_skip());
    let s = pl.filter(&state, &plain, &snap.node_info_list[0]);
    assert_eq!(s.code, Code::Error);
    assert_eq!(
        s.message(),
        "reading \"PreFilterPodTopologySpread\" from cycleState: not found"
    );

    // Preemption's simulation: adding a matching pod to zone1 twice makes zone1 too full,
    // removing them again restores the fit.
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![constraint(1, ZONE, "DoNotSchedule", exists("foo"))],
    ));
    let mut state = CycleState::new();
    let (_, s) = pl.run_pre_filter(&mut state, &p, &snap);
    assert!(s.is_success());
    let node_a = snap.node_info_list[0].clone();
    let added = pod_info(labelled("v", "node-a", &[("foo", "")]));
    assert!(pl.add_pod(&mut state, &p, &added, &node_a).is_success());
    assert!(pl.filter(&state, &p, &node_a).code == Code::Unschedulable);
    assert!(pl.remove_pod(&mut state, &p, &added, &node_a).is_success());
    assert!(pl.filter(&state, &p, &node_a).is_success());
    // A pod of another namespace changes nothing.
    let mut other = labelled("o", "node-a", &[("foo", "")]);
    other.metadata.namespace = Some("other".into());
    assert!(
        pl.add_pod(&mut state, &p, &pod_info(other), &node_a)
            .is_success()
    );
    assert!(pl.filter(&state, &p, &node_a).is_success());
}

fn score_all(
    pl: &PodTopologySpread,
    p: &PodInfo,
    snap: &Snapshot,
    feasible: &[&str],
) -> (Status, Vec<(String, i64)>) {
    let nodes: Vec<Arc<NodeInfo>> = snap
        .node_info_list
        .iter()
        .filter(|n| feasible.contains(&n.node_name()))
        .cloned()
        .collect();
    let mut state = CycleState::new();
    let s = pl.pre_score(&mut state, p, &nodes, snap);
    if !s.is_success() {
        return (s, vec![]);
    }
    let mut scores: Vec<NodeScore> = nodes
        .iter()
        .map(|n| {
            let (score, st) = pl.score(&state, p, n);
            assert!(st.is_success());
            NodeScore {
                name: n.name.clone(),
                score,
            }
        })
        .collect();
    assert!(pl.normalize_score(&state, p, &mut scores).is_success());
    (
        s,
        scores
            .into_iter()
            .map(|n| (n.name.to_string(), n.score))
            .collect(),
    )
}

fn owned(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

#[tokio::test]
async fn score_table() {
    let soft_host = constraint(1, HOST, "ScheduleAnyway", exists("foo"));
    let soft_zone = constraint(1, ZONE, "ScheduleAnyway", exists("foo"));
    const ALL: &[&str] = &["node-a", "node-b", "node-x", "node-y"];
    let all = ALL;
    let four_pods = vec![
        labelled("a1", "node-a", &[("foo", "")]),
        labelled("a2", "node-a", &[("foo", "")]),
        labelled("b1", "node-b", &[("foo", "")]),
        labelled("x1", "node-x", &[("foo", "")]),
    ];
    let cases: Vec<ScoreCase> = vec![
        (
            "hostname, no pods: all equal",
            vec![soft_host.clone()],
            vec![],
            all,
            vec![
                ("node-a", 100),
                ("node-b", 100),
                ("node-x", 100),
                ("node-y", 100),
            ],
        ),
        (
            // weight ln(6)=1.79; raw a=round(3.58)=4, b=2, x=2, y=0; 100*(4+0-s)/4.
            "hostname, 2/1/1/0 pods",
            vec![soft_host.clone()],
            four_pods.clone(),
            all,
            vec![
                ("node-a", 0),
                ("node-b", 50),
                ("node-x", 50),
                ("node-y", 100),
            ],
        ),
        (
            // weight ln(4)=1.386; zone1 3 pods -> 4.16 -> 4, zone2 1 -> 1.39 -> 1; 100*(5-s)/4.
            "zone, 3/1 pods",
            vec![soft_zone.clone()],
            four_pods.clone(),
            all,
            vec![
                ("node-a", 25),
                ("node-b", 25),
                ("node-x", 100),
                ("node-y", 100),
            ],
        ),
        (
            // zone counts still include pods on infeasible nodes; hostname weight ln(2+2).
            "zone and hostname, only node-b and node-x feasible",
            vec![soft_zone.clone(), soft_host.clone()],
            four_pods.clone(),
            &["node-b", "node-x"],
            // zone w=ln(4)=1.386: zone1 3 -> 4.159, zone2 1 -> 1.386; host w=ln(4): b 1, x 1.
            // b = round(4.159+1.386)=6, x = round(1.386+1.386)=3; 100*(6+3-s)/6.
            vec![("node-b", 50), ("node-x", 100)],
        ),
    ];
    let pl = plugin(Defaulting::List);
    for (name, cs, pods, feasible, want) in cases {
        let snap = cluster(pods, vec![]);
        let p = pod_info(with_constraints(labelled("p", "", &[("foo", "")]), cs));
        let (s, got) = score_all(&pl, &p, &snap, feasible);
        assert!(s.is_success(), "{name}: {s:?}");
        assert_eq!(got, owned(&want), "{name}");
    }

    // Nodes lacking a key are ignored and get 0.
    let snap = cluster(four_pods.clone(), vec![node("node-z", &[], &[])]);
    let p = pod_info(with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![soft_zone],
    ));
    let (_, got) = score_all(&pl, &p, &snap, &["node-a", "node-x", "node-z"]);
    assert_eq!(
        got,
        owned(&[("node-a", 25), ("node-x", 100), ("node-z", 0)])
    );

    // No soft constraints: Skip.
    let p = pod_info(labelled("p", "", &[("foo", "")]));
    let (s, _) = score_all(&pl, &p, &snap, all);
    assert!(s.is_skip());
}

#[tokio::test]
async fn system_defaults_use_the_owners_selector() {
    use k8s_openapi::api::core::v1::ServiceSpec;
    let ctx = test_context();
    let svc = Service {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(labels(&[("app", "web")])),
            ..Default::default()
        }),
        ..Default::default()
    };
    ctx.informers
        .informer::<Service>()
        .indexer()
        .insert(Arc::new(svc));
    let pl = PodTopologySpread::new(PodTopologySpreadArgs::default(), &ctx);
    let pods = vec![
        labelled("a1", "node-a", &[("app", "web")]),
        labelled("a2", "node-a", &[("app", "web")]),
        labelled("b1", "node-b", &[("app", "other")]),
    ];
    let snap = cluster(pods, vec![node("node-z", &[], &[])]);
    // A pod of the Service: spread softly by hostname (and zone where nodes have one).
    let p = pod_info(labelled("p", "", &[("app", "web")]));
    let mut state = CycleState::new();
    let (_, s) = pl.run_pre_filter(&mut state, &p, &snap);
    assert!(s.is_skip(), "system defaults are ScheduleAnyway only");
    let (s, got) = score_all(&pl, &p, &snap, &["node-a", "node-b", "node-z"]);
    assert!(s.is_success());
    // node-z has no zone label but is not ignored under system defaulting.
    let score = |n: &str| got.iter().find(|(x, _)| x == n).map(|(_, s)| *s);
    assert!(score("node-a") < score("node-b"), "{got:?}");
    assert!(score("node-z").is_some_and(|s| s > 0), "{got:?}");
    // A pod no owner selects has no default constraints.
    let p = pod_info(labelled("q", "", &[("app", "batch")]));
    let (s, _) = score_all(&pl, &p, &snap, &["node-a"]);
    assert!(s.is_skip());
}

#[tokio::test]
async fn queueing_hints() {
    let pl = plugin(Defaulting::List);
    let target = with_constraints(
        labelled("p", "", &[("foo", "")]),
        vec![constraint(1, ZONE, "DoNotSchedule", exists("foo"))],
    );
    let bound = |l: &[(&str, &str)]| labelled("e", "node-a", l);
    let pod_cases: Vec<(&str, Option<Pod>, Option<Pod>, QueueingHint)> = vec![
        (
            "matching pod added",
            None,
            Some(bound(&[("foo", "")])),
            QueueingHint::Queue,
        ),
        (
            "unmatching pod added",
            None,
            Some(bound(&[("bar", "")])),
            QueueingHint::Skip,
        ),
        (
            "matching pod deleted",
            Some(bound(&[("foo", "")])),
            None,
            QueueingHint::Queue,
        ),
        (
            "label change flips the match",
            Some(bound(&[("bar", "")])),
            Some(bound(&[("foo", "")])),
            QueueingHint::Queue,
        ),
        (
            "label change keeps the match",
            Some(bound(&[("foo", ""), ("a", "1")])),
            Some(bound(&[("foo", ""), ("a", "2")])),
            QueueingHint::Skip,
        ),
        (
            "unbound pod of another uid",
            None,
            Some(labelled("e", "", &[("foo", "")])),
            QueueingHint::Skip,
        ),
    ];
    for (name, old, new, want) in pod_cases {
        assert_eq!(
            pl.hint_pod_change(&target, old.as_ref(), new.as_ref()),
            want,
            "{name}"
        );
    }
    let n = |l: &[(&str, &str)]| node("n", &[], l);
    let node_cases: Vec<(
        &str,
        Option<k8s_openapi::api::core::v1::Node>,
        Option<k8s_openapi::api::core::v1::Node>,
        QueueingHint,
    )> = vec![
        (
            "node with the key added",
            None,
            Some(n(&[(ZONE, "z")])),
            QueueingHint::Queue,
        ),
        (
            "node without the key added",
            None,
            Some(n(&[])),
            QueueingHint::Skip,
        ),
        (
            "key value changed",
            Some(n(&[(ZONE, "a")])),
            Some(n(&[(ZONE, "b")])),
            QueueingHint::Queue,
        ),
        (
            "unrelated label changed",
            Some(n(&[(ZONE, "a")])),
            Some(n(&[(ZONE, "a"), ("x", "y")])),
            QueueingHint::Skip,
        ),
        (
            "key gained",
            Some(n(&[])),
            Some(n(&[(ZONE, "a")])),
            QueueingHint::Queue,
        ),
        (
            "node with the key deleted",
            Some(n(&[(ZONE, "a")])),
            None,
            QueueingHint::Queue,
        ),
    ];
    for (name, old, new, want) in node_cases {
        assert_eq!(
            pl.hint_node_change(&target, old.as_ref(), new.as_ref()),
            want,
            "{name}"
        );
    }
    assert_eq!(pl.events_to_register().len(), 2);

    // The pod itself gaining a toleration matters only under nodeTaintsPolicy: Honor.
    let mut honor = constraint(1, ZONE, "DoNotSchedule", exists("foo"));
    honor.node_taints_policy = Some("Honor".into());
    let tolerating = |mut p: Pod| {
        if let Some(s) = p.spec.as_mut() {
            s.tolerations = Some(vec![k8s_openapi::api::core::v1::Toleration {
                operator: Some("Exists".into()),
                ..Default::default()
            }]);
        }
        p
    };
    let honoring = with_constraints(labelled("p", "", &[("foo", "")]), vec![honor]);
    let hint = pl.hint_pod_change(
        &honoring,
        Some(&honoring),
        Some(&tolerating(honoring.clone())),
    );
    assert_eq!(hint, QueueingHint::Queue);
    let hint = pl.hint_pod_change(&target, Some(&target), Some(&tolerating(target.clone())));
    assert_eq!(hint, QueueingHint::Skip);
}

/// `n` pods labelled `l` on `node_name`.
fn pods_on(node_name: &str, n: usize, l: &[(&str, &str)]) -> Vec<Pod> {
    (0..n)
        .map(|i| labelled(&format!("{node_name}-{i}"), node_name, l))
        .collect()
}

fn snapshot_of(nodes: Vec<k8s_openapi::api::core::v1::Node>, pods: &[Pod]) -> Snapshot {
    Snapshot::from_node_infos(
        nodes
            .into_iter()
            .map(|n| {
                let name = n.metadata.name.clone().unwrap_or_default();
                let on = pods
                    .iter()
                    .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&name))
                    .cloned()
                    .collect();
                node_info(n, on)
            })
            .collect(),
    )
}

/// name, pod's constraints, pods per node (name, count, labels), zoned nodes, feasible nodes,
/// upstream's expected scores.
type UpstreamCase = (
    &'static str,
    Vec<TopologySpreadConstraint>,
    Vec<(&'static str, usize, &'static [(&'static str, &'static str)])>,
    bool,
    &'static [&'static str],
    Vec<(&'static str, i64)>,
);

/// Cases and expected numbers from upstream's scoring tests.
#[tokio::test]
async fn score_matches_upstream_cases() {
    const FOO: &[(&str, &str)] = &[("foo", "")];
    const BAR: &[(&str, &str)] = &[("bar", "")];
    const FOOBAR: &[(&str, &str)] = &[("foo", ""), ("bar", "")];
    const ABCD: &[&str] = &["node-a", "node-b", "node-c", "node-d"];
    let host = |skew| constraint(skew, HOST, "ScheduleAnyway", exists("foo"));
    let zone = constraint(1, ZONE, "ScheduleAnyway", exists("foo"));
    let cases: Vec<UpstreamCase> = vec![
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=2",
            vec![host(2)],
            vec![("node-a", 2, FOO), ("node-b", 1, FOO), ("node-d", 3, FOO)],
            false,
            ABCD,
            vec![
                ("node-a", 33),
                ("node-b", 66),
                ("node-c", 100),
                ("node-d", 16),
            ],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=3",
            vec![host(3)],
            vec![
                ("node-a", 4, FOO),
                ("node-b", 3, FOO),
                ("node-c", 2, FOO),
                ("node-d", 1, FOO),
            ],
            false,
            ABCD,
            vec![
                ("node-a", 44),
                ("node-b", 66),
                ("node-c", 77),
                ("node-d", 100),
            ],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates",
            vec![host(1)],
            vec![
                ("node-a", 4, FOO),
                ("node-b", 2, FOO),
                ("node-x", 1, FOO),
                ("node-y", 3, FOO),
            ],
            true,
            &["node-a", "node-b", "node-x"],
            vec![("node-a", 33), ("node-b", 83), ("node-x", 100)],
        ),
        (
            "one constraint on zone, 3 out of 4 nodes are candidates",
            vec![zone.clone()],
            vec![
                ("node-a", 4, FOO),
                ("node-b", 2, FOO),
                ("node-x", 1, FOO),
                ("node-y", 3, FOO),
            ],
            true,
            &["node-a", "node-b", "node-x"],
            vec![("node-a", 75), ("node-b", 75), ("node-x", 100)],
        ),
        (
            "two Constraints on zone and node, 2 out of 4 nodes are candidates",
            vec![zone.clone(), host(1)],
            vec![
                ("node-a", 2, FOO),
                ("node-b", 1, FOO),
                ("node-x", 2, FOO),
                ("node-y", 4, FOO),
            ],
            true,
            &["node-a", "node-x"],
            vec![("node-a", 100), ("node-x", 63)],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors",
            vec![
                zone.clone(),
                constraint(1, HOST, "ScheduleAnyway", exists("bar")),
            ],
            vec![
                ("node-a", 1, FOO),
                ("node-b", 1, FOOBAR),
                ("node-y", 1, FOO),
                ("node-y", 1, BAR),
            ],
            true,
            &["node-a", "node-b", "node-x", "node-y"],
            vec![
                ("node-a", 60),
                ("node-b", 20),
                ("node-x", 100),
                ("node-y", 60),
            ],
        ),
    ];
    let pl = plugin(Defaulting::List);
    for (name, cs, placement, zoned, feasible, want) in cases {
        let nodes = if zoned {
            vec![
                node("node-a", &[], &[(ZONE, "zone1")]),
                node("node-b", &[], &[(ZONE, "zone1")]),
                node("node-x", &[], &[(ZONE, "zone2")]),
                node("node-y", &[], &[(ZONE, "zone2")]),
            ]
        } else {
            ABCD.iter().map(|n| node(n, &[], &[])).collect()
        };
        // Distinct names when one node gets two groups.
        let pods: Vec<Pod> = placement
            .iter()
            .enumerate()
            .flat_map(|(g, (n, count, l))| {
                pods_on(n, *count, l).into_iter().map(move |mut p| {
                    p.metadata.name = p.metadata.name.map(|x| format!("{x}-{g}"));
                    p.metadata.uid = p.metadata.name.clone();
                    p
                })
            })
            .collect();
        let snap = snapshot_of(nodes, &pods);
        let p = pod_info(with_constraints(labelled("p", "", FOOBAR), cs));
        let (s, got) = score_all(&pl, &p, &snap, feasible);
        assert!(s.is_success(), "{name}: {s:?}");
        assert_eq!(got, owned(&want), "{name}");
    }
}

/// Upstream's "system defaulting, nodes don't have zone, pods match service": the same scores
/// as one hostname constraint with maxSkew 3.
#[tokio::test]
async fn system_defaulting_without_zones_matches_upstream() {
    use k8s_openapi::api::core::v1::ServiceSpec;
    let ctx = test_context();
    ctx.informers
        .informer::<Service>()
        .indexer()
        .insert(Arc::new(Service {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("svc".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                selector: Some(labels(&[("foo", "")])),
                ..Default::default()
            }),
            ..Default::default()
        }));
    let pl = PodTopologySpread::new(PodTopologySpreadArgs::default(), &ctx);
    let names = ["node-a", "node-b", "node-c", "node-d"];
    let pods: Vec<Pod> = names
        .iter()
        .zip([4, 3, 2, 1])
        .flat_map(|(n, c)| pods_on(n, c, &[("foo", "")]))
        .collect();
    let snap = snapshot_of(names.iter().map(|n| node(n, &[], &[])).collect(), &pods);
    let p = pod_info(labelled("p", "", &[("foo", "")]));
    let (s, got) = score_all(&pl, &p, &snap, &names);
    assert!(s.is_success(), "{s:?}");
    assert_eq!(
        got,
        owned(&[
            ("node-a", 44),
            ("node-b", 66),
            ("node-c", 77),
            ("node-d", 100)
        ])
    );
}
