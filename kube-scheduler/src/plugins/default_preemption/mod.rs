//! The DefaultPreemption plugin (PostFilter): when no node fits a pod, find the node where
//! evicting the fewest, least important lower-priority pods makes room, evict them and
//! nominate the node, as upstream's defaultpreemption plugin and preemption Evaluator.
//!
//! The simulation ([`DefaultPreemption::decide`]) is synchronous and touches no API; the
//! evictions ([`execute::prepare_candidate`]) happen after it.

pub mod candidates;
pub mod execute;
pub mod pdb;
pub mod victims;

#[cfg(test)]
mod tests;

use crate::apis::config::args::{DefaultPreemptionArgs, decode_args};
use crate::framework::{
    Code, CycleState, Framework, NodeToStatus, Plugin, PluginContext, PodInfo, PostFilterPlugin,
    PostFilterResult, Snapshot, Status,
};
use async_trait::async_trait;
use candidates::{Candidate, Simulation, no_candidate_message, num_candidates, pick_one};
use client_go_rs::listers::Lister;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "DefaultPreemption";

pub const NOT_ELIGIBLE_POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const NOT_ELIGIBLE_TERMINATING: &str =
    "not eligible due to a terminating pod on the nominated node.";

pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
    pdbs: Lister<PodDisruptionBudget>,
}

/// Upstream's ValidateDefaultPreemptionArgs.
fn validate(args: &DefaultPreemptionArgs) -> Result<(), String> {
    let pct = args.min_candidate_nodes_percentage;
    let abs = args.min_candidate_nodes_absolute;
    let mut errs = Vec::new();
    if !(0..=100).contains(&pct) {
        errs.push(format!(
            "minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
        ));
    }
    if abs < 0 {
        errs.push(format!(
            "minCandidateNodesAbsolute: Invalid value: {abs}: not in valid range [0, inf)"
        ));
    }
    if pct == 0 && abs == 0 {
        errs.push(
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
                .into(),
        );
        errs.push(
            "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage"
                .into(),
        );
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

pub fn new(args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let args: DefaultPreemptionArgs = decode_args(args)?;
    validate(&args)?;
    Ok(Arc::new(DefaultPreemption::with_args(args, ctx)))
}

/// What the simulation concluded.
#[derive(Debug)]
pub enum Decision {
    /// The pod may not preempt (policy, or an earlier preemption still in progress).
    NotEligible(Status),
    /// No node would fit even with victims removed. `no_potential_nodes`: no node was even
    /// worth trying, so the pod's old nomination should be cleared from its status too.
    NoCandidate {
        status: Status,
        no_potential_nodes: bool,
    },
    /// An internal error on every node tried.
    Error(Status),
    /// Evict these victims and nominate this node.
    Nominate(Candidate),
}

impl DefaultPreemption {
    pub fn with_args(args: DefaultPreemptionArgs, ctx: &PluginContext) -> Self {
        Self {
            args,
            pdbs: ctx.informers.informer::<PodDisruptionBudget>().lister(),
        }
    }

    /// Upstream's PodEligibleToPreemptOthers.
    pub fn eligible(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
    ) -> Result<(), String> {
        let spec = pod.pod.spec.as_ref();
        if spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never") {
            return Err(NOT_ELIGIBLE_POLICY_NEVER.into());
        }
        let nominated = pod
            .pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .unwrap_or_default();
        if nominated.is_empty() {
            return Ok(());
        }
        // The nominated node can no longer take the pod at all: preempt elsewhere. A node
        // without a status was left out by PreFilter, which is as final.
        let unresolvable = filtered
            .get(nominated)
            .is_none_or(|s| s.code == Code::UnschedulableAndUnresolvable);
        if unresolvable {
            return Ok(());
        }
        // Victims of an earlier preemption are still leaving: wait for them rather than
        // evicting more.
        let priority = pod.priority();
        let waiting = snapshot.get(nominated).is_some_and(|n| {
            n.pods
                .iter()
                .any(|p| p.priority() < priority && execute::terminating_by_preemption(&p.pod))
        });
        if waiting {
            return Err(NOT_ELIGIBLE_TERMINATING.into());
        }
        Ok(())
    }

    /// Everything preemption decides, without side effects. `offset`: where in the potential
    /// nodes to start (random when `None`, as upstream, so that no node is always tried first).
    pub fn decide(
        &self,
        fw: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
        offset: Option<usize>,
    ) -> Decision {
        if let Err(msg) = self.eligible(pod, snapshot, filtered) {
            return Decision::NotEligible(Status::unschedulable(msg));
        }
        let all = snapshot.num_nodes();
        if all == 0 {
            return Decision::Error(Status::error("no nodes available"));
        }
        let potential = candidates::potential_nodes(snapshot, filtered);
        if potential.is_empty() {
            return Decision::NoCandidate {
                status: Status::unschedulable(no_candidate_message(all, &NodeToStatus::new())),
                no_potential_nodes: true,
            };
        }
        let budgets = pdb::budgets(&self.pdbs.list());
        let wanted = num_candidates(
            potential.len(),
            self.args.min_candidate_nodes_percentage,
            self.args.min_candidate_nodes_absolute,
        );
        let offset = offset.unwrap_or_else(|| rand::random_range(0..potential.len()));
        let sim = Simulation {
            fw,
            state,
            preemptor: pod,
            budgets: &budgets,
            now: jiff::Timestamp::now(),
        };
        let result = sim.dry_run(&potential, offset, wanted);
        if result.candidates.is_empty() {
            if !result.errors.is_empty() {
                return Decision::Error(Status::error(result.errors.join(", ")));
            }
            return Decision::NoCandidate {
                status: Status::unschedulable(no_candidate_message(all, &result.node_statuses)),
                no_potential_nodes: false,
            };
        }
        let mut found = result.candidates;
        match pick_one(&found, sim.now) {
            Some(i) => Decision::Nominate(found.swap_remove(i)),
            None => {
                Decision::NotEligible(Status::unschedulable("no candidate node for preemption"))
            }
        }
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
}

#[async_trait]
impl PostFilterPlugin for DefaultPreemption {
    /// The status message is upstream's without its "preemption: " prefix, which the
    /// scheduler adds when it composes the FailedScheduling message.
    async fn post_filter(
        &self,
        fw: &Framework,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        metrics::counter!("scheduler_preemption_attempts_total").increment(1);
        match self.decide(fw, state, pod, snapshot, filtered, None) {
            Decision::NotEligible(s) | Decision::Error(s) => (None, s),
            Decision::NoCandidate { status, .. } => {
                // Upstream clears the pod's old nomination itself only when no node was worth
                // trying, and otherwise through the empty nomination below; doing it here in
                // both cases keeps it right whatever the caller makes of the result.
                for e in execute::clear_nominated_node_name(&fw.ctx, &[&**pod]).await {
                    tracing::warn!(error = %e, "cannot clear the preemptor's nominatedNodeName");
                }
                // An empty nomination overrides (clears) any the pod held, as upstream.
                let clear = PostFilterResult {
                    nominated_node_name: Some(String::new()),
                };
                (Some(clear), status)
            }
            Decision::Nominate(c) => {
                tracing::debug!(pod = %pod.key, node = %c.node_name, victims = c.victims.pods.len(), "the target node for the preemption is determined");
                metrics::histogram!("scheduler_preemption_victims")
                    .record(c.victims.pods.len() as f64);
                let s = execute::prepare_candidate(&fw.ctx, pod, &c).await;
                if !s.is_success() {
                    return (None, s);
                }
                let result = PostFilterResult {
                    nominated_node_name: Some(c.node_name),
                };
                (Some(result), Status::success())
            }
        }
    }
}
