//! Upstream's SelectVictimsOnNode: the fewest, least important pods to remove from one node so
//! that the preemptor fits there, run on copies of the node and the cycle state.

use super::pdb::{Budget, split_by_violation};
use crate::framework::{CycleState, Framework, NodeInfo, PodInfo, Status};
use jiff::Timestamp;
use std::cmp::Ordering;
use std::sync::Arc;

pub const NO_VICTIMS_REASON: &str = "No preemption victims found for incoming pod";

/// The pods to remove from one node, most important first, and how many of them break a PDB.
#[derive(Debug, Clone, Default)]
pub struct Victims {
    pub pods: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: usize,
}

/// When the pod started; one not started yet counts as starting `now`, as upstream.
pub fn start_time(pod: &PodInfo, now: Timestamp) -> Timestamp {
    pod.pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(now, |t| t.0)
}

/// Upstream's MoreImportantPod as an ordering: higher priority first, then the longer running.
pub fn importance_order(a: &PodInfo, b: &PodInfo, now: Timestamp) -> Ordering {
    b.priority()
        .cmp(&a.priority())
        .then_with(|| start_time(a, now).cmp(&start_time(b, now)))
}

/// What the dry run does to a node copy: remove or add a pod and let PreFilter state follow.
struct DryRun<'a> {
    fw: &'a Framework,
    state: &'a mut CycleState,
    preemptor: &'a PodInfo,
    node: &'a mut NodeInfo,
}

impl DryRun<'_> {
    fn remove(&mut self, victim: &Arc<PodInfo>) -> Result<(), Status> {
        if !self.node.remove_pod(victim.uid()) {
            return Err(Status::error(format!(
                "pod {} is not on node {}",
                victim.key,
                self.node.node_name()
            )));
        }
        let s = self.fw.run_pre_filter_extension_remove_pod(
            self.state,
            self.preemptor,
            victim,
            self.node,
        );
        if s.is_success() {
            Ok(())
        } else {
            Err(as_error(s))
        }
    }

    fn add(&mut self, victim: &Arc<PodInfo>) -> Result<(), Status> {
        self.node.add_pod(victim.clone());
        let s =
            self.fw
                .run_pre_filter_extension_add_pod(self.state, self.preemptor, victim, self.node);
        if s.is_success() {
            Ok(())
        } else {
            Err(as_error(s))
        }
    }

    fn fits(&self) -> Status {
        self.fw
            .run_filter_with_nominated_pods(self.state, self.preemptor, self.node)
    }
}

/// A failing PreFilter extension is an internal error, whatever code it chose.
fn as_error(mut s: Status) -> Status {
    s.code = crate::framework::Code::Error;
    s
}

/// Removes every lower-priority pod from `node`, checks the preemptor then fits, and gives back
/// as many as possible (PDB-violating ones first, each group most important first) while it
/// still fits. `state` and `node` must be the caller's copies: they are left as simulated.
pub fn select_victims_on_node(
    fw: &Framework,
    state: &mut CycleState,
    preemptor: &PodInfo,
    node: &mut NodeInfo,
    budgets: &[Budget],
    now: Timestamp,
) -> Result<Victims, Status> {
    let priority = preemptor.priority();
    let mut potential: Vec<Arc<PodInfo>> = node
        .pods
        .iter()
        .filter(|p| p.priority() < priority)
        .cloned()
        .collect();
    if potential.is_empty() {
        // Nothing to remove: the node stays as Filter saw it, so retrying is pointless.
        return Err(Status::unresolvable(NO_VICTIMS_REASON));
    }
    let mut sim = DryRun {
        fw,
        state,
        preemptor,
        node,
    };
    for p in &potential {
        sim.remove(p)?;
    }
    // Affinity of the preemptor to a victim is not reconsidered here (upstream's choice for
    // performance): if it does not fit with all of them gone, the node is out.
    let s = sim.fits();
    if !s.is_success() {
        return Err(s);
    }
    potential.sort_by(|a, b| importance_order(a, b, now));
    let (violating, non_violating) = split_by_violation(&potential, budgets);
    let mut victims = Victims::default();
    let mut reprieve = |sim: &mut DryRun, p: &Arc<PodInfo>| -> Result<bool, Status> {
        sim.add(p)?;
        if sim.fits().is_success() {
            return Ok(true);
        }
        sim.remove(p)?;
        victims.pods.push(p.clone());
        Ok(false)
    };
    let mut violations = 0;
    for p in &violating {
        if !reprieve(&mut sim, p)? {
            violations += 1;
        }
    }
    for p in &non_violating {
        reprieve(&mut sim, p)?;
    }
    victims.num_pdb_violations = violations;
    if !violating.is_empty() && !non_violating.is_empty() {
        // Two groups were appended one after the other; the caller wants one order.
        victims.pods.sort_by(|a, b| importance_order(a, b, now));
    }
    Ok(victims)
}
