//! PreScore counts the pods each soft constraint selects per domain of the feasible nodes;
//! Score weighs a node's domains, fewer matching pods meaning a better (after normalization,
//! higher) score.

use super::PodTopologySpread;
use super::common::{
    Constraint, LABEL_HOSTNAME, RequiredNodeAffinity, SCHEDULE_ANYWAY, count_matching,
    node_has_all_keys, node_labels,
};
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status,
};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub const PRE_SCORE_STATE_KEY: &str = "PreScorePodTopologySpread";

#[derive(Debug, Clone)]
pub(super) struct PreScoreState {
    pub constraints: Vec<Constraint>,
    /// Feasible nodes missing a topology key: they score 0.
    pub ignored_nodes: HashSet<String>,
    /// Per constraint (hostname constraints are counted in Score): value to matching pods.
    pub topology_value_to_pod_counts: Vec<HashMap<String, i64>>,
    /// Per constraint: log(domains + 2), so small topologies are not watered down by big ones.
    pub topology_normalizing_weight: Vec<f64>,
}

fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + f64::from(max_skew - 1)
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        snapshot: &Snapshot,
    ) -> Status {
        let all_nodes = &snapshot.node_info_list;
        if all_nodes.is_empty() {
            return Status::skip();
        }
        let constraints = match self.constraints(&pod.pod, SCHEDULE_ANYWAY) {
            Ok(c) => c,
            Err(e) => {
                return Status::error(format!(
                    "calculating preScoreState: setting soft topology spread constraints: {e}"
                ));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        // Only the system defaults tolerate nodes without a zone label (hostname spreading
        // still applies to them).
        let has_own = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_ref())
            .is_some_and(|c| !c.is_empty());
        let require_all = has_own || !self.system_defaulted;

        let mut ignored_nodes = HashSet::new();
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for info in nodes {
            let Some(node) = info.node.as_deref() else {
                continue;
            };
            let labels = node_labels(node);
            if require_all && !node_has_all_keys(labels, &constraints) {
                ignored_nodes.insert(info.node_name().to_string());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                if !counts[i].contains_key(value) {
                    counts[i].insert(value.to_string(), 0);
                }
            }
        }
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, m)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len() - ignored_nodes.len()
                } else {
                    m.len()
                };
                topology_normalizing_weight(size)
            })
            .collect();

        let required_affinity = RequiredNodeAffinity::from_pod(&pod.pod);
        let ns = pod.namespace();
        let counts_ref = &counts;
        let constraints_ref = &constraints;
        // Sums over every node (not only feasible ones) of the domains feasible nodes are in.
        let sums: Vec<HashMap<&str, i64>> = self.parallelizer.install(|| {
            all_nodes
                .par_iter()
                .with_min_len(32)
                .fold(
                    || vec![HashMap::new(); constraints_ref.len()],
                    |mut acc: Vec<HashMap<&str, i64>>, info: &Arc<NodeInfo>| {
                        let Some(node) = info.node.as_deref() else {
                            return acc;
                        };
                        let labels = node_labels(node);
                        if require_all && !node_has_all_keys(labels, constraints_ref) {
                            return acc;
                        }
                        for (i, c) in constraints_ref.iter().enumerate() {
                            if !c.includes_node(&pod.pod, node, &required_affinity) {
                                continue;
                            }
                            let value = labels.get(&c.topology_key).map_or("", String::as_str);
                            if let Some((k, _)) = counts_ref[i].get_key_value(value) {
                                *acc[i].entry(k.as_str()).or_default() +=
                                    count_matching(&info.pods, &c.selector, ns) as i64;
                            }
                        }
                        acc
                    },
                )
                .reduce(
                    || vec![HashMap::new(); constraints_ref.len()],
                    |mut a, b| {
                        for (ma, mb) in a.iter_mut().zip(b) {
                            for (k, v) in mb {
                                *ma.entry(k).or_default() += v;
                            }
                        }
                        a
                    },
                )
        });
        let sums: Vec<Vec<(String, i64)>> = sums
            .into_iter()
            .map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            .collect();
        for (m, s) in counts.iter_mut().zip(sums) {
            for (k, v) in s {
                m.insert(k, v);
            }
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                constraints,
                ignored_nodes,
                topology_value_to_pod_counts: counts,
                topology_normalizing_weight: weights,
            },
        );
        Status::success()
    }
}

fn not_found() -> Status {
    Status::state_not_found(PRE_SCORE_STATE_KEY)
}

impl ScorePlugin for PodTopologySpread {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return (0, not_found());
        };
        let Some(n) = node.node.as_deref() else {
            return (0, Status::error("node not found"));
        };
        if !s.ignored_nodes.is_empty() && s.ignored_nodes.contains(node.node_name()) {
            return (0, Status::success());
        }
        let labels = node_labels(n);
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == LABEL_HOSTNAME {
                count_matching(&node.pods, &c.selector, pod.namespace()) as i64
            } else {
                s.topology_value_to_pod_counts[i]
                    .get(value)
                    .copied()
                    .unwrap_or(0)
            };
            score += score_for_count(count, c.max_skew, s.topology_normalizing_weight[i]);
        }
        (score.round() as i64, Status::success())
    }

    /// Reverses the raw scores so the emptiest domain gets 100; ignored nodes get 0.
    fn normalize_score(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return not_found();
        };
        let ignored = |n: &NodeScore| s.ignored_nodes.contains(&*n.name);
        let mut min = i64::MAX;
        let mut max = 0;
        for n in scores.iter().filter(|n| !ignored(n)) {
            min = min.min(n.score);
            max = max.max(n.score);
        }
        for n in scores.iter_mut() {
            n.score = if ignored(n) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - n.score) / max
            };
        }
        Status::success()
    }
}
