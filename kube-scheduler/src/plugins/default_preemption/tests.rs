//! The simulation against a framework of small test plugins: a resource fit over
//! `NodeInfo.requested`, and a PreFilter-stateful "conflict" check that only passes once the
//! conflicting pods are removed through the PreFilter extensions.

use super::candidates::{Candidate, no_candidate_message, num_candidates, pick_one};
use super::pdb::{Budget, split_by_violation};
use super::victims::{NO_VICTIMS_REASON, Victims, select_victims_on_node};
use super::*;
use crate::apis::config::{ExtensionPoint, ResolvedProfile};
use crate::framework::testing::{NoopBinder, node, node_info, pod, pod_info, test_context};
use crate::framework::{
    FilterPlugin, NodeInfo, PreFilterExtensions, PreFilterPlugin, PreFilterResult, QueueSortPlugin,
    QueuedPodInfo, Registry,
};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::api::policy::v1::{PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use std::collections::{BTreeMap, HashMap};

struct Sort;
impl Plugin for Sort {
    fn name(&self) -> &'static str {
        "TestSort"
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}
impl QueueSortPlugin for Sort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        a.pod_info.priority() > b.pod_info.priority()
    }
}

/// CPU and memory fit, with upstream's reasons.
struct Fit;
impl Plugin for Fit {
    fn name(&self) -> &'static str {
        "TestFit"
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}
impl FilterPlugin for Fit {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let mut reasons = Vec::new();
        if node.requested.milli_cpu + pod.requests.milli_cpu > node.allocatable.milli_cpu {
            reasons.push("Insufficient cpu".to_string());
        }
        if node.requested.memory + pod.requests.memory > node.allocatable.memory {
            reasons.push("Insufficient memory".to_string());
        }
        if reasons.is_empty() {
            Status::success()
        } else {
            Status::with_reasons(Code::Unschedulable, reasons)
        }
    }
}

/// Counts, in PreFilter, the pods labelled `conflict` per node; Filter rejects a node while
/// its count is positive. Only the PreFilter extensions can bring the count down.
struct Conflict;
const CONFLICT_KEY: &str = "TestConflict";
#[derive(Clone, Default)]
struct ConflictCounts(HashMap<String, usize>);
fn conflicting(p: &PodInfo) -> bool {
    p.labels().contains_key("conflict")
}
impl Plugin for Conflict {
    fn name(&self) -> &'static str {
        "TestConflict"
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}
impl PreFilterPlugin for Conflict {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let mut counts = ConflictCounts::default();
        for n in &snapshot.node_info_list {
            let c = n.pods.iter().filter(|p| conflicting(p)).count();
            counts.0.insert(n.node_name().to_string(), c);
        }
        state.write(CONFLICT_KEY, counts);
        (None, Status::success())
    }
    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}
impl PreFilterExtensions for Conflict {
    fn add_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        p: &Arc<PodInfo>,
        n: &NodeInfo,
    ) -> Status {
        if let Some(c) = state.read_mut::<ConflictCounts>(CONFLICT_KEY)
            && conflicting(p)
        {
            *c.0.entry(n.node_name().to_string()).or_default() += 1;
        }
        Status::success()
    }
    fn remove_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        p: &Arc<PodInfo>,
        n: &NodeInfo,
    ) -> Status {
        if let Some(c) = state.read_mut::<ConflictCounts>(CONFLICT_KEY)
            && conflicting(p)
            && let Some(v) = c.0.get_mut(n.node_name())
        {
            *v = v.saturating_sub(1);
        }
        Status::success()
    }
}
impl FilterPlugin for Conflict {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let count = state
            .read::<ConflictCounts>(CONFLICT_KEY)
            .and_then(|c| c.0.get(node.node_name()).copied())
            .unwrap_or(0);
        if count > 0 {
            Status::unschedulable("node(s) had a conflicting pod")
        } else {
            Status::success()
        }
    }
}

fn factory_sort(_: Option<&Value>, _: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Sort))
}
fn factory_bind(_: Option<&Value>, _: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NoopBinder))
}
fn factory_fit(_: Option<&Value>, _: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Fit))
}
fn factory_conflict(_: Option<&Value>, _: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Conflict))
}

fn framework(ctx: &PluginContext) -> Framework {
    let mut registry = Registry::new();
    registry.register("TestSort", factory_sort);
    registry.register("TestBinder", factory_bind);
    registry.register("TestFit", factory_fit);
    registry.register("TestConflict", factory_conflict);
    registry.register(NAME, new);
    let profile = ResolvedProfile {
        scheduler_name: "default-scheduler".into(),
        multi_point: ["TestSort", "TestBinder", "TestConflict", "TestFit", NAME]
            .iter()
            .map(|n| (n.to_string(), 0))
            .collect(),
        ..Default::default()
    };
    let fw = Framework::new(&profile, &registry, ctx.clone()).expect("test profile builds");
    assert_eq!(fw.list_plugins(ExtensionPoint::PostFilter), vec![NAME]);
    fw
}

/// A pod with a priority, a CPU request, labels and a start time (seconds since the epoch).
fn p(name: &str, priority: i32, cpu: &str) -> Pod {
    let mut pod = pod(name, &[("cpu", cpu)]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.priority = Some(priority);
    }
    pod
}

fn with_labels(mut pod: Pod, labels: &[(&str, &str)]) -> Pod {
    pod.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    pod
}

fn started(mut pod: Pod, secs: i64) -> Pod {
    let ts = jiff::Timestamp::from_second(secs).expect("valid test time");
    pod.status.get_or_insert_with(PodStatus::default).start_time = Some(Time(ts));
    pod
}

fn cpu_node(name: &str, cpu: &str, pods: Vec<Pod>) -> NodeInfo {
    let pods = pods
        .into_iter()
        .map(|mut p| {
            if let Some(s) = p.spec.as_mut() {
                s.node_name = Some(name.to_string());
            }
            p
        })
        .collect();
    node_info(node(name, &[("cpu", cpu), ("memory", "10Gi")], &[]), pods)
}

fn pdb(name: &str, labels: &[(&str, &str)], allowed: i32, disrupted: &[&str]) -> Budget {
    Budget::from_pdb(&PodDisruptionBudget {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed: allowed,
            disrupted_pods: Some(
                disrupted
                    .iter()
                    .map(|n| (n.to_string(), Time(jiff::Timestamp::UNIX_EPOCH)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..Default::default()
        }),
    })
}

fn names(pods: &[Arc<PodInfo>]) -> Vec<&str> {
    pods.iter().map(|p| p.name()).collect()
}

/// PreFilter over a snapshot of the given nodes, as the scheduling cycle would have run it.
fn pre_filtered(fw: &Framework, preemptor: &PodInfo, snapshot: &Snapshot) -> CycleState {
    let mut state = CycleState::new();
    let (_, s) = fw.run_pre_filter(&mut state, preemptor, snapshot);
    assert!(s.is_success(), "{s}");
    state
}

#[tokio::test]
async fn select_victims_table() {
    let ctx = test_context();
    let fw = framework(&ctx);
    let now = jiff::Timestamp::now();
    struct Case {
        name: &'static str,
        node_cpu: &'static str,
        pods: Vec<Pod>,
        preemptor: Pod,
        budgets: Vec<Budget>,
        want: Result<(Vec<&'static str>, usize), &'static str>,
    }
    let cases = vec![
        Case {
            name: "only the lowest priority pod is needed",
            node_cpu: "4",
            pods: vec![p("p1", 1, "1"), p("p2", 2, "1"), p("p3", 3, "2")],
            preemptor: p("pre", 10, "1"),
            budgets: vec![],
            want: Ok((vec!["p1"], 0)),
        },
        Case {
            name: "higher priority reprieved first, victims most important first",
            node_cpu: "4",
            pods: vec![p("p1", 1, "1"), p("p2", 2, "1"), p("p3", 3, "2")],
            preemptor: p("pre", 10, "2"),
            budgets: vec![],
            want: Ok((vec!["p2", "p1"], 0)),
        },
        Case {
            name: "pods of equal or higher priority are never victims",
            node_cpu: "4",
            pods: vec![p("p1", 1, "1"), p("p2", 5, "1"), p("p3", 6, "2")],
            preemptor: p("pre", 5, "2"),
            budgets: vec![],
            want: Err("Insufficient cpu"),
        },
        Case {
            name: "no lower priority pods",
            node_cpu: "2",
            pods: vec![p("p1", 7, "2")],
            preemptor: p("pre", 5, "1"),
            budgets: vec![],
            want: Err(NO_VICTIMS_REASON),
        },
        Case {
            name: "PDB-violating pods are reprieved before others",
            node_cpu: "2",
            pods: vec![with_labels(p("a", 5, "1"), &[("app", "a")]), p("b", 6, "1")],
            preemptor: p("pre", 10, "1"),
            budgets: vec![pdb("pdb-a", &[("app", "a")], 0, &[])],
            want: Ok((vec!["b"], 0)),
        },
        Case {
            name: "without the PDB the more important pod is reprieved",
            node_cpu: "2",
            pods: vec![with_labels(p("a", 5, "1"), &[("app", "a")]), p("b", 6, "1")],
            preemptor: p("pre", 10, "1"),
            budgets: vec![],
            want: Ok((vec!["a"], 0)),
        },
        Case {
            name: "a violating victim that cannot be reprieved is counted",
            node_cpu: "4",
            pods: vec![
                p("p1", 1, "1"),
                p("p2", 2, "1"),
                with_labels(p("p3", 3, "2"), &[("app", "x")]),
            ],
            preemptor: p("pre", 10, "3"),
            budgets: vec![pdb("pdb-x", &[("app", "x")], 0, &[])],
            want: Ok((vec!["p3", "p1"], 1)),
        },
        Case {
            name: "pods already disrupted do not use the budget",
            node_cpu: "2",
            pods: vec![
                with_labels(p("a", 5, "1"), &[("app", "a")]),
                with_labels(p("b", 6, "1"), &[("app", "a")]),
            ],
            preemptor: p("pre", 10, "2"),
            budgets: vec![pdb("pdb-a", &[("app", "a")], 1, &["b"])],
            want: Ok((vec!["b", "a"], 0)),
        },
        Case {
            name: "the budget is shared across victims",
            node_cpu: "2",
            pods: vec![
                with_labels(p("a", 5, "1"), &[("app", "a")]),
                with_labels(p("b", 6, "1"), &[("app", "a")]),
            ],
            preemptor: p("pre", 10, "2"),
            budgets: vec![pdb("pdb-a", &[("app", "a")], 1, &[])],
            want: Ok((vec!["b", "a"], 1)),
        },
        Case {
            name: "PreFilter state follows removals (conflicting pod must go)",
            node_cpu: "4",
            pods: vec![
                p("big", 1, "2"),
                with_labels(p("c", 2, "1"), &[("conflict", "yes")]),
            ],
            preemptor: p("pre", 10, "1"),
            budgets: vec![],
            want: Ok((vec!["c"], 0)),
        },
    ];
    for c in cases {
        let info = cpu_node("n1", c.node_cpu, c.pods);
        let snapshot = Snapshot::from_node_infos(vec![info.clone()]);
        let preemptor = pod_info(c.preemptor);
        let mut state = pre_filtered(&fw, &preemptor, &snapshot);
        let mut node = info.clone();
        let got = select_victims_on_node(&fw, &mut state, &preemptor, &mut node, &c.budgets, now);
        match (got, c.want) {
            (Ok(v), Ok((want, violations))) => {
                assert_eq!(names(&v.pods), want, "{}", c.name);
                assert_eq!(v.num_pdb_violations, violations, "{}", c.name);
                // The node copy is left with the victims gone and the preemptor fitting.
                assert_eq!(node.pods.len(), info.pods.len() - want.len(), "{}", c.name);
                assert!(
                    fw.run_filter(&state, &preemptor, &node).is_success(),
                    "{}",
                    c.name
                );
            }
            (Err(s), Err(reason)) => {
                assert_eq!(s.reasons, vec![reason.to_string()], "{}", c.name)
            }
            (got, want) => panic!("{}: got {got:?}, want {want:?}", c.name),
        }
    }
}

#[test]
fn pdb_split_counts_in_order() {
    let pods: Vec<Arc<PodInfo>> = ["a", "b", "c"]
        .iter()
        .map(|n| pod_info(with_labels(p(n, 1, "1"), &[("app", "x")])))
        .collect();
    let (violating, ok) = split_by_violation(&pods, &[pdb("x", &[("app", "x")], 1, &[])]);
    assert_eq!(names(&violating), vec!["b", "c"]);
    assert_eq!(names(&ok), vec!["a"]);
    // Another namespace's PDB does not protect these pods.
    let mut other = pdb("x", &[("app", "x")], 0, &[]);
    other.namespace = "other".into();
    let (violating, _) = split_by_violation(&pods, &[other]);
    assert!(violating.is_empty());
    // An empty selector protects nothing.
    let (violating, _) = split_by_violation(&pods, &[pdb("all", &[], 0, &[])]);
    assert!(violating.is_empty());
}

fn candidate(node: &str, violations: usize, victims: Vec<Pod>) -> Candidate {
    Candidate {
        node_name: node.into(),
        victims: Victims {
            pods: victims.into_iter().map(pod_info).collect(),
            num_pdb_violations: violations,
        },
    }
}

#[test]
fn pick_one_criteria_table() {
    let now = jiff::Timestamp::now();
    let cases: Vec<(&str, Vec<Candidate>, &str)> = vec![
        (
            "fewest PDB violations",
            vec![
                candidate("n1", 1, vec![p("a", 1, "1")]),
                candidate("n2", 0, vec![p("b", 9, "1"), p("c", 9, "1")]),
            ],
            "n2",
        ),
        (
            "lowest highest-victim priority",
            vec![
                candidate("n1", 0, vec![p("a", 5, "1")]),
                candidate(
                    "n2",
                    0,
                    vec![p("b", 3, "1"), p("c", 3, "1"), p("d", 2, "1")],
                ),
            ],
            "n2",
        ),
        (
            "smallest sum of priorities",
            vec![
                candidate("n1", 0, vec![p("a", 5, "1"), p("b", 4, "1")]),
                candidate("n2", 0, vec![p("c", 5, "1"), p("d", 2, "1")]),
            ],
            "n2",
        ),
        (
            "negative priorities do not favour more victims",
            vec![
                candidate("n1", 0, vec![p("a", -5, "1"), p("b", -5, "1")]),
                candidate("n2", 0, vec![p("c", -5, "1")]),
            ],
            "n2",
        ),
        (
            "fewer victims of equal priorities (the shifted sum decides)",
            vec![
                candidate("n1", 0, vec![p("a", 2, "1"), p("b", 0, "1")]),
                candidate("n2", 0, vec![p("c", 2, "1")]),
            ],
            "n2",
        ),
        (
            "latest start of the most important victims",
            vec![
                candidate("n1", 0, vec![started(p("a", 2, "1"), 100)]),
                candidate("n2", 0, vec![started(p("b", 2, "1"), 200)]),
                candidate("n3", 0, vec![started(p("c", 2, "1"), 150)]),
            ],
            "n2",
        ),
        (
            "start time is the earliest among the top-priority victims",
            vec![
                candidate(
                    "n1",
                    0,
                    vec![started(p("a", 2, "1"), 300), started(p("b", 1, "1"), 10)],
                ),
                candidate(
                    "n2",
                    0,
                    vec![started(p("c", 2, "1"), 200), started(p("d", 1, "1"), 500)],
                ),
            ],
            "n1",
        ),
        (
            "ties go to the first",
            vec![
                candidate("n1", 0, vec![started(p("a", 2, "1"), 100)]),
                candidate("n2", 0, vec![started(p("b", 2, "1"), 100)]),
            ],
            "n1",
        ),
    ];
    for (name, cands, want) in cases {
        let i = pick_one(&cands, now).expect("candidates given");
        assert_eq!(cands[i].node_name, want, "{name}");
    }
    assert_eq!(pick_one(&[], now), None);
}

#[test]
fn num_candidates_table() {
    // (potential nodes, percentage, absolute, want)
    for (n, pct, abs, want) in [
        (10, 10, 100, 10),
        (5000, 10, 100, 500),
        (500, 10, 100, 100),
        (500, 0, 3, 3),
        (2, 50, 0, 1),
        (0, 10, 100, 0),
    ] {
        assert_eq!(num_candidates(n, pct, abs), want, "{n} {pct}% min {abs}");
    }
}

#[test]
fn no_candidate_message_histogram() {
    let mut statuses = NodeToStatus::new();
    statuses.insert("n1".into(), Status::unresolvable(NO_VICTIMS_REASON));
    statuses.insert(
        "n2".into(),
        Status::with_reasons(
            Code::Unschedulable,
            vec!["Insufficient cpu".into(), "Insufficient memory".into()],
        ),
    );
    assert_eq!(
        no_candidate_message(5, &statuses),
        "0/5 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, \
         1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling."
    );
    assert_eq!(
        no_candidate_message(3, &NodeToStatus::new()),
        "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
}

/// Runs Filter on every node as the failed cycle would have, giving PostFilter's input.
fn filter_all(
    fw: &Framework,
    state: &CycleState,
    preemptor: &PodInfo,
    snapshot: &Snapshot,
) -> NodeToStatus {
    snapshot
        .node_info_list
        .iter()
        .map(|n| {
            (
                n.node_name().to_string(),
                fw.run_filter(state, preemptor, n),
            )
        })
        .filter(|(_, s)| !s.is_success())
        .collect()
}

fn plugin(ctx: &PluginContext) -> DefaultPreemption {
    DefaultPreemption::with_args(DefaultPreemptionArgs::default(), ctx)
}

fn decide_on(
    ctx: &PluginContext,
    nodes: Vec<NodeInfo>,
    preemptor: Pod,
    tweak: impl FnOnce(&mut NodeToStatus),
) -> Decision {
    let fw = framework(ctx);
    let snapshot = Snapshot::from_node_infos(nodes);
    let preemptor = pod_info(preemptor);
    let state = pre_filtered(&fw, &preemptor, &snapshot);
    let mut filtered = filter_all(&fw, &state, &preemptor, &snapshot);
    tweak(&mut filtered);
    plugin(ctx).decide(&fw, &state, &preemptor, &snapshot, &filtered, Some(0))
}

#[tokio::test]
async fn decide_picks_the_node_with_least_important_victims() {
    let ctx = test_context();
    let nodes = vec![
        cpu_node("n1", "2", vec![p("a", 5, "2")]),
        cpu_node("n2", "2", vec![p("b", 3, "1"), p("c", 3, "1")]),
        cpu_node("n3", "2", vec![p("d", 4, "2")]),
    ];
    match decide_on(&ctx, nodes, p("pre", 10, "1"), |_| {}) {
        Decision::Nominate(c) => {
            assert_eq!(c.node_name, "n2");
            assert_eq!(c.victims.pods.len(), 1);
        }
        other => panic!("got {other:?}"),
    }
}

#[tokio::test]
async fn decide_no_candidate_message() {
    let ctx = test_context();
    // n1: nothing of lower priority; n2: preemption cannot fix it; n3: not even tried.
    let nodes = vec![
        cpu_node("n1", "1", vec![p("a", 20, "1")]),
        cpu_node("n2", "1", vec![p("b", 1, "1")]),
        cpu_node("n3", "1", vec![p("c", 1, "1")]),
    ];
    let d = decide_on(&ctx, nodes, p("pre", 10, "1"), |f| {
        f.insert(
            "n2".into(),
            Status::unresolvable("node(s) had untolerated taint {k: v}"),
        );
        f.remove("n3");
    });
    match d {
        Decision::NoCandidate {
            status,
            no_potential_nodes,
        } => {
            assert!(!no_potential_nodes);
            assert_eq!(status.code, Code::Unschedulable);
            assert_eq!(
                status.message(),
                "0/3 nodes are available: 1 No preemption victims found for incoming pod, \
                 2 Preemption is not helpful for scheduling."
            );
        }
        other => panic!("got {other:?}"),
    }
}

#[tokio::test]
async fn decide_with_no_potential_nodes() {
    let ctx = test_context();
    let nodes = vec![cpu_node("n1", "1", vec![p("a", 1, "1")])];
    let d = decide_on(&ctx, nodes, p("pre", 10, "1"), |f| {
        f.insert(
            "n1".into(),
            Status::unresolvable("node(s) didn't match Pod's node affinity/selector"),
        );
    });
    match d {
        Decision::NoCandidate {
            status,
            no_potential_nodes,
        } => {
            assert!(no_potential_nodes);
            assert_eq!(
                status.message(),
                "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            );
        }
        other => panic!("got {other:?}"),
    }
}

#[tokio::test]
async fn decide_prefers_candidates_without_pdb_violations() {
    let ctx = test_context();
    let plugin = plugin(&ctx);
    let protected = PodDisruptionBudget {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("protect".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some([("app".to_string(), "db".to_string())].into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(PodDisruptionBudgetStatus::default()),
    };
    // The lister reads the informer's indexer, filled here by hand.
    ctx.informers
        .informer::<PodDisruptionBudget>()
        .indexer()
        .insert(Arc::new(protected));
    let fw = framework(&ctx);
    // n1's victim has the lower priority but is protected by the PDB.
    let snapshot = Snapshot::from_node_infos(vec![
        cpu_node(
            "n1",
            "1",
            vec![with_labels(p("db", 1, "1"), &[("app", "db")])],
        ),
        cpu_node("n2", "1", vec![p("web", 5, "1")]),
    ]);
    let preemptor = pod_info(p("pre", 10, "1"));
    let state = pre_filtered(&fw, &preemptor, &snapshot);
    let filtered = filter_all(&fw, &state, &preemptor, &snapshot);
    match plugin.decide(&fw, &state, &preemptor, &snapshot, &filtered, Some(0)) {
        Decision::Nominate(c) => {
            assert_eq!(c.node_name, "n2");
            assert_eq!(c.victims.num_pdb_violations, 0);
        }
        other => panic!("got {other:?}"),
    }
}

#[tokio::test]
async fn eligibility() {
    let ctx = test_context();
    let mut never = p("pre", 10, "1");
    if let Some(s) = never.spec.as_mut() {
        s.preemption_policy = Some("Never".into());
    }
    let nodes = vec![cpu_node("n1", "1", vec![p("a", 1, "1")])];
    match decide_on(&ctx, nodes, never, |_| {}) {
        Decision::NotEligible(s) => assert_eq!(s.message(), NOT_ELIGIBLE_POLICY_NEVER),
        other => panic!("got {other:?}"),
    }

    // Nominated to n1 where a lower-priority victim is still terminating: wait.
    let mut leaving = p("a", 1, "1");
    leaving.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    leaving.status = Some(PodStatus {
        conditions: Some(vec![PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some("PreemptionByScheduler".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let mut nominated = p("pre", 10, "1");
    nominated.status = Some(PodStatus {
        nominated_node_name: Some("n1".into()),
        ..Default::default()
    });
    let d = decide_on(
        &ctx,
        vec![cpu_node("n1", "1", vec![leaving.clone()])],
        nominated.clone(),
        |_| {},
    );
    match d {
        Decision::NotEligible(s) => assert_eq!(s.message(), NOT_ELIGIBLE_TERMINATING),
        other => panic!("got {other:?}"),
    }
    // The same, but the nominated node became unresolvable: preempt again elsewhere.
    let d = decide_on(
        &ctx,
        vec![
            cpu_node("n1", "1", vec![leaving]),
            cpu_node("n2", "1", vec![p("b", 1, "1")]),
        ],
        nominated,
        |f| {
            f.insert(
                "n1".into(),
                Status::unresolvable("node(s) were unschedulable"),
            );
        },
    );
    match d {
        Decision::Nominate(c) => assert_eq!(c.node_name, "n2"),
        other => panic!("got {other:?}"),
    }
}

#[tokio::test]
async fn dry_run_stops_after_enough_candidates() {
    let ctx = test_context();
    let fw = framework(&ctx);
    let infos: Vec<NodeInfo> = (0..40)
        .map(|i| cpu_node(&format!("n{i:02}"), "1", vec![p(&format!("v{i}"), 1, "1")]))
        .collect();
    let snapshot = Snapshot::from_node_infos(infos);
    let preemptor = pod_info(p("pre", 10, "1"));
    let state = pre_filtered(&fw, &preemptor, &snapshot);
    let filtered = filter_all(&fw, &state, &preemptor, &snapshot);
    let potential = candidates::potential_nodes(&snapshot, &filtered);
    assert_eq!(potential.len(), 40);
    let sim = candidates::Simulation {
        fw: &fw,
        state: &state,
        preemptor: &preemptor,
        budgets: &[],
        now: jiff::Timestamp::now(),
    };
    let r = sim.dry_run(&potential, 38, 3);
    let got: Vec<&str> = r.candidates.iter().map(|c| c.node_name.as_str()).collect();
    // From the offset, wrapping around, and no further than needed.
    assert_eq!(got, vec!["n38", "n39", "n00"]);
}

#[test]
fn args_validation() {
    let ok = DefaultPreemptionArgs::default();
    assert!(validate(&ok).is_ok());
    let bad = DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 101,
        ..Default::default()
    };
    assert!(
        validate(&bad)
            .unwrap_err()
            .contains("not in valid range [0, 100]")
    );
    let zero = DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 0,
        min_candidate_nodes_absolute: 0,
        ..Default::default()
    };
    assert!(
        validate(&zero)
            .unwrap_err()
            .contains("cannot be zero at the same time")
    );
}

#[test]
fn victim_marking_helpers() {
    use super::execute::{disruption_message, pod_reference, terminating_by_preemption};
    let mut preemptor = p("pre", 10, "1");
    assert_eq!(
        disruption_message(&preemptor),
        "default-scheduler: preempting to accommodate a higher priority pod"
    );
    if let Some(s) = preemptor.spec.as_mut() {
        s.scheduler_name = Some("my-scheduler".into());
    }
    assert_eq!(
        disruption_message(&preemptor),
        "my-scheduler: preempting to accommodate a higher priority pod"
    );
    let r = pod_reference(&preemptor);
    assert_eq!(r.kind.as_deref(), Some("Pod"));
    assert_eq!(r.uid.as_deref(), Some("uid-pod-pre"));

    let condition = |reason: &str| PodStatus {
        conditions: Some(vec![PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some(reason.into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut victim = p("v", 1, "1");
    victim.status = Some(condition("PreemptionByScheduler"));
    // Marked but not deleted yet: not terminating.
    assert!(!terminating_by_preemption(&victim));
    victim.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    assert!(terminating_by_preemption(&victim));
    // Deleted for another reason (an eviction): not preemption's doing.
    victim.status = Some(condition("EvictionByEvictionAPI"));
    assert!(!terminating_by_preemption(&victim));
}

#[tokio::test]
async fn post_filter_through_the_framework() {
    let ctx = test_context();
    let fw = framework(&ctx);
    let run = |nodes: Vec<NodeInfo>, preemptor: Pod| {
        let fw = &fw;
        async move {
            let snapshot = Snapshot::from_node_infos(nodes);
            let preemptor = pod_info(preemptor);
            let state = pre_filtered(fw, &preemptor, &snapshot);
            let filtered = filter_all(fw, &state, &preemptor, &snapshot);
            fw.run_post_filter(&state, &preemptor, &snapshot, &filtered)
                .await
        }
    };
    // No lower-priority pod anywhere: unschedulable with upstream's histogram.
    let (_, s) = run(
        vec![cpu_node("n1", "1", vec![p("a", 20, "1")])],
        p("pre", 10, "1"),
    )
    .await;
    assert_eq!(s.code, Code::Unschedulable);
    assert_eq!(
        s.message(),
        "0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
    // A victim exists, but evicting it needs the API, which is unreachable here: an error,
    // and no node is nominated.
    let (result, s) = run(
        vec![cpu_node("n1", "1", vec![p("a", 1, "1")])],
        p("pre", 10, "1"),
    )
    .await;
    assert_eq!(s.code, Code::Error, "{s}");
    assert_eq!(result, None);
}
