//! Finding nodes where preemption would let the pod fit (upstream's findCandidates and
//! DryRunPreemption) and picking the one that hurts least (pickOneNodeForPreemption).

use super::pdb::Budget;
use super::victims::{Victims, select_victims_on_node, start_time};
use crate::framework::{
    Code, CycleState, Framework, NodeInfo, NodeToStatus, PodInfo, Snapshot, Status,
};
use jiff::Timestamp;
use std::collections::HashMap;
use std::sync::Arc;

/// The reason given for every node the dry run did not try or found a candidate on.
pub const NOT_HELPFUL_REASON: &str = "Preemption is not helpful for scheduling";

/// A node where removing `victims` lets the pod fit.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub node_name: String,
    pub victims: Victims,
}

/// Nodes that Filter rejected as Unschedulable (not unresolvable), in snapshot order; a node
/// absent from `filtered` was never tried (a PreFilter result left it out) and counts as
/// unresolvable.
pub fn potential_nodes(snapshot: &Snapshot, filtered: &NodeToStatus) -> Vec<Arc<NodeInfo>> {
    snapshot
        .node_info_list
        .iter()
        .filter(|n| {
            filtered
                .get(n.node_name())
                .is_some_and(|s| s.code == Code::Unschedulable)
        })
        .cloned()
        .collect()
}

/// How many candidates to look for among `num_nodes` potential nodes: a percentage of them,
/// at least an absolute number, at most all of them.
pub fn num_candidates(num_nodes: usize, min_percentage: i32, min_absolute: i32) -> usize {
    let pct = usize::try_from(min_percentage.max(0)).unwrap_or(0);
    let abs = usize::try_from(min_absolute.max(0)).unwrap_or(0);
    (num_nodes.saturating_mul(pct) / 100)
        .max(abs)
        .min(num_nodes)
}

/// The dry run's findings: candidates (PDB-respecting first) and why the other tried nodes
/// failed.
#[derive(Debug, Default)]
pub struct DryRunResult {
    pub candidates: Vec<Candidate>,
    pub node_statuses: NodeToStatus,
    /// Internal errors met on some nodes; they matter only when no candidate was found.
    pub errors: Vec<String>,
}

/// One preemptor's dry run: the framework and cycle state it runs against, the PDBs, and the
/// time that stands in for "not started yet".
pub struct Simulation<'a> {
    pub fw: &'a Framework,
    pub state: &'a CycleState,
    pub preemptor: &'a PodInfo,
    pub budgets: &'a [Budget],
    pub now: Timestamp,
}

impl Simulation<'_> {
    /// Victims on one node, on copies of the node and the cycle state.
    pub fn victims_on(&self, info: &NodeInfo) -> Result<Victims, Status> {
        let mut node = info.clone();
        let mut state = self.state.clone();
        select_victims_on_node(
            self.fw,
            &mut state,
            self.preemptor,
            &mut node,
            self.budgets,
            self.now,
        )
    }

    /// Tries the potential nodes from `offset` on (wrapping), in parallel batches, until
    /// `wanted` candidates are found with at least one that violates no PDB. The result is the
    /// one a node-by-node run would give: within a batch, nodes past the stopping point are
    /// dropped.
    pub fn dry_run(
        &self,
        potential: &[Arc<NodeInfo>],
        offset: usize,
        wanted: usize,
    ) -> DryRunResult {
        let n = potential.len();
        let mut out = DryRunResult::default();
        if n == 0 {
            return out;
        }
        let mut non_violating = Vec::new();
        let mut violating = Vec::new();
        // Batches large enough to keep the pool busy, small enough not to try many more nodes
        // than needed when candidates are plentiful.
        let batch = wanted.max(32);
        let mut start = 0;
        'batches: while start < n {
            let end = (start + batch).min(n);
            let results = self.fw.parallelizer().map(end - start, |i| {
                let info = &potential[(offset + start + i) % n];
                (info.node_name().to_string(), self.victims_on(info))
            });
            for (name, r) in results {
                match r {
                    Ok(v) if !v.pods.is_empty() => {
                        let c = Candidate {
                            node_name: name,
                            victims: v,
                        };
                        if c.victims.num_pdb_violations == 0 {
                            non_violating.push(c);
                        } else {
                            violating.push(c);
                        }
                        if !non_violating.is_empty()
                            && non_violating.len() + violating.len() >= wanted
                        {
                            break 'batches;
                        }
                    }
                    Ok(_) => {
                        let s = Status::error(format!(
                            "expected at least one victim pod on node {name:?}"
                        ));
                        out.errors.push(s.message());
                        out.node_statuses.insert(name, s);
                    }
                    Err(s) => {
                        if s.code == Code::Error {
                            out.errors.push(s.message());
                        }
                        out.node_statuses.insert(name, s);
                    }
                }
            }
            start = end;
        }
        out.candidates = non_violating;
        out.candidates.append(&mut violating);
        out
    }
}

/// Upstream's pickOneNodeForPreemption: each criterion in turn keeps the best-scoring nodes
/// until one is left; ties after all of them go to the first candidate.
pub fn pick_one(candidates: &[Candidate], now: Timestamp) -> Option<usize> {
    type Score = fn(&Victims, Timestamp) -> i128;
    let criteria: [Score; 5] = [
        // Fewest PDB violations.
        |v, _| -(v.num_pdb_violations as i128),
        // Lowest priority of the most important victim.
        |v, _| -i128::from(v.pods.first().map_or(0, |p| p.priority())),
        // Smallest sum of priorities, each shifted to be non-negative so that many
        // negative-priority victims do not beat a few of the same priority.
        |v, _| {
            -v.pods
                .iter()
                .map(|p| i128::from(p.priority()) + i128::from(i32::MAX) + 1)
                .sum::<i128>()
        },
        // Fewest victims.
        |v, _| -(v.pods.len() as i128),
        // Latest start among the most important victims: disrupt the youngest work.
        |v, now| earliest_start_of_top_priority(v, now).map_or(i128::MIN, |t| t.as_nanosecond()),
    ];
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    for score in criteria {
        if remaining.len() <= 1 {
            break;
        }
        let scores: Vec<i128> = remaining
            .iter()
            .map(|&i| score(&candidates[i].victims, now))
            .collect();
        let best = scores.iter().copied().max().unwrap_or(i128::MIN);
        remaining = remaining
            .into_iter()
            .zip(scores)
            .filter(|(_, s)| *s == best)
            .map(|(i, _)| i)
            .collect();
    }
    remaining.first().copied()
}

/// The earliest start time among the victims of the highest priority.
fn earliest_start_of_top_priority(v: &Victims, now: Timestamp) -> Option<Timestamp> {
    let top = v.pods.iter().map(|p| p.priority()).max()?;
    v.pods
        .iter()
        .filter(|p| p.priority() == top)
        .map(|p| start_time(p, now))
        .min()
}

/// Upstream's FitError message for a preemption that found no candidate: "0/N nodes are
/// available: <count> <reason>, ... ." where nodes without a status of their own get
/// [`NOT_HELPFUL_REASON`].
pub fn no_candidate_message(num_all_nodes: usize, statuses: &NodeToStatus) -> String {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for s in statuses.values() {
        for r in &s.reasons {
            *counts.entry(r.as_str()).or_default() += 1;
        }
    }
    let absent = num_all_nodes.saturating_sub(statuses.len());
    if absent > 0 {
        *counts.entry(NOT_HELPFUL_REASON).or_default() += absent;
    }
    let mut reasons: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    reasons.sort();
    let mut msg = format!("0/{num_all_nodes} nodes are available:");
    if !reasons.is_empty() {
        msg.push(' ');
        msg.push_str(&reasons.join(", "));
        msg.push('.');
    }
    msg
}
