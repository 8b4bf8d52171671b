//! The PodTopologySpread plugin: spreads matching pods evenly over topology domains
//! (`whenUnsatisfiable: DoNotSchedule` in Filter, `ScheduleAnyway` in Score), with the cluster's
//! default constraints for pods that name none.

mod common;
mod filtering;
mod scoring;

use crate::apis::config::args::{
    PodTopologySpreadArgs, PodTopologySpreadConstraintsDefaulting, decode_args,
};
use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::parallelize::Parallelizer;
use crate::framework::{
    FilterPlugin, Plugin, PluginContext, PreFilterExtensions, PreFilterPlugin, PreScorePlugin,
    ScorePlugin,
};
use crate::plugins::helper::objects::{as_node, as_pod};
use crate::plugins::helper::taints::node_taints;
use client_go_rs::listers::Lister;
use common::{Constraint, DO_NOT_SCHEDULE, LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, SCHEDULE_ANYWAY};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Node, Pod, ReplicationController, Service, TopologySpreadConstraint,
};
use serde_json::Value;
use std::sync::Arc;

pub use filtering::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH};

pub const NAME: &str = "PodTopologySpread";

/// The listers default constraints read to find the pod's owners' selectors.
struct Listers {
    services: Lister<Service>,
    replication_controllers: Lister<ReplicationController>,
    replica_sets: Lister<ReplicaSet>,
    stateful_sets: Lister<StatefulSet>,
}

#[derive(Clone)]
pub struct PodTopologySpread {
    default_constraints: Arc<Vec<TopologySpreadConstraint>>,
    /// The defaults are the system's: nodes missing a zone label still get hostname spreading.
    system_defaulted: bool,
    listers: Option<Arc<Listers>>,
    parallelizer: Parallelizer,
}

/// Upstream's system defaults: spread over hostnames (skew 3) and zones (skew 5), softly.
fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    [(LABEL_HOSTNAME, 3), (LABEL_TOPOLOGY_ZONE, 5)]
        .into_iter()
        .map(|(key, skew)| TopologySpreadConstraint {
            topology_key: key.to_string(),
            when_unsatisfiable: SCHEDULE_ANYWAY.to_string(),
            max_skew: skew,
            ..Default::default()
        })
        .collect()
}

pub fn new(args: Option<&Value>, ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let args: PodTopologySpreadArgs = decode_args(args)?;
    Ok(Arc::new(PodTopologySpread::new(args, ctx)))
}

impl PodTopologySpread {
    pub fn new(args: PodTopologySpreadArgs, ctx: &PluginContext) -> Self {
        let system_defaulted =
            args.defaulting_type == PodTopologySpreadConstraintsDefaulting::System;
        let default_constraints = if system_defaulted {
            system_default_constraints()
        } else {
            args.default_constraints
        };
        // The owners' informers are only needed (and only started) when defaults can apply.
        let listers = (!default_constraints.is_empty()).then(|| {
            Arc::new(Listers {
                services: ctx.informers.informer::<Service>().lister(),
                replication_controllers: ctx.informers.informer::<ReplicationController>().lister(),
                replica_sets: ctx.informers.informer::<ReplicaSet>().lister(),
                stateful_sets: ctx.informers.informer::<StatefulSet>().lister(),
            })
        });
        Self {
            default_constraints: Arc::new(default_constraints),
            system_defaulted,
            listers,
            parallelizer: ctx.parallelizer.clone(),
        }
    }

    /// Queue the pod when a pod it counts (same namespace, bound) appears, goes, or changes
    /// labels its selectors care about; or when the pod itself gains tolerations that a
    /// `nodeTaintsPolicy: Honor` constraint reads.
    fn hint_pod_change(&self, pod: &Pod, old: Option<&Pod>, new: Option<&Pod>) -> QueueingHint {
        let involved = |other: &Pod| {
            other.metadata.uid == pod.metadata.uid
                || (other
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_some_and(|n| !n.is_empty())
                    && other.metadata.namespace == pod.metadata.namespace)
        };
        if new.is_some_and(|p| !involved(p)) || old.is_some_and(|p| !involved(p)) {
            return QueueingHint::Skip;
        }
        let Ok(constraints) = self.constraints(pod, DO_NOT_SCHEDULE) else {
            return QueueingHint::Queue;
        };
        let labels = |p: &Pod| p.metadata.labels.clone().unwrap_or_default();
        match (old, new) {
            (Some(old), Some(new)) => {
                let tolerations = |p: &Pod| p.spec.as_ref().and_then(|s| s.tolerations.clone());
                if new.metadata.uid == pod.metadata.uid
                    && tolerations(old) != tolerations(new)
                    && constraints.iter().any(|c| c.honor_node_taints)
                {
                    return QueueingHint::Queue;
                }
                let (lo, ln) = (labels(old), labels(new));
                if lo == ln {
                    return QueueingHint::Skip;
                }
                if constraints
                    .iter()
                    .any(|c| c.selector.matches(&lo) != c.selector.matches(&ln))
                {
                    return QueueingHint::Queue;
                }
                QueueingHint::Skip
            }
            (Some(p), None) | (None, Some(p)) => {
                let l = labels(p);
                if constraints.iter().any(|c| c.selector.matches(&l)) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, None) => QueueingHint::Queue,
        }
    }

    /// Queue the pod when a node joins or leaves the set of nodes carrying every topology key,
    /// or such a node changes a topology value or its taints.
    fn hint_node_change(&self, pod: &Pod, old: Option<&Node>, new: Option<&Node>) -> QueueingHint {
        let Ok(constraints) = self.constraints(pod, DO_NOT_SCHEDULE) else {
            return QueueingHint::Queue;
        };
        let matching = |n: &Node| common::node_has_all_keys(common::node_labels(n), &constraints);
        let queue_if = |b: bool| {
            if b {
                QueueingHint::Queue
            } else {
                QueueingHint::Skip
            }
        };
        match (old, new) {
            (Some(old), Some(new)) => {
                let (mo, mn) = (matching(old), matching(new));
                if mo != mn {
                    return QueueingHint::Queue;
                }
                let (lo, ln) = (common::node_labels(old), common::node_labels(new));
                let values_changed = constraints
                    .iter()
                    .any(|c: &Constraint| lo.get(&c.topology_key) != ln.get(&c.topology_key));
                queue_if(mn && (values_changed || node_taints(old) != node_taints(new)))
            }
            (None, Some(n)) | (Some(n), None) => queue_if(matching(n)),
            (None, None) => QueueingHint::Queue,
        }
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        let pods = self.clone();
        let nodes = self.clone();
        vec![
            ClusterEventWithHint::new(
                EventResource::Pod,
                action::ADD
                    | action::UPDATE_POD_LABEL
                    | action::UPDATE_POD_TOLERATIONS
                    | action::DELETE,
            )
            .with_hint(move |pod, old, new| pods.hint_pod_change(pod, as_pod(old), as_pod(new))),
            ClusterEventWithHint::new(
                EventResource::Node,
                action::ADD
                    | action::DELETE
                    | action::UPDATE_NODE_LABEL
                    | action::UPDATE_NODE_TAINT,
            )
            .with_hint(move |pod, old, new| {
                nodes.hint_node_change(pod, as_node(old), as_node(new))
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

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut crate::framework::CycleState,
        pod: &crate::framework::PodInfo,
        snapshot: &crate::framework::Snapshot,
    ) -> (
        Option<crate::framework::PreFilterResult>,
        crate::framework::Status,
    ) {
        self.run_pre_filter(state, pod, snapshot)
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
