//! Whether a cluster event may make a rejected pod schedulable: the profile's plugins'
//! registrations matched against the event, and their queueing hints asked, limited to the
//! plugins that rejected the pod (upstream's `isPodWorthRequeuing`).

use crate::framework::events::{ClusterEvent, EventResource, QueueingHint, QueueingHintFn, action};
use crate::framework::resource::pod_requests;
use crate::framework::{Framework, QueuedPodInfo};
use k8s_openapi::api::core::v1::Pod;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

pub use crate::apis::config::DEFAULT_SCHEDULER_NAME;

pub fn scheduler_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_SCHEDULER_NAME)
}

/// Where an event sends a rejected pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strategy {
    /// Stays in unschedulablePods.
    Skip,
    /// backoffQ, or activeQ when its backoff is already over.
    AfterBackoff,
    /// activeQ at once: a PreEnqueue (Pending) plugin let it through.
    Immediately,
}

struct Registration {
    plugin: &'static str,
    event: ClusterEvent,
    hint: Option<QueueingHintFn>,
}

/// Each profile's event registrations.
pub struct HintMap {
    by_profile: HashMap<String, Vec<Registration>>,
}

impl HintMap {
    pub fn new(frameworks: &HashMap<String, Arc<Framework>>) -> Self {
        let by_profile = frameworks
            .iter()
            .map(|(name, fw)| {
                let regs = fw
                    .events_to_register()
                    .into_iter()
                    .map(|(plugin, e)| Registration {
                        plugin,
                        event: e.event,
                        hint: e.hint,
                    })
                    .collect();
                (name.clone(), regs)
            })
            .collect();
        Self { by_profile }
    }

    /// Whether any plugin of any profile registered for the event.
    pub fn is_event_of_interest(&self, event: &ClusterEvent) -> bool {
        is_wildcard(event)
            || self
                .by_profile
                .values()
                .flatten()
                .any(|r| r.event.covers(event))
    }

    /// `opaque`: the event's objects are unknown, so hints cannot be asked and count as Queue.
    pub fn worth_requeuing(
        &self,
        qpi: &QueuedPodInfo,
        event: &ClusterEvent,
        old: Option<&dyn Any>,
        new: Option<&dyn Any>,
        opaque: bool,
    ) -> Strategy {
        if qpi.unschedulable_plugins.is_empty() && qpi.pending_plugins.is_empty() {
            return Strategy::AfterBackoff;
        }
        if is_wildcard(event) {
            return Strategy::AfterBackoff;
        }
        let Some(regs) = self.by_profile.get(scheduler_name(qpi.pod())) else {
            return Strategy::AfterBackoff;
        };
        let mut strategy = Strategy::Skip;
        for r in regs {
            let pending = qpi.pending_plugins.contains(r.plugin);
            if !(pending || qpi.unschedulable_plugins.contains(r.plugin)) || !r.event.covers(event)
            {
                continue;
            }
            let hint = match (&r.hint, opaque) {
                (Some(h), false) => h(qpi.pod(), old, new),
                _ => QueueingHint::Queue,
            };
            if hint == QueueingHint::Skip {
                continue;
            }
            if pending {
                return Strategy::Immediately;
            }
            strategy = Strategy::AfterBackoff;
        }
        strategy
    }
}

pub fn is_wildcard(event: &ClusterEvent) -> bool {
    event.resource == EventResource::WildCard
}

/// Labels of the queue's own moves, as upstream's metrics name them.
pub mod labels {
    pub const SCHEDULE_ATTEMPT_FAILURE: &str = "ScheduleAttemptFailure";
    pub const BACKOFF_COMPLETE: &str = "BackoffComplete";
    pub const POP_FROM_BACKOFF_Q: &str = "PopFromBackoffQ";
    pub const FORCE_ACTIVATE: &str = "ForceActivate";
    pub const UNSCHEDULED_POD_ADD: &str = "UnschedulablePodAdd";
    pub const UNSCHEDULED_POD_UPDATE: &str = "UnschedulablePodUpdate";
}

/// The update kinds upstream distinguishes, with the label of each for unscheduled and
/// assigned pods.
const POD_UPDATES: [(u32, &str, &str); 5] = [
    (
        action::UPDATE_POD_LABEL,
        "UnschedulablePodUpdatePodLabel",
        "AssignedPodUpdatePodLabel",
    ),
    (
        action::UPDATE_POD_SCALE_DOWN,
        "UnschedulablePodUpdatePodScaleDown",
        "AssignedPodUpdatePodScaleDown",
    ),
    (
        action::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        "UnschedulablePodUpdatePodSchedulingGatesEliminated",
        "AssignedPodUpdatePodSchedulingGatesEliminated",
    ),
    (
        action::UPDATE_POD_TOLERATIONS,
        "UnschedulablePodUpdatePodToleration",
        "AssignedPodUpdatePodToleration",
    ),
    (
        action::UPDATE_OTHER,
        "UnschedulablePodUpdate",
        "AssignedPodUpdate",
    ),
];

fn pod_event(kind: u32, assigned: bool) -> ClusterEvent {
    let (label_u, label_a) = POD_UPDATES
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map(|(_, u, a)| (*u, *a))
        .unwrap_or(("UnschedulablePodUpdate", "AssignedPodUpdate"));
    if assigned {
        ClusterEvent::new(EventResource::AssignedPod, kind, label_a)
    } else {
        ClusterEvent::new(EventResource::UnscheduledPod, kind, label_u)
    }
}

/// The events an update of a pod amounts to (upstream's `PodSchedulingPropertiesChange`):
/// one per changed property the plugins care about, or a general update when none changed.
pub fn pod_scheduling_property_changes(old: &Pod, new: &Pod) -> Vec<ClusterEvent> {
    let assigned = new
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let mut kinds = Vec::new();
    if labels_of(old) != labels_of(new) {
        kinds.push(action::UPDATE_POD_LABEL);
    }
    if scaled_down(old, new) {
        kinds.push(action::UPDATE_POD_SCALE_DOWN);
    }
    let gates = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_ref())
            .map_or(0, Vec::len)
    };
    if gates(new) == 0 && gates(old) != 0 {
        kinds.push(action::UPDATE_POD_SCHEDULING_GATES_ELIMINATED);
    }
    if tolerations_of(old) != tolerations_of(new) {
        kinds.push(action::UPDATE_POD_TOLERATIONS);
    }
    if kinds.is_empty() {
        kinds.push(action::UPDATE_OTHER);
    }
    kinds.into_iter().map(|k| pod_event(k, assigned)).collect()
}

/// Labels, unset and empty alike as `None` (compared without copying).
fn labels_of(p: &Pod) -> Option<&std::collections::BTreeMap<String, String>> {
    p.metadata.labels.as_ref().filter(|l| !l.is_empty())
}

fn tolerations_of(p: &Pod) -> &[k8s_openapi::api::core::v1::Toleration] {
    p.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

/// Whether any request went down or away.
fn scaled_down(old: &Pod, new: &Pod) -> bool {
    let (o, n) = (pod_requests(old, false), pod_requests(new, false));
    o.milli_cpu > n.milli_cpu
        || o.memory > n.memory
        || o.ephemeral_storage > n.ephemeral_storage
        || o.scalar
            .iter()
            .any(|(k, v)| n.scalar.get(k).is_none_or(|nv| nv < v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing::pod;
    use k8s_openapi::api::core::v1::{PodSchedulingGate, Toleration};
    use std::collections::BTreeMap;

    #[test]
    fn pod_updates_name_what_changed() {
        let base = pod("p", &[("cpu", "2")]);
        let with = |f: &dyn Fn(&mut Pod)| {
            let mut p = base.clone();
            f(&mut p);
            p
        };
        let gated = with(&|p| {
            if let Some(s) = p.spec.as_mut() {
                s.scheduling_gates = Some(vec![PodSchedulingGate { name: "g".into() }]);
            }
        });
        let cases: Vec<(&str, Pod, Pod, Vec<&str>)> = vec![
            (
                "nothing",
                base.clone(),
                base.clone(),
                vec!["UnschedulablePodUpdate"],
            ),
            (
                "labels",
                base.clone(),
                with(&|p| p.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]))),
                vec!["UnschedulablePodUpdatePodLabel"],
            ),
            (
                "empty labels are no labels",
                base.clone(),
                with(&|p| p.metadata.labels = Some(BTreeMap::new())),
                vec!["UnschedulablePodUpdate"],
            ),
            (
                "scale down",
                base.clone(),
                pod("p", &[("cpu", "1")]),
                vec!["UnschedulablePodUpdatePodScaleDown"],
            ),
            (
                "scale up",
                base.clone(),
                pod("p", &[("cpu", "3")]),
                vec!["UnschedulablePodUpdate"],
            ),
            (
                "gates removed",
                gated.clone(),
                base.clone(),
                vec!["UnschedulablePodUpdatePodSchedulingGatesEliminated"],
            ),
            (
                "gates added",
                base.clone(),
                gated,
                vec!["UnschedulablePodUpdate"],
            ),
            (
                "tolerations and labels on a bound pod",
                with(&|p| {
                    if let Some(s) = p.spec.as_mut() {
                        s.node_name = Some("n".into());
                    }
                }),
                with(&|p| {
                    p.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
                    if let Some(s) = p.spec.as_mut() {
                        s.node_name = Some("n".into());
                        s.tolerations = Some(vec![Toleration::default()]);
                    }
                }),
                vec![
                    "AssignedPodUpdatePodLabel",
                    "AssignedPodUpdatePodToleration",
                ],
            ),
        ];
        for (name, old, new, want) in cases {
            let got: Vec<&str> = pod_scheduling_property_changes(&old, &new)
                .iter()
                .map(|e| e.label)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
