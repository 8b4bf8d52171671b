//! The NodeResourcesBalancedAllocation plugin: prefers nodes whose resources would be used in
//! even proportions after placing the pod (1 - the standard deviation of the used fractions).

use super::resource_allocation::{ResourceAllocationScorer, Strategy};
use crate::apis::config::args::{NodeResourcesBalancedAllocationArgs, decode_args};
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, Plugin, PluginContext, PodInfo, PreScorePlugin,
    ScorePlugin, Snapshot, Status,
};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodeResourcesBalancedAllocation";
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

pub struct BalancedAllocation {
    scorer: ResourceAllocationScorer,
}

pub fn new(args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let args: NodeResourcesBalancedAllocationArgs = decode_args(args)?;
    Ok(Arc::new(BalancedAllocation::from_args(&args)))
}

/// The pod's request of each scored resource.
#[derive(Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
}

impl BalancedAllocation {
    pub fn from_args(args: &NodeResourcesBalancedAllocationArgs) -> Self {
        Self {
            scorer: ResourceAllocationScorer::new(
                &args.resources,
                true,
                Strategy::BalancedAllocation,
            ),
        }
    }
}

/// 100 * (1 - the standard deviation of requested/allocatable over the resources the node
/// has); fractions are capped at 1. Two resources need only half their difference.
pub fn balanced_resource_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let fraction = |(r, a): (&i64, &i64)| (*a != 0).then(|| (*r as f64 / *a as f64).min(1.0));
    let fractions = || requested.iter().zip(allocatable).filter_map(fraction);
    let (count, total) = fractions().fold((0usize, 0f64), |(n, t), f| (n + 1, t + f));
    let std = match count {
        0 | 1 => 0.0,
        2 => {
            let mut it = fractions();
            let (a, b) = (it.next().unwrap_or(0.0), it.next().unwrap_or(0.0));
            ((a - b) / 2.0).abs()
        }
        n => {
            let mean = total / n as f64;
            let sum: f64 = fractions().map(|f| (f - mean) * (f - mean)).sum();
            (sum / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for BalancedAllocation {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[Arc<NodeInfo>],
        _snapshot: &Snapshot,
    ) -> Status {
        let pod_requests = self.scorer.pod_requests(pod);
        // A best-effort pod would otherwise pile onto whichever node is balanced already
        // (upstream issue 129138): it is not scored here.
        if pod_requests.iter().all(|r| *r == 0) {
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { pod_requests });
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => self.scorer.score(node, &s.pod_requests),
            // PreScore may be disabled in the profile: work it out here.
            None => {
                let pod_requests = self.scorer.pod_requests(pod);
                if pod_requests.iter().all(|r| *r == 0) {
                    return (0, Status::success());
                }
                self.scorer.score(node, &pod_requests)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::config::args::ResourceSpec;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::Node;

    fn run(
        pl: &BalancedAllocation,
        pod: k8s_openapi::api::core::v1::Pod,
        nodes: Vec<(Node, Vec<k8s_openapi::api::core::v1::Pod>)>,
    ) -> Option<Vec<i64>> {
        let pi = testing::pod_info(pod);
        let infos: Vec<Arc<NodeInfo>> = nodes
            .into_iter()
            .map(|(n, pods)| Arc::new(testing::node_info(n, pods)))
            .collect();
        let mut state = CycleState::new();
        if pl
            .pre_score(&mut state, &pi, &infos, &Snapshot::default())
            .is_skip()
        {
            return None;
        }
        Some(
            infos
                .iter()
                .map(|n| {
                    let (score, s) = pl.score(&state, &pi, n);
                    assert!(s.is_success(), "{s:?}");
                    score
                })
                .collect(),
        )
    }

    fn node(name: &str, cpu: &str, mem: &str) -> Node {
        testing::node(name, &[("cpu", cpu), ("memory", mem)], &[])
    }

    #[test]
    fn score_table() {
        let pl = BalancedAllocation::from_args(&Default::default());
        // From upstream's TestNodeResourcesBalancedAllocation.
        let cases = [
            (
                "best-effort pod is skipped",
                testing::pod("p", &[]),
                vec![
                    (node("m1", "4000m", "10000"), vec![]),
                    (node("m2", "4000m", "10000"), vec![]),
                ],
                None,
            ),
            (
                "differently sized nodes",
                testing::pod("p", &[("cpu", "3000m"), ("memory", "5000")]),
                vec![
                    (node("m1", "4000m", "10000"), vec![]),
                    (node("m2", "6000m", "10000"), vec![]),
                ],
                Some(vec![87, 100]),
            ),
            (
                "existing pods count",
                testing::pod("p", &[("cpu", "1000m"), ("memory", "2000")]),
                vec![
                    (
                        node("m1", "10000m", "20000"),
                        vec![testing::pod("a", &[("cpu", "2000m"), ("memory", "1000")])],
                    ),
                    (
                        node("m2", "10000m", "20000"),
                        vec![testing::pod("b", &[("cpu", "1000m"), ("memory", "5000")])],
                    ),
                ],
                // m1: cpu 0.3, mem 0.15 -> 92; m2: cpu 0.2, mem 0.35 -> 92.
                Some(vec![92, 92]),
            ),
            (
                "over-committed fractions are capped",
                testing::pod("p", &[("cpu", "6000m"), ("memory", "0")]),
                vec![(node("m1", "4000m", "10000"), vec![])],
                Some(vec![50]),
            ),
        ];
        for (name, pod, nodes, want) in cases {
            assert_eq!(run(&pl, pod, nodes), want, "{name}");
        }
    }

    #[test]
    fn three_resources_use_the_standard_deviation() {
        let pl = BalancedAllocation::from_args(&NodeResourcesBalancedAllocationArgs {
            resources: ["cpu", "memory", "example.com/gpu"]
                .iter()
                .map(|n| ResourceSpec {
                    name: n.to_string(),
                    weight: 1,
                })
                .collect(),
            ..Default::default()
        });
        let pod = testing::pod(
            "p",
            &[
                ("cpu", "6000m"),
                ("memory", "5000"),
                ("example.com/gpu", "4"),
            ],
        );
        let n = testing::node(
            "m",
            &[
                ("cpu", "10000m"),
                ("memory", "10000"),
                ("example.com/gpu", "10"),
            ],
            &[],
        );
        // Fractions 0.6, 0.5, 0.4: std = sqrt(0.02 / 3) = 0.0816.
        assert_eq!(run(&pl, pod, vec![(n, vec![])]), Some(vec![91]));
        // A node without the extended resource scores on cpu and memory only.
        let pod = testing::pod(
            "p",
            &[
                ("cpu", "6000m"),
                ("memory", "5000"),
                ("example.com/gpu", "4"),
            ],
        );
        assert_eq!(
            run(&pl, pod, vec![(node("m", "10000m", "10000"), vec![])]),
            Some(vec![95])
        );
    }

    #[test]
    fn formula() {
        assert_eq!(balanced_resource_score(&[3000, 5000], &[4000, 10000]), 87);
        assert_eq!(balanced_resource_score(&[0, 0], &[0, 0]), 100);
        assert_eq!(balanced_resource_score(&[5, 0], &[10, 0]), 100);
    }
}
