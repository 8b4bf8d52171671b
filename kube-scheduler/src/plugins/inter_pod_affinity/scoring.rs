//! PreScore sums, per topology domain, the weights of the incoming pod's preferred terms that
//! existing pods match, and of existing pods' terms the incoming pod matches; Score adds the
//! sums of a node's domains.

use super::{InterPodAffinity, ResolvedTerm, TopologyCounts, existing_term_matches};
use crate::framework::pod_info::AffinityTerm;
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status,
};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

#[derive(Debug, Clone)]
pub(super) struct PreScoreState {
    pub topology_score: TopologyCounts,
}

struct Weighted {
    term: ResolvedTerm,
    weight: i64,
}

/// What every node's pass reads: the incoming pod's resolved preferred terms and facts.
struct Ctx<'a> {
    incoming: &'a PodInfo,
    ns_labels: BTreeMap<String, String>,
    preferred: Vec<Weighted>,
    preferred_anti: Vec<Weighted>,
    hard_weight: i64,
}

fn add(m: &mut TopologyCounts, key: &str, value: &str, delta: i64) {
    // Zero sums stay: a domain that cancelled out still scores (as upstream's map).
    if let Some(inner) = m.get_mut(key) {
        if let Some(n) = inner.get_mut(value) {
            *n += delta;
        } else {
            inner.insert(value.to_string(), delta);
        }
    } else {
        m.entry(key.to_string())
            .or_default()
            .insert(value.to_string(), delta);
    }
}

fn merge(into: &mut TopologyCounts, from: TopologyCounts) {
    for (k, values) in from {
        for (v, n) in values {
            add(into, &k, &v, n);
        }
    }
}

impl Ctx<'_> {
    fn process_existing_pod(
        &self,
        m: &mut TopologyCounts,
        existing: &PodInfo,
        labels: &BTreeMap<String, String>,
    ) {
        let mut credit = |key: &str, delta: i64| {
            if let Some(v) = labels.get(key) {
                add(m, key, v, delta);
            }
        };
        for w in &self.preferred {
            if w.term.matches(existing) {
                credit(&w.term.topology_key, w.weight);
            }
        }
        for w in &self.preferred_anti {
            if w.term.matches(existing) {
                credit(&w.term.topology_key, -w.weight);
            }
        }
        let matches = |t: &AffinityTerm| existing_term_matches(t, self.incoming, &self.ns_labels);
        if self.hard_weight > 0 {
            for t in &existing.required_affinity_terms {
                if matches(t) {
                    credit(&t.topology_key, self.hard_weight);
                }
            }
        }
        for w in &existing.preferred_affinity_terms {
            if matches(&w.term) {
                credit(&w.term.topology_key, i64::from(w.weight));
            }
        }
        for w in &existing.preferred_anti_affinity_terms {
            if matches(&w.term) {
                credit(&w.term.topology_key, -i64::from(w.weight));
            }
        }
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        snapshot: &Snapshot,
    ) -> Status {
        if nodes.is_empty() {
            return Status::skip();
        }
        let has_constraints = !pod.preferred_affinity_terms.is_empty()
            || !pod.preferred_anti_affinity_terms.is_empty();
        if self.args.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        // Without preferred terms of its own, only pods with affinity terms can score the pod.
        let all_nodes = if has_constraints {
            &snapshot.node_info_list
        } else {
            &snapshot.have_pods_with_affinity_list
        };
        if all_nodes.is_empty() {
            return Status::skip();
        }
        let weighted = |terms: &[crate::framework::pod_info::WeightedAffinityTerm]| {
            terms
                .iter()
                .map(|w| Weighted {
                    term: self.resolve(&w.term),
                    weight: i64::from(w.weight),
                })
                .collect::<Vec<_>>()
        };
        let ctx = Ctx {
            incoming: pod,
            ns_labels: self.namespace_labels(pod.namespace()),
            preferred: weighted(&pod.preferred_affinity_terms),
            preferred_anti: weighted(&pod.preferred_anti_affinity_terms),
            hard_weight: i64::from(self.args.hard_pod_affinity_weight),
        };
        let topology_score = self.parallelizer.install(|| {
            all_nodes
                .par_iter()
                .fold(TopologyCounts::new, |mut m, info| {
                    let Some(labels) = info
                        .node
                        .as_deref()
                        .and_then(|n| n.metadata.labels.as_ref())
                    else {
                        return m;
                    };
                    if labels.is_empty() {
                        return m;
                    }
                    let pods = if has_constraints {
                        &info.pods
                    } else {
                        &info.pods_with_affinity
                    };
                    for existing in pods {
                        ctx.process_existing_pod(&mut m, existing, labels);
                    }
                    m
                })
                .reduce(TopologyCounts::new, |mut a, b| {
                    merge(&mut a, b);
                    a
                })
        });
        if topology_score.is_empty() {
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { topology_score });
        Status::success()
    }
}

fn not_found() -> Status {
    Status::state_not_found(PRE_SCORE_STATE_KEY)
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return (0, not_found());
        };
        let Some(labels) = node
            .node
            .as_deref()
            .and_then(|n| n.metadata.labels.as_ref())
        else {
            return (0, Status::success());
        };
        let score = s
            .topology_score
            .iter()
            .filter_map(|(key, values)| labels.get(key).and_then(|v| values.get(v)))
            .sum();
        (score, Status::success())
    }

    /// Min-max scaling to 0..=100 (all equal: all 0).
    fn normalize_score(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return not_found();
        };
        if s.topology_score.is_empty() {
            return Status::success();
        }
        let min = scores.iter().map(|n| n.score).min().unwrap_or(0);
        let max = scores.iter().map(|n| n.score).max().unwrap_or(0);
        let diff = max - min;
        for n in scores.iter_mut() {
            n.score = if diff > 0 {
                (MAX_NODE_SCORE as f64 * ((n.score - min) as f64 / diff as f64)) as i64
            } else {
                0
            };
        }
        Status::success()
    }
}
