//! PreFilter counts the pods each hard constraint selects per topology domain over all nodes;
//! Filter then only compares one node's domain against the smallest domains.

use super::PodTopologySpread;
use super::common::{
    Constraint, DO_NOT_SCHEDULE, RequiredNodeAffinity, count_matching, node_has_all_keys,
    node_labels,
};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterExtensions, PreFilterResult, Snapshot,
    Status,
};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterPodTopologySpread";
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// The two smallest domains of a constraint: the minimum, and its runner-up so the minimum
/// can move when preemption adds a pod there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CriticalPaths([(String, usize); 2]);

impl CriticalPaths {
    fn new() -> Self {
        // Upstream's MaxInt32 sentinel: any real domain count replaces it.
        const UNSET: usize = i32::MAX as usize;
        Self([(String::new(), UNSET), (String::new(), UNSET)])
    }

    fn update(&mut self, value: &str, num: usize) {
        let p = &mut self.0;
        if let Some(i) = p.iter().position(|(v, _)| v == value) {
            p[i].1 = num;
            if p[0].1 > p[1].1 {
                p.swap(0, 1);
            }
        } else if num < p[0].1 {
            p[1] = std::mem::replace(&mut p[0], (value.to_string(), num));
        } else if num < p[1].1 {
            p[1] = (value.to_string(), num);
        }
    }

    fn min(&self) -> usize {
        self.0[0].1
    }
}

#[derive(Debug, Clone)]
pub(super) struct PreFilterState {
    pub constraints: Vec<Constraint>,
    /// Per constraint: whether the incoming pod itself is selected (it adds one to its domain).
    self_match: Vec<bool>,
    pub critical_paths: Vec<CriticalPaths>,
    /// Per constraint: topology value to matching pods.
    pub tp_value_to_match_num: Vec<HashMap<String, usize>>,
    required_affinity: RequiredNodeAffinity,
}

impl PreFilterState {
    /// The global minimum, 0 while fewer domains than `minDomains` exist.
    fn min_match_num(&self, i: usize) -> usize {
        if self.tp_value_to_match_num[i].len() < self.constraints[i].min_domains.max(0) as usize {
            return 0;
        }
        self.critical_paths[i].min()
    }

    fn update_with_pod(
        &mut self,
        updated: &PodInfo,
        preemptor: &PodInfo,
        node: &NodeInfo,
        delta: isize,
    ) {
        let Some(node) = node.node.as_deref() else {
            return;
        };
        if updated.namespace() != preemptor.namespace() {
            return;
        }
        let labels = node_labels(node);
        if !node_has_all_keys(labels, &self.constraints) {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(updated.labels())
                || !c.includes_node(&preemptor.pod, node, &self.required_affinity)
            {
                continue;
            }
            let Some(value) = labels.get(&c.topology_key) else {
                continue;
            };
            let n = self.tp_value_to_match_num[i]
                .entry(value.clone())
                .or_default();
            *n = n.saturating_add_signed(delta);
            let n = *n;
            self.critical_paths[i].update(value, n);
        }
    }
}

impl PodTopologySpread {
    pub(super) fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints(&pod.pod, DO_NOT_SCHEDULE) {
            Ok(c) => c,
            Err(e) => {
                return (
                    None,
                    Status::error(format!("get constraints from pod: {e}")),
                );
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        let required_affinity = RequiredNodeAffinity::from_pod(&pod.pod);
        let nodes = &snapshot.node_info_list;
        let ns = pod.namespace();
        // Each worker sums its nodes into its own maps; borrowed values avoid a String per node.
        let counts: Vec<HashMap<&str, usize>> = self.parallelizer.install(|| {
            nodes
                .par_iter()
                .with_min_len(32)
                .fold(
                    || vec![HashMap::new(); constraints.len()],
                    |mut acc: Vec<HashMap<&str, usize>>, info: &Arc<NodeInfo>| {
                        let Some(node) = info.node.as_deref() else {
                            return acc;
                        };
                        let labels = node_labels(node);
                        if !node_has_all_keys(labels, &constraints) {
                            return acc;
                        }
                        for (i, c) in constraints.iter().enumerate() {
                            if !c.includes_node(&pod.pod, node, &required_affinity) {
                                continue;
                            }
                            let Some(value) = labels.get(&c.topology_key) else {
                                continue;
                            };
                            *acc[i].entry(value.as_str()).or_default() +=
                                count_matching(&info.pods, &c.selector, ns);
                        }
                        acc
                    },
                )
                .reduce(
                    || vec![HashMap::new(); constraints.len()],
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
        let tp_value_to_match_num: Vec<HashMap<String, usize>> = counts
            .into_iter()
            .map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            .collect();
        let critical_paths = tp_value_to_match_num
            .iter()
            .map(|m| {
                let mut p = CriticalPaths::new();
                for (v, n) in m {
                    p.update(v, *n);
                }
                p
            })
            .collect();
        let self_match = constraints
            .iter()
            .map(|c| c.selector.matches(pod.labels()))
            .collect();
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                constraints,
                self_match,
                critical_paths,
                tp_value_to_match_num,
                required_affinity,
            },
        );
        (None, Status::success())
    }
}

fn not_found() -> Status {
    Status::state_not_found(PRE_FILTER_STATE_KEY)
}

impl PreFilterExtensions for PodTopologySpread {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return not_found();
        };
        s.update_with_pod(pod_to_add, pod_to_schedule, node, 1);
        Status::success()
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return not_found();
        };
        s.update_with_pod(pod_to_remove, pod_to_schedule, node, -1);
        Status::success()
    }
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return not_found();
        };
        let Some(node) = node.node.as_deref() else {
            return Status::error("node not found");
        };
        let labels = node_labels(node);
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            };
            let match_num = s.tp_value_to_match_num[i].get(value).copied().unwrap_or(0);
            let skew =
                (match_num + usize::from(s.self_match[i])) as i64 - s.min_match_num(i) as i64;
            if skew > i64::from(c.max_skew) {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}
