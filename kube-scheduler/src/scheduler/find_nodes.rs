//! The CPU-bound half of a scheduling cycle: which nodes pass Filter (stopping once enough are
//! found, as upstream's adaptive `percentageOfNodesToScore`), their scores, and the winner.

use crate::framework::{CycleState, Framework, NodeInfo, NodeToStatus, PodInfo, Snapshot, Status};
use rand::Rng;
use std::collections::HashSet;
use std::sync::Arc;

/// Upstream's floor: at least this many feasible nodes are looked for when there are more.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream's floor of the adaptive percentage.
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// Why a pod fits nowhere: each rejecting node's status and the plugins that rejected it.
#[derive(Debug, Default, Clone)]
pub struct Diagnosis {
    pub node_to_status: NodeToStatus,
    /// The status of nodes not in `node_to_status` (all of them when PreFilter rejected the
    /// pod, or those a PreFilter result left out).
    pub absent_nodes_status: Option<Status>,
    pub unschedulable_plugins: HashSet<String>,
    pub pre_filter_msg: String,
    pub post_filter_msg: String,
}

/// How many feasible nodes to find before scoring, as upstream's `numFeasibleNodesToFind`.
pub fn num_feasible_nodes_to_find(percentage: i32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return num_all_nodes;
    }
    let mut adaptive = i64::from(percentage);
    if adaptive <= 0 {
        adaptive = 50 - (num_all_nodes as i64) / 125;
        adaptive = adaptive.max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let n = (num_all_nodes as i64 * adaptive / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// The feasible nodes for `pod`, or the diagnosis when there are none (an `Err` is an
/// internal error of some plugin, not a rejection).
pub fn find_nodes_that_fit(
    fw: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    next_start_node_index: &mut usize,
    percentage: i32,
) -> Result<(Vec<Arc<NodeInfo>>, Diagnosis), Status> {
    let mut diagnosis = Diagnosis::default();
    let (pre_result, status, narrowing) = fw.run_pre_filter_naming(state, pod, snapshot);
    if !status.is_success() {
        if !status.is_rejected() {
            return Err(status);
        }
        diagnosis.pre_filter_msg = status.message();
        diagnosis
            .unschedulable_plugins
            .insert(status.plugin.clone());
        diagnosis.absent_nodes_status = Some(status);
        return Ok((Vec::new(), diagnosis));
    }

    // A pod nominated by an earlier preemption tries its nominated node first.
    if let Some(nominated) = pod
        .pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty())
        && let Some(node) = snapshot.get(nominated)
        && pre_result
            .as_ref()
            .is_none_or(|r| r.node_names.as_ref().is_none_or(|n| n.contains(nominated)))
        && fw
            .run_filter_with_nominated_pods(state, pod, node)
            .is_success()
    {
        return Ok((vec![node.clone()], diagnosis));
    }

    let restricted: Option<Vec<Arc<NodeInfo>>> = pre_result
        .as_ref()
        .and_then(|r| r.node_names.as_ref())
        .map(|names| {
            snapshot
                .node_info_list
                .iter()
                .filter(|n| names.contains(n.node_name()))
                .cloned()
                .collect()
        });
    if restricted.is_some() {
        diagnosis.absent_nodes_status = Some(Status::unresolvable(format!(
            "node(s) didn't satisfy plugin(s) [{}]",
            narrowing.join(" ")
        )));
    }
    let nodes: &[Arc<NodeInfo>] = restricted.as_deref().unwrap_or(&snapshot.node_info_list);
    let total = nodes.len();
    if total == 0 {
        return Ok((Vec::new(), diagnosis));
    }
    let to_find = num_feasible_nodes_to_find(percentage, total);
    let start = *next_start_node_index % total;
    let state: &CycleState = state;

    if fw
        .list_plugins(crate::apis::config::ExtensionPoint::Filter)
        .is_empty()
    {
        let feasible = (0..to_find)
            .map(|i| nodes[(start + i) % total].clone())
            .collect();
        *next_start_node_index = (start + to_find) % total;
        return Ok((feasible, diagnosis));
    }

    let nominations = fw.ctx.nominator().is_some_and(|n| n.has_nominated_pods());
    let mut feasible: Vec<Arc<NodeInfo>> = Vec::with_capacity(to_find);
    let mut processed = 0;
    while processed < total && feasible.len() < to_find {
        // Enough for what is still missing plus a margin for rejections, so one parallel
        // round usually suffices without filtering far more nodes than needed.
        let want = to_find - feasible.len();
        let chunk = (want + want / 4 + 16).min(total - processed);
        let results = fw.parallelizer().map(chunk, |i| {
            let node = &nodes[(start + processed + i) % total];
            if nominations {
                fw.run_filter_with_nominated_pods(state, pod, node)
            } else {
                fw.run_filter(state, pod, node)
            }
        });
        for (i, status) in results.into_iter().enumerate() {
            let node = &nodes[(start + processed + i) % total];
            if status.is_success() {
                if feasible.len() < to_find {
                    feasible.push(node.clone());
                }
            } else if status.is_rejected() {
                diagnosis
                    .unschedulable_plugins
                    .insert(status.plugin.clone());
                diagnosis
                    .node_to_status
                    .insert(node.node_name().to_string(), status);
            } else {
                return Err(status);
            }
        }
        processed += chunk;
    }
    *next_start_node_index = (start + processed) % total;
    Ok((feasible, diagnosis))
}

/// Scores the feasible nodes and picks the best, breaking ties at random (upstream's
/// reservoir sampling), so equal nodes share the load.
pub fn prioritize_and_select(
    fw: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    feasible: &[Arc<NodeInfo>],
    snapshot: &Snapshot,
) -> Result<String, Status> {
    if feasible.len() == 1 || !fw.has_score_plugins() {
        return Ok(feasible[0].node_name().to_string());
    }
    let s = fw.run_pre_score(state, pod, feasible, snapshot);
    if !s.is_success() {
        return Err(s);
    }
    let totals = fw.run_score(state, pod, feasible)?;
    let mut rng = rand::rng();
    let mut best = 0;
    let mut ties = 1u32;
    for (i, &total) in totals.iter().enumerate().skip(1) {
        let top = totals[best];
        if total > top {
            best = i;
            ties = 1;
        } else if total == top {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best = i;
            }
        }
    }
    Ok(feasible[best].node_name().to_string())
}

/// Upstream's `FitError.Error()`: "0/N nodes are available: <sorted reason histogram>." and
/// the PostFilter (preemption) message after it.
pub fn fit_error_message(num_all_nodes: usize, d: &Diagnosis) -> String {
    let mut msg = format!("0/{num_all_nodes} nodes are available:");
    if !d.pre_filter_msg.is_empty() {
        msg.push_str(&format!(" {}.", d.pre_filter_msg));
    } else {
        let mut counts: std::collections::HashMap<&str, usize> = Default::default();
        for status in d.node_to_status.values() {
            for r in &status.reasons {
                *counts.entry(r.as_str()).or_default() += 1;
            }
        }
        let absent = num_all_nodes.saturating_sub(d.node_to_status.len());
        if absent > 0
            && let Some(s) = &d.absent_nodes_status
        {
            for r in &s.reasons {
                *counts.entry(r.as_str()).or_default() += absent;
            }
        }
        let mut reasons: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
        reasons.sort();
        if !reasons.is_empty() {
            msg.push_str(&format!(" {}.", reasons.join(", ")));
        }
    }
    // The PostFilter message ends in its own period (upstream v1.33 adds none here).
    if !d.post_filter_msg.is_empty() {
        msg.push(' ');
        msg.push_str(&d.post_filter_msg);
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_number_of_nodes_to_find() {
        // (percentage, nodes, expected), upstream's numFeasibleNodesToFind cases.
        for (pct, nodes, want) in [
            (0, 10, 10),
            (0, 100, 100),
            (0, 1000, 420),
            (0, 5000, 500),
            (0, 6000, 300),
            (0, 10000, 500),
            (40, 1000, 400),
            (10, 500, 100),
            (100, 6000, 6000),
            (0, 200, 100),
        ] {
            assert_eq!(
                num_feasible_nodes_to_find(pct, nodes),
                want,
                "{pct}% of {nodes}"
            );
        }
    }

    #[test]
    fn fit_error_histogram_is_sorted_and_counts_absent_nodes() {
        let mut d = Diagnosis::default();
        d.node_to_status.insert(
            "a".into(),
            Status::unresolvable("node(s) had untolerated taint {k: v}"),
        );
        d.node_to_status
            .insert("b".into(), Status::unschedulable("Insufficient cpu"));
        d.node_to_status
            .insert("c".into(), Status::unschedulable("Insufficient cpu"));
        d.post_filter_msg =
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
                .into();
        assert_eq!(
            fit_error_message(3, &d),
            "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu. \
             preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        );
        let d = Diagnosis {
            pre_filter_msg: "pod has unbound immediate PersistentVolumeClaims".into(),
            ..Default::default()
        };
        assert_eq!(
            fit_error_message(2, &d),
            "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        );
    }
}
