use super::filtering::PRE_FILTER_STATE_KEY;
use super::*;
use crate::framework::testing::{node, node_info, pod, pod_info, test_context};
use crate::framework::{Code, CycleState, NodeInfo, NodeScore, Snapshot, Status};
use k8s_openapi::api::core::v1::{
    Affinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

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

fn term(key: &str, value: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some(labels(&[(key, value)])),
            ..Default::default()
        }),
        topology_key: topology_key.into(),
        ..Default::default()
    }
}

#[derive(Default)]
struct Terms {
    required: Vec<PodAffinityTerm>,
    required_anti: Vec<PodAffinityTerm>,
    preferred: Vec<(i32, PodAffinityTerm)>,
    preferred_anti: Vec<(i32, PodAffinityTerm)>,
}

fn with(mut p: Pod, t: Terms) -> Pod {
    let weighted = |v: Vec<(i32, PodAffinityTerm)>| {
        (!v.is_empty()).then(|| {
            v.into_iter()
                .map(|(weight, pod_affinity_term)| WeightedPodAffinityTerm {
                    weight,
                    pod_affinity_term,
                })
                .collect()
        })
    };
    let non_empty = |v: Vec<PodAffinityTerm>| (!v.is_empty()).then_some(v);
    if let Some(s) = p.spec.as_mut() {
        s.affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: non_empty(t.required),
                preferred_during_scheduling_ignored_during_execution: weighted(t.preferred),
            }),
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: non_empty(t.required_anti),
                preferred_during_scheduling_ignored_during_execution: weighted(t.preferred_anti),
            }),
            ..Default::default()
        });
    }
    p
}

/// name, incoming pod, existing pods, per node: code and message.
type FilterCase = (&'static str, Pod, Vec<Pod>, Vec<(Code, &'static str)>);
/// name, args, incoming pod, existing pods, normalized scores per node.
type ScoreCase = (&'static str, Option<Value>, Pod, Vec<Pod>, Vec<i64>);

const REGION: &str = "region";
const HOST: &str = "kubernetes.io/hostname";

/// node1 and node2 in region r1, node3 in r2; pods placed by their node_name.
fn cluster(pods: Vec<Pod>) -> Snapshot {
    let nodes = vec![
        node("node1", &[], &[(REGION, "r1")]),
        node("node2", &[], &[(REGION, "r1")]),
        node("node3", &[], &[(REGION, "r2")]),
        node("node4", &[], &[]),
    ];
    let infos: Vec<NodeInfo> = nodes
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
        .collect();
    Snapshot::from_node_infos(infos)
}

fn plugin(ctx: &PluginContext, args: Option<Value>) -> InterPodAffinity {
    let args: InterPodAffinityArgs = decode_args(args.as_ref()).expect("valid args");
    InterPodAffinity {
        args,
        ns_lister: ctx.informers.informer::<Namespace>().lister(),
        parallelizer: ctx.parallelizer.clone(),
    }
}

fn filter_all(pl: &InterPodAffinity, p: &Pod, snap: &Snapshot) -> (Status, Vec<Status>) {
    let p = pod_info(p.clone());
    let mut state = CycleState::new();
    let (_, s) = pl.pre_filter(&mut state, &p, snap);
    if s.is_skip() {
        return (s, vec![]);
    }
    let results = snap
        .node_info_list
        .iter()
        .map(|n| pl.filter(&state, &p, n))
        .collect();
    (s, results)
}

#[tokio::test]
async fn filter_table() {
    use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU};
    let ctx = test_context();
    let pl = plugin(&ctx, None);
    let s1 = |name: &str, on: &str| labelled(name, on, &[("security", "S1")]);
    let cases: Vec<FilterCase> = vec![
        (
            "affinity to a pod in region r1: r1 nodes fit, r2 and key-less nodes do not",
            with(
                labelled("p", "", &[]),
                Terms {
                    required: vec![term("security", "S1", REGION)],
                    ..Default::default()
                },
            ),
            vec![s1("e", "node1")],
            vec![
                (S, ""),
                (S, ""),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
            ],
        ),
        (
            "affinity with no matching pod anywhere, pod matching itself: nodes with the key fit",
            with(
                labelled("p", "", &[("security", "S1")]),
                Terms {
                    required: vec![term("security", "S1", REGION)],
                    ..Default::default()
                },
            ),
            vec![labelled("e", "node1", &[("security", "S2")])],
            vec![
                (S, ""),
                (S, ""),
                (S, ""),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
            ],
        ),
        (
            "affinity with no matching pod, pod not matching itself: nowhere",
            with(
                labelled("p", "", &[]),
                Terms {
                    required: vec![term("security", "S1", REGION)],
                    ..Default::default()
                },
            ),
            vec![],
            vec![
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
            ],
        ),
        (
            "anti-affinity by hostname: only the node with the pod is refused",
            with(
                labelled("p", "", &[]),
                Terms {
                    required_anti: vec![term("security", "S1", HOST)],
                    ..Default::default()
                },
            ),
            vec![s1("e", "node1")],
            vec![
                (U, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
                (S, ""),
                (S, ""),
                (S, ""),
            ],
        ),
        (
            "anti-affinity by region: the whole region is refused",
            with(
                labelled("p", "", &[]),
                Terms {
                    required_anti: vec![term("security", "S1", REGION)],
                    ..Default::default()
                },
            ),
            vec![s1("e", "node2")],
            vec![
                (U, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
                (U, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
                (S, ""),
                (S, ""),
            ],
        ),
        (
            "an existing pod's anti-affinity refuses its region to the incoming pod",
            labelled("p", "", &[("app", "web")]),
            vec![with(
                labelled("e", "node1", &[]),
                Terms {
                    required_anti: vec![term("app", "web", REGION)],
                    ..Default::default()
                },
            )],
            vec![
                (U, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH),
                (U, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH),
                (S, ""),
                (S, ""),
            ],
        ),
        (
            "pods in another namespace do not satisfy affinity",
            with(
                labelled("p", "", &[]),
                Terms {
                    required: vec![term("security", "S1", REGION)],
                    ..Default::default()
                },
            ),
            vec![{
                let mut e = s1("e", "node1");
                e.metadata.namespace = Some("other".into());
                e
            }],
            vec![
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
                (UU, ERR_REASON_AFFINITY_RULES_NOT_MATCH),
            ],
        ),
    ];
    for (name, p, existing, want) in cases {
        let (pre, results) = filter_all(&pl, &p, &cluster(existing));
        assert!(pre.is_success(), "{name}: {pre:?}");
        let got: Vec<(Code, String)> = results.iter().map(|s| (s.code, s.message())).collect();
        let want: Vec<(Code, String)> = want.into_iter().map(|(c, m)| (c, m.to_string())).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[tokio::test]
async fn namespace_selector_resolves_through_the_lister() {
    let ctx = test_context();
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("other".into()),
            labels: Some(labels(&[("team", "a")])),
            ..Default::default()
        },
        ..Default::default()
    };
    ctx.informers
        .informer::<Namespace>()
        .indexer()
        .insert(Arc::new(ns));
    let pl = plugin(&ctx, None);
    let mut t = term("security", "S1", REGION);
    t.namespace_selector = Some(LabelSelector {
        match_labels: Some(labels(&[("team", "a")])),
        ..Default::default()
    });
    let p = with(
        labelled("p", "", &[]),
        Terms {
            required: vec![t],
            ..Default::default()
        },
    );
    let mut e = labelled("e", "node3", &[("security", "S1")]);
    e.metadata.namespace = Some("other".into());
    let (_, results) = filter_all(&pl, &p, &cluster(vec![e]));
    let codes: Vec<Code> = results.iter().map(|s| s.code).collect();
    use Code::{Success as S, UnschedulableAndUnresolvable as UU};
    assert_eq!(codes, vec![UU, UU, S, UU]);
}

#[tokio::test]
async fn prefilter_skip_missing_state_and_extensions() {
    let ctx = test_context();
    let pl = plugin(&ctx, None);
    let snap = cluster(vec![labelled("e", "node1", &[("security", "S1")])]);
    let (pre, _) = filter_all(&pl, &labelled("p", "", &[]), &snap);
    assert!(pre.is_skip());
    let p = pod_info(labelled("p", "", &[]));
    let s = pl.filter(&CycleState::new(), &p, &snap.node_info_list[0]);
    assert_eq!(s.code, Code::Error);
    assert_eq!(
        s.message(),
        format!("reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found")
    );

    // Preemption removing the only matching pod leaves affinity unsatisfiable; adding it back
    // restores it.
    let p = pod_info(with(
        labelled("p", "", &[]),
        Terms {
            required: vec![term("security", "S1", REGION)],
            ..Default::default()
        },
    ));
    let mut state = CycleState::new();
    let (_, s) = pl.pre_filter(&mut state, &p, &snap);
    assert!(s.is_success());
    let node1 = snap.node_info_list[0].clone();
    let victim = node1.pods[0].clone();
    assert!(pl.filter(&state, &p, &node1).is_success());
    assert!(pl.remove_pod(&mut state, &p, &victim, &node1).is_success());
    assert_eq!(
        pl.filter(&state, &p, &node1).code,
        Code::UnschedulableAndUnresolvable
    );
    assert!(pl.add_pod(&mut state, &p, &victim, &node1).is_success());
    assert!(pl.filter(&state, &p, &node1).is_success());
}

fn score_all(pl: &InterPodAffinity, p: &Pod, snap: &Snapshot) -> (Status, Vec<i64>) {
    let p = pod_info(p.clone());
    let mut state = CycleState::new();
    let s = pl.pre_score(&mut state, &p, &snap.node_info_list, snap);
    if !s.is_success() {
        return (s, vec![]);
    }
    let mut scores: Vec<NodeScore> = snap
        .node_info_list
        .iter()
        .map(|n| NodeScore {
            name: n.name.clone(),
            score: pl.score(&state, &p, n).0,
        })
        .collect();
    assert!(pl.normalize_score(&state, &p, &mut scores).is_success());
    (s, scores.into_iter().map(|n| n.score).collect())
}

#[tokio::test]
async fn score_table() {
    let ctx = test_context();
    let s1 = |name: &str, on: &str| labelled(name, on, &[("security", "S1")]);
    let s2 = |name: &str, on: &str| labelled(name, on, &[("security", "S2")]);
    let cases: Vec<ScoreCase> = vec![
        (
            // raw: r1 nodes 5 (one S1 pod in r1), r2 0, no-region 0.
            "preferred affinity by region",
            None,
            with(
                labelled("p", "", &[]),
                Terms {
                    preferred: vec![(5, term("security", "S1", REGION))],
                    ..Default::default()
                },
            ),
            vec![s1("e", "node1"), s2("f", "node3")],
            vec![100, 100, 0, 0],
        ),
        (
            // raw: r1 +5 (S1) and -2 (S2 anti) = 3... r2: S2 -> -2; node4 0 => min -2, max 3.
            "affinity and anti-affinity weights combine",
            None,
            with(
                labelled("p", "", &[]),
                Terms {
                    preferred: vec![(5, term("security", "S1", REGION))],
                    preferred_anti: vec![(2, term("security", "S2", REGION))],
                    ..Default::default()
                },
            ),
            vec![s1("e", "node1"), s2("f", "node2"), s2("g", "node3")],
            // r1: 5-2=3 -> 100; r2: -2 -> 0; node4: 0 -> 100*2/5=40.
            vec![100, 100, 0, 40],
        ),
        (
            "an existing pod's required affinity to the incoming pod scores hardPodAffinityWeight",
            Some(serde_json::json!({"hardPodAffinityWeight": 3})),
            labelled("p", "", &[("app", "web")]),
            vec![with(
                labelled("e", "node3", &[]),
                Terms {
                    required: vec![term("app", "web", HOST)],
                    ..Default::default()
                },
            )],
            vec![0, 0, 100, 0],
        ),
        (
            "an existing pod's preferred anti-affinity against the incoming pod",
            None,
            labelled("p", "", &[("app", "web")]),
            vec![with(
                labelled("e", "node1", &[]),
                Terms {
                    preferred_anti: vec![(10, term("app", "web", REGION))],
                    ..Default::default()
                },
            )],
            vec![0, 0, 100, 100],
        ),
    ];
    for (name, args, p, existing, want) in cases {
        let pl = plugin(&ctx, args);
        let (s, got) = score_all(&pl, &p, &cluster(existing));
        assert!(s.is_success(), "{name}: {s:?}");
        assert_eq!(got, want, "{name}");
    }

    // Skips: nothing to score, hard weight 0, existing preferences ignored.
    let existing = vec![with(
        labelled("e", "node3", &[]),
        Terms {
            required: vec![term("app", "web", HOST)],
            ..Default::default()
        },
    )];
    let p = labelled("p", "", &[("app", "web")]);
    let pl = plugin(&ctx, Some(serde_json::json!({"hardPodAffinityWeight": 0})));
    assert!(score_all(&pl, &p, &cluster(existing.clone())).0.is_skip());
    let pl = plugin(
        &ctx,
        Some(serde_json::json!({"ignorePreferredTermsOfExistingPods": true})),
    );
    assert!(score_all(&pl, &p, &cluster(existing)).0.is_skip());
    assert!(
        score_all(&plugin(&ctx, None), &p, &cluster(vec![]))
            .0
            .is_skip()
    );
}

#[tokio::test]
async fn queueing_hints() {
    let target = with(
        labelled("p", "", &[]),
        Terms {
            required: vec![term("security", "S1", REGION)],
            required_anti: vec![term("app", "db", HOST)],
            ..Default::default()
        },
    );
    let bound = |l: &[(&str, &str)]| labelled("e", "node1", l);
    let h = InterPodAffinity::hint_pod_change;
    let q = QueueingHint::Queue;
    let skip = QueueingHint::Skip;
    assert_eq!(h(&target, None, Some(&bound(&[("security", "S1")]))), q);
    assert_eq!(h(&target, None, Some(&bound(&[("security", "S2")]))), skip);
    assert_eq!(
        h(
            &target,
            None,
            Some(&labelled("u", "", &[("security", "S1")]))
        ),
        skip
    );
    assert_eq!(h(&target, Some(&bound(&[("app", "db")])), None), q);
    assert_eq!(h(&target, Some(&bound(&[("app", "web")])), None), skip);
    assert_eq!(
        h(
            &target,
            Some(&bound(&[("app", "db")])),
            Some(&bound(&[("app", "web")]))
        ),
        q
    );
    assert_eq!(
        h(
            &target,
            Some(&bound(&[("x", "1")])),
            Some(&bound(&[("x", "2")]))
        ),
        skip
    );

    let n = |l: &[(&str, &str)]| node("n", &[], l);
    let hn = InterPodAffinity::hint_node_change;
    // Any new node may host a pod with anti-affinity.
    assert_eq!(hn(&target, None, Some(&n(&[]))), q);
    let only_affinity = with(
        labelled("p", "", &[]),
        Terms {
            required: vec![term("security", "S1", REGION)],
            ..Default::default()
        },
    );
    assert_eq!(hn(&only_affinity, None, Some(&n(&[(REGION, "r1")]))), q);
    assert_eq!(hn(&only_affinity, None, Some(&n(&[("other", "x")]))), skip);
    assert_eq!(
        hn(
            &only_affinity,
            Some(&n(&[(REGION, "r1")])),
            Some(&n(&[(REGION, "r1"), ("x", "y")]))
        ),
        skip
    );
    assert_eq!(
        hn(
            &only_affinity,
            Some(&n(&[(REGION, "r1")])),
            Some(&n(&[(REGION, "r2")]))
        ),
        q
    );
}

/// A term from match expressions `(key, operator, values)`.
fn expr_term(exprs: &[(&str, &str, &[&str])], topology_key: &str) -> PodAffinityTerm {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_expressions: Some(
                exprs
                    .iter()
                    .map(|(k, op, vs)| LabelSelectorRequirement {
                        key: k.to_string(),
                        operator: op.to_string(),
                        values: (!vs.is_empty())
                            .then(|| vs.iter().map(|v| v.to_string()).collect()),
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        topology_key: topology_key.into(),
        ..Default::default()
    }
}

/// name, incoming pod, existing pods (node, pod), nodes (name, labels), upstream's scores.
type UpstreamScoreCase = (
    &'static str,
    Pod,
    Vec<(&'static str, Pod)>,
    Vec<(&'static str, &'static [(&'static str, &'static str)])>,
    Vec<i64>,
);

/// Cases and expected numbers from upstream's TestPreferredAffinity.
#[tokio::test]
async fn score_matches_upstream_cases() {
    const CHINA: &[(&str, &str)] = &[("region", "China")];
    const INDIA: &[(&str, &str)] = &[("region", "India")];
    const AZ1: &[(&str, &str)] = &[("az", "az1")];
    const AZ2: &[(&str, &str)] = &[("az", "az2")];
    let s = |v: &str| labelled("x", "", &[("security", v)]);
    let stay_s1_region = || expr_term(&[("security", "In", &["S1"])], "region");
    let away_s2_az = || expr_term(&[("security", "In", &["S2"])], "az");
    let away_s1_az = || expr_term(&[("security", "In", &["S1"])], "az");
    let stay_s1_away_s2 = |p: Pod| {
        with(
            p,
            Terms {
                preferred: vec![(8, stay_s1_region())],
                preferred_anti: vec![(5, away_s2_az())],
                ..Default::default()
            },
        )
    };
    let hard = |p: Pod| {
        with(
            p,
            Terms {
                required: vec![
                    expr_term(&[("security", "In", &["S1", "value2"])], "region"),
                    expr_term(
                        &[
                            ("security", "Exists", &[]),
                            ("wrongkey", "DoesNotExist", &[]),
                        ],
                        "region",
                    ),
                ],
                ..Default::default()
            },
        )
    };
    let cases: Vec<UpstreamScoreCase> = vec![
        (
            "different label operators and values, including some match failures",
            with(
                s("S1"),
                Terms {
                    preferred: vec![
                        (
                            8,
                            expr_term(
                                &[("security", "NotIn", &["S1"]), ("security", "In", &["S2"])],
                                "region",
                            ),
                        ),
                        (
                            2,
                            expr_term(
                                &[
                                    ("security", "Exists", &[]),
                                    ("wrongkey", "DoesNotExist", &[]),
                                ],
                                "region",
                            ),
                        ),
                    ],
                    ..Default::default()
                },
            ),
            vec![("node1", s("S1")), ("node2", s("S2")), ("node3", s("S1"))],
            vec![("node1", CHINA), ("node2", INDIA), ("node3", AZ1)],
            vec![20, 100, 0],
        ),
        (
            "symmetry: existing pods' required affinity terms count",
            s("S1"),
            vec![("node1", hard(s("S1"))), ("node2", hard(s("S2")))],
            vec![("node1", CHINA), ("node2", INDIA), ("node3", AZ1)],
            vec![100, 100, 0],
        ),
        (
            "anti-affinity symmetry: the node whose pod hates the incoming pod scores low",
            s("S2"),
            vec![
                (
                    "node1",
                    with(
                        s("S1"),
                        Terms {
                            preferred_anti: vec![(5, away_s2_az())],
                            ..Default::default()
                        },
                    ),
                ),
                (
                    "node2",
                    with(
                        s("S2"),
                        Terms {
                            preferred_anti: vec![(5, away_s1_az())],
                            ..Default::default()
                        },
                    ),
                ),
            ],
            vec![("node1", AZ1), ("node2", AZ2)],
            vec![0, 100],
        ),
        (
            "affinity, anti-affinity and symmetry together",
            stay_s1_away_s2(s("S1")),
            vec![
                ("node1", s("S1")),
                ("node2", s("S2")),
                ("node3", stay_s1_away_s2(labelled("x", "", &[]))),
                (
                    "node4",
                    with(
                        labelled("x", "", &[]),
                        Terms {
                            preferred_anti: vec![(5, away_s1_az())],
                            ..Default::default()
                        },
                    ),
                ),
            ],
            vec![
                ("node1", CHINA),
                ("node2", AZ1),
                ("node3", INDIA),
                ("node4", AZ2),
            ],
            vec![100, 0, 100, 0],
        ),
        (
            "partial nodes in a topology without pods with affinity",
            s("S1"),
            vec![
                ("node1", s("S1")),
                ("node2", stay_s1_away_s2(labelled("x", "", &[]))),
            ],
            vec![("node1", CHINA), ("node2", CHINA)],
            vec![0, 0],
        ),
    ];
    let ctx = test_context();
    let pl = plugin(&ctx, None);
    for (name, incoming, existing, nodes, want) in cases {
        let infos: Vec<NodeInfo> = nodes
            .iter()
            .map(|(n, l)| {
                let on: Vec<Pod> = existing
                    .iter()
                    .enumerate()
                    .filter(|(_, (on, _))| on == n)
                    .map(|(i, (on, p))| {
                        let mut p = p.clone();
                        p.metadata.name = Some(format!("e{i}"));
                        p.metadata.uid = Some(format!("uid-e{i}"));
                        if let Some(s) = p.spec.as_mut() {
                            s.node_name = Some(on.to_string());
                        }
                        p
                    })
                    .collect();
                let mut node = node(n, &[], l);
                // Upstream's nodes carry only the listed labels.
                node.metadata.labels = Some(labels(l));
                node_info(node, on)
            })
            .collect();
        let (status, got) = score_all(&pl, &incoming, &Snapshot::from_node_infos(infos));
        assert!(status.is_success(), "{name}: {status:?}");
        assert_eq!(got, want, "{name}");
    }
}

#[tokio::test]
async fn args_are_validated() {
    let ctx = test_context();
    let err = new(
        Some(&serde_json::json!({"hardPodAffinityWeight": 101})),
        &ctx,
    )
    .err()
    .expect("101 is out of range");
    assert_eq!(
        err,
        "hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]"
    );
    assert!(new(None, &ctx).is_ok_and(|p| p.name() == NAME));
    assert!(new(Some(&serde_json::json!({"unknown": 1})), &ctx).is_err());
}
