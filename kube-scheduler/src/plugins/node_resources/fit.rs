//! The NodeResourcesFit plugin: a pod fits a node when every resource it requests is free
//! there (and the node takes one more pod); nodes are scored by the strategy in the args.

use super::requested_to_capacity_ratio::Shape;
use super::resource_allocation::{ResourceAllocationScorer, Strategy};
use crate::apis::config::args::{NodeResourcesFitArgs, ScoringStrategyType, decode_args};
use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::resource::{Resource, is_extended_resource_name, pod_requests};
use crate::framework::{
    Code, CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, ScorePlugin, Snapshot, Status,
};
use crate::plugins::helper::objects::{as_node, as_pod};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

pub const NAME: &str = "NodeResourcesFit";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodeResourcesFit";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesFit";

pub struct Fit {
    ignored_resources: HashSet<String>,
    ignored_resource_groups: HashSet<String>,
    scorer: ResourceAllocationScorer,
}

pub fn new(args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let args: NodeResourcesFitArgs = decode_args(args)?;
    Ok(Arc::new(Fit::from_args(&args)?))
}

/// The pod's effective request, computed once per cycle.
#[derive(Clone)]
struct PreFilterState(Resource);

/// The pod's request of each scored resource.
#[derive(Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
}

/// A resource the node lacks for the pod, as upstream's `InsufficientResource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsufficientResource {
    pub resource_name: String,
    pub reason: String,
    pub requested: i64,
    pub used: i64,
    pub capacity: i64,
}

impl Fit {
    pub fn from_args(args: &NodeResourcesFitArgs) -> Result<Self, String> {
        let strategy = &args.scoring_strategy;
        let kind = match strategy.type_ {
            ScoringStrategyType::LeastAllocated => Strategy::LeastAllocated,
            ScoringStrategyType::MostAllocated => Strategy::MostAllocated,
            ScoringStrategyType::RequestedToCapacityRatio => {
                let shape = strategy
                    .requested_to_capacity_ratio
                    .as_ref()
                    .map(|r| r.shape.as_slice())
                    .unwrap_or_default();
                Strategy::RequestedToCapacityRatio(Shape::new(shape)?)
            }
        };
        Ok(Self {
            ignored_resources: args.ignored_resources.iter().cloned().collect(),
            ignored_resource_groups: args.ignored_resource_groups.iter().cloned().collect(),
            scorer: ResourceAllocationScorer::new(&strategy.resources, false, kind),
        })
    }

    fn ignored(&self, name: &str) -> bool {
        is_extended_resource_name(name)
            && (self.ignored_resources.contains(name)
                || (!self.ignored_resource_groups.is_empty()
                    && self
                        .ignored_resource_groups
                        .contains(name.split('/').next().unwrap_or_default())))
    }
}

/// The resources the node cannot give the pod (empty when it fits), as upstream's
/// `fitsRequest`; `is_ignored` names extended resources the scheduler does not manage.
pub fn fits_request(
    request: &Resource,
    node: &NodeInfo,
    is_ignored: impl Fn(&str) -> bool,
) -> Vec<InsufficientResource> {
    let mut out = Vec::new();
    let (alloc, used) = (&node.allocatable, &node.requested);
    let pods = node.pods.len() as i64;
    if pods + 1 > alloc.allowed_pod_number {
        out.push(InsufficientResource {
            resource_name: "pods".into(),
            reason: "Too many pods".into(),
            requested: 1,
            used: pods,
            capacity: alloc.allowed_pod_number,
        });
    }
    if request.milli_cpu == 0
        && request.memory == 0
        && request.ephemeral_storage == 0
        && request.scalar.is_empty()
    {
        return out;
    }
    let mut check = |name: &str, reason: &str, want: i64, used: i64, capacity: i64| {
        if want > 0 && want > capacity - used {
            out.push(InsufficientResource {
                resource_name: name.into(),
                reason: reason.into(),
                requested: want,
                used,
                capacity,
            });
        }
    };
    check(
        "cpu",
        "Insufficient cpu",
        request.milli_cpu,
        used.milli_cpu,
        alloc.milli_cpu,
    );
    check(
        "memory",
        "Insufficient memory",
        request.memory,
        used.memory,
        alloc.memory,
    );
    check(
        "ephemeral-storage",
        "Insufficient ephemeral-storage",
        request.ephemeral_storage,
        used.ephemeral_storage,
        alloc.ephemeral_storage,
    );
    for (name, want) in &request.scalar {
        if *want == 0 || is_ignored(name) {
            continue;
        }
        let used = used.scalar.get(name).copied().unwrap_or(0);
        let capacity = alloc.scalar.get(name).copied().unwrap_or(0);
        if *want > capacity - used {
            out.push(InsufficientResource {
                resource_name: name.clone(),
                reason: format!("Insufficient {name}"),
                requested: *want,
                used,
                capacity,
            });
        }
    }
    out
}

/// Whether the pod fits an empty node of this kind (the node hint's question).
fn fits_empty_node(pod: &Pod, node: &Node) -> bool {
    let info = NodeInfo::new(Some(Arc::new(node.clone())));
    fits_request(&pod_requests(pod, false), &info, |_| false).is_empty()
}

fn node_allocatable(node: &Node) -> Resource {
    Resource::from_list(node.status.as_ref().and_then(|s| s.allocatable.as_ref()))
}

/// Whether the update raised the allocatable of something the pod asks for (or the pod count).
fn requested_resources_increased(pod: &Pod, old: &Node, new: &Node) -> bool {
    let req = pod_requests(pod, false);
    let (old, new) = (node_allocatable(old), node_allocatable(new));
    if new.allowed_pod_number > old.allowed_pod_number {
        return true;
    }
    (req.milli_cpu > 0 && new.milli_cpu > old.milli_cpu)
        || (req.memory > 0 && new.memory > old.memory)
        || (req.ephemeral_storage > 0 && new.ephemeral_storage > old.ephemeral_storage)
        || req
            .scalar
            .iter()
            .any(|(name, q)| *q != 0 && new.get(name) > old.get(name))
}

/// Whether a pod's update freed something the target pod requests (in-place scale down).
fn scaled_down_for(target: &Pod, old: &Pod, new: &Pod) -> bool {
    if new.metadata.uid == target.metadata.uid {
        return true;
    }
    let assigned = new
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !assigned {
        return false;
    }
    let (before, after) = (pod_requests(old, false), pod_requests(new, false));
    let want = pod_requests(target, false);
    (want.milli_cpu > 0 && before.milli_cpu > after.milli_cpu)
        || (want.memory > 0 && before.memory > after.memory)
        || (want.ephemeral_storage > 0 && before.ephemeral_storage > after.ephemeral_storage)
        || want
            .scalar
            .iter()
            .any(|(name, q)| *q != 0 && before.get(name) > after.get(name))
}

impl Plugin for Fit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(
                EventResource::Pod,
                action::DELETE | action::UPDATE_POD_SCALE_DOWN,
            )
            .with_hint(|pod, old, new| {
                let Some(old) = as_pod(old) else {
                    return QueueingHint::Queue;
                };
                match as_pod(new) {
                    // A deleted pod frees resources only if it was on a node.
                    None => {
                        let assigned = old
                            .spec
                            .as_ref()
                            .and_then(|s| s.node_name.as_deref())
                            .is_some_and(|n| !n.is_empty());
                        if assigned {
                            QueueingHint::Queue
                        } else {
                            QueueingHint::Skip
                        }
                    }
                    Some(new) if scaled_down_for(pod, old, new) => QueueingHint::Queue,
                    Some(_) => QueueingHint::Skip,
                }
            }),
            ClusterEventWithHint::new(
                EventResource::Node,
                action::ADD | action::UPDATE_NODE_ALLOCATABLE,
            )
            .with_hint(|pod, old, new| {
                let Some(new) = as_node(new) else {
                    return QueueingHint::Queue;
                };
                if !fits_empty_node(pod, new) {
                    return QueueingHint::Skip;
                }
                match as_node(old) {
                    Some(old) if !requested_resources_increased(pod, old, new) => {
                        QueueingHint::Skip
                    }
                    _ => QueueingHint::Queue,
                }
            }),
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for Fit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod.requests.clone()));
        (None, Status::success())
    }
}

impl FilterPlugin for Fit {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::state_not_found(PRE_FILTER_STATE_KEY);
        };
        let insufficient = fits_request(&s.0, node, |n| self.ignored(n));
        if insufficient.is_empty() {
            return Status::success();
        }
        Status::with_reasons(
            Code::Unschedulable,
            insufficient.into_iter().map(|r| r.reason).collect(),
        )
    }
}

impl PreScorePlugin for Fit {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[Arc<NodeInfo>],
        _snapshot: &Snapshot,
    ) -> Status {
        let pod_requests = self.scorer.pod_requests(pod);
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { pod_requests });
        Status::success()
    }
}

impl ScorePlugin for Fit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => self.scorer.score(node, &s.pod_requests),
            // PreScore may be disabled in the profile: work it out here.
            None => self.scorer.score(node, &self.scorer.pod_requests(pod)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::config::args::{
        RequestedToCapacityRatioParam, ResourceSpec, ScoringStrategy, UtilizationShapePoint,
    };
    use crate::framework::testing;

    fn fit(args: NodeResourcesFitArgs) -> Fit {
        Fit::from_args(&args).expect("valid args")
    }

    fn run_filter(pl: &Fit, pod: Pod, node: NodeInfo) -> Status {
        let pi = testing::pod_info(pod);
        let mut state = CycleState::new();
        let (_, s) = pl.pre_filter(&mut state, &pi, &Snapshot::default());
        assert!(s.is_success());
        pl.filter(&state, &pi, &node)
    }

    type Amounts = Vec<(&'static str, &'static str)>;
    /// Name, the pod's request, what the node's pods use, the expected reasons.
    type FilterCase = (&'static str, Amounts, Amounts, Vec<&'static str>);

    #[test]
    fn filter_table() {
        // After upstream's TestEnoughRequests: the node has 10 cpu, 20 memory, 32 pods,
        // 5 example.com/aaa and 5 hugepages-2Mi.
        let node = |used: &[(&str, &str)]| {
            testing::node_info(
                testing::node(
                    "n",
                    &[
                        ("cpu", "10m"),
                        ("memory", "20"),
                        ("pods", "32"),
                        ("example.com/aaa", "5"),
                        ("hugepages-2Mi", "5"),
                    ],
                    &[],
                ),
                vec![testing::pod("existing", used)],
            )
        };
        let cases: Vec<FilterCase> = vec![
            (
                "no request always fits",
                vec![],
                vec![("cpu", "10m"), ("memory", "20")],
                vec![],
            ),
            (
                "too much of both",
                vec![("cpu", "1m"), ("memory", "1")],
                vec![("cpu", "10m"), ("memory", "20")],
                vec!["Insufficient cpu", "Insufficient memory"],
            ),
            (
                "fits exactly",
                vec![("cpu", "1m"), ("memory", "1")],
                vec![("cpu", "9m"), ("memory", "19")],
                vec![],
            ),
            (
                "cpu only",
                vec![("cpu", "2m"), ("memory", "1")],
                vec![("cpu", "9m"), ("memory", "5")],
                vec!["Insufficient cpu"],
            ),
            (
                "memory only",
                vec![("cpu", "1m"), ("memory", "2")],
                vec![("cpu", "5m"), ("memory", "19")],
                vec!["Insufficient memory"],
            ),
            (
                "extended fits",
                vec![("example.com/aaa", "1")],
                vec![("example.com/aaa", "4")],
                vec![],
            ),
            (
                "extended exhausted",
                vec![("example.com/aaa", "2")],
                vec![("example.com/aaa", "4")],
                vec!["Insufficient example.com/aaa"],
            ),
            (
                "extended not on node",
                vec![("example.com/bbb", "1")],
                vec![],
                vec!["Insufficient example.com/bbb"],
            ),
            (
                "hugepages exhausted",
                vec![("hugepages-2Mi", "3")],
                vec![("hugepages-2Mi", "3")],
                vec!["Insufficient hugepages-2Mi"],
            ),
            (
                "ephemeral storage not on node",
                vec![("ephemeral-storage", "1")],
                vec![],
                vec!["Insufficient ephemeral-storage"],
            ),
        ];
        let pl = fit(NodeResourcesFitArgs::default());
        for (name, req, used, want) in cases {
            let s = run_filter(&pl, testing::pod("p", &req), node(&used));
            if want.is_empty() {
                assert!(s.is_success(), "{name}: {s:?}");
            } else {
                assert_eq!(s.code, Code::Unschedulable, "{name}");
                assert_eq!(s.reasons, want, "{name}");
            }
        }
    }

    #[test]
    fn too_many_pods_and_ignored_resources() {
        let full = testing::node_info(
            testing::node("n", &[("cpu", "1"), ("pods", "1")], &[]),
            vec![testing::pod("existing", &[])],
        );
        let pl = fit(NodeResourcesFitArgs::default());
        let s = run_filter(&pl, testing::pod("p", &[("cpu", "2")]), full);
        assert_eq!(s.reasons, vec!["Too many pods", "Insufficient cpu"]);

        let node = || testing::node_info(testing::node("n", &[("pods", "10")], &[]), vec![]);
        let pod = || testing::pod("p", &[("example.com/aaa", "1"), ("other.io/bbb", "1")]);
        let s = run_filter(&pl, pod(), node());
        assert_eq!(
            s.reasons,
            vec!["Insufficient example.com/aaa", "Insufficient other.io/bbb"]
        );
        let pl = fit(NodeResourcesFitArgs {
            ignored_resources: vec!["example.com/aaa".into()],
            ignored_resource_groups: vec!["other.io".into()],
            ..Default::default()
        });
        assert!(run_filter(&pl, pod(), node()).is_success());
    }

    #[test]
    fn filter_without_pre_filter_is_an_error() {
        let pl = fit(NodeResourcesFitArgs::default());
        let s = pl.filter(
            &CycleState::new(),
            &testing::pod_info(testing::pod("p", &[])),
            &testing::node_info(testing::node("n", &[], &[]), vec![]),
        );
        assert_eq!(s.code, Code::Error);
    }

    fn strategy(
        type_: ScoringStrategyType,
        resources: &[(&str, i64)],
        shape: &[(i32, i32)],
    ) -> NodeResourcesFitArgs {
        NodeResourcesFitArgs {
            scoring_strategy: ScoringStrategy {
                type_,
                resources: resources
                    .iter()
                    .map(|(n, w)| ResourceSpec {
                        name: n.to_string(),
                        weight: *w,
                    })
                    .collect(),
                requested_to_capacity_ratio: (!shape.is_empty()).then(|| {
                    RequestedToCapacityRatioParam {
                        shape: shape
                            .iter()
                            .map(|&(utilization, score)| UtilizationShapePoint {
                                utilization,
                                score,
                            })
                            .collect(),
                    }
                }),
            },
            ..Default::default()
        }
    }

    fn scores(pl: &Fit, pod: Pod, nodes: Vec<NodeInfo>) -> Vec<i64> {
        let pi = testing::pod_info(pod);
        let nodes: Vec<Arc<NodeInfo>> = nodes.into_iter().map(Arc::new).collect();
        let mut state = CycleState::new();
        assert!(
            pl.pre_score(&mut state, &pi, &nodes, &Snapshot::default())
                .is_success()
        );
        nodes
            .iter()
            .map(|n| {
                let (score, s) = pl.score(&state, &pi, n);
                assert!(s.is_success(), "{s:?}");
                score
            })
            .collect()
    }

    #[test]
    fn score_table() {
        let cpu_mem = &[("cpu", 1), ("memory", 1)];
        let sized = || {
            vec![
                testing::node_info(
                    testing::node("n1", &[("cpu", "4000m"), ("memory", "10000")], &[]),
                    vec![],
                ),
                testing::node_info(
                    testing::node("n2", &[("cpu", "6000m"), ("memory", "10000")], &[]),
                    vec![],
                ),
            ]
        };
        let pod = || testing::pod("p", &[("cpu", "3000m"), ("memory", "5000")]);
        let cases = [
            // Upstream's "nothing scheduled, resources requested, differently sized nodes".
            (
                "least allocated",
                strategy(ScoringStrategyType::LeastAllocated, cpu_mem, &[]),
                vec![37, 50],
            ),
            (
                "most allocated",
                strategy(ScoringStrategyType::MostAllocated, cpu_mem, &[]),
                vec![62, 50],
            ),
            (
                "requested to capacity ratio, bin packing shape",
                strategy(
                    ScoringStrategyType::RequestedToCapacityRatio,
                    cpu_mem,
                    &[(0, 0), (100, 10)],
                ),
                vec![63, 50],
            ),
            (
                "requested to capacity ratio, spreading shape",
                strategy(
                    ScoringStrategyType::RequestedToCapacityRatio,
                    cpu_mem,
                    &[(0, 10), (100, 0)],
                ),
                vec![38, 50],
            ),
            (
                "weights",
                strategy(
                    ScoringStrategyType::LeastAllocated,
                    &[("cpu", 3), ("memory", 1)],
                    &[],
                ),
                // n1: (25*3 + 50) / 4 = 31; n2: 50.
                vec![31, 50],
            ),
        ];
        for (name, args, want) in cases {
            assert_eq!(scores(&fit(args), pod(), sized()), want, "{name}");
        }
    }

    #[test]
    fn scoring_counts_default_requests_of_pods_without_requests() {
        let pl = fit(strategy(
            ScoringStrategyType::LeastAllocated,
            &[("cpu", 1)],
            &[],
        ));
        let node = testing::node_info(
            testing::node("n", &[("cpu", "1000m"), ("memory", "1Gi")], &[]),
            vec![testing::pod("existing", &[])],
        );
        // 100m assumed for the existing pod plus 400m: half the node is used.
        assert_eq!(
            scores(
                &pl,
                testing::pod("p", &[("cpu", "400m")]),
                vec![node.clone()]
            ),
            vec![50]
        );
        // And 100m for the new pod itself: 800m free of 1000m.
        assert_eq!(scores(&pl, testing::pod("p", &[]), vec![node]), vec![80]);
    }

    #[test]
    fn extended_resources_score_only_when_requested() {
        let pl = fit(strategy(
            ScoringStrategyType::MostAllocated,
            &[("cpu", 1), ("example.com/gpu", 1)],
            &[],
        ));
        let node = || {
            testing::node_info(
                testing::node("n", &[("cpu", "4000m"), ("example.com/gpu", "4")], &[]),
                vec![],
            )
        };
        // cpu 50, gpu 75.
        assert_eq!(
            scores(
                &pl,
                testing::pod("p", &[("cpu", "2000m"), ("example.com/gpu", "3")]),
                vec![node()]
            ),
            vec![62]
        );
        // The gpu is left out when the pod does not ask for it.
        assert_eq!(
            scores(&pl, testing::pod("p", &[("cpu", "2000m")]), vec![node()]),
            vec![50]
        );
    }

    #[test]
    fn rtcr_needs_a_shape() {
        assert!(
            Fit::from_args(&strategy(
                ScoringStrategyType::RequestedToCapacityRatio,
                &[("cpu", 1)],
                &[]
            ))
            .is_err()
        );
    }

    #[test]
    fn node_hint() {
        let events = fit(NodeResourcesFitArgs::default()).events_to_register();
        let hint = events[1].hint.clone().expect("hint");
        let pod = testing::pod("p", &[("cpu", "2")]);
        let small = testing::node("n", &[("cpu", "1"), ("pods", "10")], &[]);
        let big = testing::node("n", &[("cpu", "4"), ("pods", "10")], &[]);
        let big_more_memory =
            testing::node("n", &[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")], &[]);
        assert_eq!(hint(&pod, None, Some(&big)), QueueingHint::Queue);
        assert_eq!(hint(&pod, None, Some(&small)), QueueingHint::Skip);
        assert_eq!(hint(&pod, Some(&small), Some(&big)), QueueingHint::Queue);
        // Memory grew, but the pod asks only for cpu.
        assert_eq!(
            hint(&pod, Some(&big), Some(&big_more_memory)),
            QueueingHint::Skip
        );
    }

    #[test]
    fn pod_hint() {
        let events = fit(NodeResourcesFitArgs::default()).events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let pod = testing::pod("p", &[("cpu", "2")]);
        let mut assigned = testing::pod("q", &[("cpu", "2")]);
        if let Some(s) = assigned.spec.as_mut() {
            s.node_name = Some("n".into());
        }
        let unassigned = testing::pod("q", &[("cpu", "2")]);
        assert_eq!(hint(&pod, Some(&assigned), None), QueueingHint::Queue);
        assert_eq!(hint(&pod, Some(&unassigned), None), QueueingHint::Skip);
        let mut smaller = assigned.clone();
        if let Some(s) = smaller.spec.as_mut() {
            s.containers[0].resources = Some(k8s_openapi::api::core::v1::ResourceRequirements {
                requests: Some(testing::resources(&[("cpu", "1")])),
                ..Default::default()
            });
        }
        assert_eq!(
            hint(&pod, Some(&assigned), Some(&smaller)),
            QueueingHint::Queue
        );
        assert_eq!(
            hint(&pod, Some(&smaller), Some(&assigned)),
            QueueingHint::Skip
        );
    }
}
