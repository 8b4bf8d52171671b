//! PreFilter counts, per topology domain, the existing pods whose required anti-affinity
//! rejects the incoming pod and the existing pods its own required terms select; Filter then
//! only looks a node's labels up in those counts.

use super::{
    InterPodAffinity, ResolvedTerm, TopologyCounts, add_count, existing_term_matches, matches_all,
    merge_counts,
};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterExtensions, PreFilterResult, Snapshot,
    Status,
};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";

#[derive(Debug, Clone, Default)]
pub(super) struct PreFilterState {
    /// Domains holding an existing pod whose required anti-affinity selects the incoming pod.
    pub existing_anti_affinity_counts: TopologyCounts,
    /// Domains holding pods that match all the incoming pod's required affinity terms.
    pub affinity_counts: TopologyCounts,
    /// Domains holding pods that match one of the incoming pod's required anti-affinity terms.
    pub anti_affinity_counts: TopologyCounts,
    affinity_terms: Vec<ResolvedTerm>,
    anti_affinity_terms: Vec<ResolvedTerm>,
    /// The incoming pod matches all its own affinity terms (it may found a new group).
    self_matches_affinity: bool,
    namespace_labels: BTreeMap<String, String>,
}

fn node_label<'a>(node: &'a NodeInfo, key: &str) -> Option<&'a str> {
    node.node
        .as_deref()
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

impl PreFilterState {
    /// Counts `existing` (on `node`) into the three maps with `delta`.
    fn count_pod(&mut self, existing: &PodInfo, incoming: &PodInfo, node: &NodeInfo, delta: i64) {
        count_existing_anti_affinity(
            &mut self.existing_anti_affinity_counts,
            existing,
            incoming,
            &self.namespace_labels,
            node,
            delta,
        );
        count_incoming_terms(
            &mut self.affinity_counts,
            &mut self.anti_affinity_counts,
            &self.affinity_terms,
            &self.anti_affinity_terms,
            existing,
            node,
            delta,
        );
    }
}

fn count_existing_anti_affinity(
    m: &mut TopologyCounts,
    existing: &PodInfo,
    incoming: &PodInfo,
    ns_labels: &BTreeMap<String, String>,
    node: &NodeInfo,
    delta: i64,
) {
    for t in &existing.required_anti_affinity_terms {
        if existing_term_matches(t, incoming, ns_labels)
            && let Some(v) = node_label(node, &t.topology_key)
        {
            add_count(m, &t.topology_key, v, delta);
        }
    }
}

fn count_incoming_terms(
    affinity: &mut TopologyCounts,
    anti_affinity: &mut TopologyCounts,
    affinity_terms: &[ResolvedTerm],
    anti_affinity_terms: &[ResolvedTerm],
    existing: &PodInfo,
    node: &NodeInfo,
    delta: i64,
) {
    // Affinity is satisfied by one pod matching every term, so count only such pods.
    if matches_all(affinity_terms, existing) {
        for t in affinity_terms {
            if let Some(v) = node_label(node, &t.topology_key) {
                add_count(affinity, &t.topology_key, v, delta);
            }
        }
    }
    for t in anti_affinity_terms {
        if t.matches(existing)
            && let Some(v) = node_label(node, &t.topology_key)
        {
            add_count(anti_affinity, &t.topology_key, v, delta);
        }
    }
}

fn count_of(m: &TopologyCounts, key: &str, value: &str) -> i64 {
    m.get(key).and_then(|v| v.get(value)).copied().unwrap_or(0)
}

impl InterPodAffinity {
    pub(super) fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let with_anti = &snapshot.have_pods_with_required_anti_affinity_list;
        if with_anti.is_empty()
            && pod.required_affinity_terms.is_empty()
            && pod.required_anti_affinity_terms.is_empty()
        {
            return (None, Status::skip());
        }
        let namespace_labels = self.namespace_labels(pod.namespace());
        let affinity_terms: Vec<ResolvedTerm> = pod
            .required_affinity_terms
            .iter()
            .map(|t| self.resolve(t))
            .collect();
        let anti_affinity_terms: Vec<ResolvedTerm> = pod
            .required_anti_affinity_terms
            .iter()
            .map(|t| self.resolve(t))
            .collect();

        let existing_anti_affinity_counts = self.parallelizer.install(|| {
            with_anti
                .par_iter()
                .fold(TopologyCounts::new, |mut m, info| {
                    for existing in &info.pods_with_required_anti_affinity {
                        count_existing_anti_affinity(
                            &mut m,
                            existing,
                            pod,
                            &namespace_labels,
                            info,
                            1,
                        );
                    }
                    m
                })
                .reduce(TopologyCounts::new, |mut a, b| {
                    merge_counts(&mut a, b);
                    a
                })
        });

        let (affinity_counts, anti_affinity_counts) =
            if affinity_terms.is_empty() && anti_affinity_terms.is_empty() {
                Default::default()
            } else {
                self.parallelizer.install(|| {
                    snapshot
                        .node_info_list
                        .par_iter()
                        .with_min_len(32)
                        .fold(
                            || (TopologyCounts::new(), TopologyCounts::new()),
                            |(mut aff, mut anti), info| {
                                for existing in &info.pods {
                                    count_incoming_terms(
                                        &mut aff,
                                        &mut anti,
                                        &affinity_terms,
                                        &anti_affinity_terms,
                                        existing,
                                        info,
                                        1,
                                    );
                                }
                                (aff, anti)
                            },
                        )
                        .reduce(
                            || (TopologyCounts::new(), TopologyCounts::new()),
                            |(mut a1, mut a2), (b1, b2)| {
                                merge_counts(&mut a1, b1);
                                merge_counts(&mut a2, b2);
                                (a1, a2)
                            },
                        )
                })
            };

        if existing_anti_affinity_counts.is_empty()
            && affinity_terms.is_empty()
            && anti_affinity_terms.is_empty()
        {
            return (None, Status::skip());
        }
        let self_matches_affinity = matches_all(&affinity_terms, pod);
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                existing_anti_affinity_counts,
                affinity_counts,
                anti_affinity_counts,
                affinity_terms,
                anti_affinity_terms,
                self_matches_affinity,
                namespace_labels,
            },
        );
        (None, Status::success())
    }
}

fn not_found() -> Status {
    Status::state_not_found(PRE_FILTER_STATE_KEY)
}

impl PreFilterExtensions for InterPodAffinity {
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
        s.count_pod(pod_to_add, pod_to_schedule, node, 1);
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
        s.count_pod(pod_to_remove, pod_to_schedule, node, -1);
        Status::success()
    }
}

/// Every affinity term's domain on this node holds a matching pod — or no pod matches
/// anywhere and the pod matches its own terms (the first of a group).
fn satisfies_pod_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for t in &s.affinity_terms {
        let Some(v) = node_label(node, &t.topology_key) else {
            // Every topology key must be on the node.
            return false;
        };
        if count_of(&s.affinity_counts, &t.topology_key, v) <= 0 {
            pods_exist = false;
        }
    }
    pods_exist || (s.affinity_counts.is_empty() && s.self_matches_affinity)
}

fn satisfies_pod_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    s.anti_affinity_counts.is_empty()
        || s.anti_affinity_terms.iter().all(|t| {
            node_label(node, &t.topology_key)
                .is_none_or(|v| count_of(&s.anti_affinity_counts, &t.topology_key, v) <= 0)
        })
}

fn satisfies_existing_pods_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    s.existing_anti_affinity_counts.iter().all(|(key, values)| {
        node_label(node, key).is_none_or(|v| values.get(v).is_none_or(|n| *n <= 0))
    })
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return not_found();
        };
        if node.node.is_none() {
            return Status::error("node not found");
        }
        if !satisfies_pod_affinity(s, node) {
            return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfies_pod_anti_affinity(s, node) {
            return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfies_existing_pods_anti_affinity(s, node) {
            return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        Status::success()
    }
}
