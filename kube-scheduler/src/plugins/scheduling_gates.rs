//! The SchedulingGates plugin: a pod with `spec.schedulingGates` stays out of the active queue
//! until every gate is removed.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{Code, Plugin, PluginContext, PreEnqueuePlugin, Status};
use crate::plugins::helper::objects::as_pod;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "SchedulingGates";

pub struct SchedulingGates;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(SchedulingGates))
}

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(
                EventResource::Pod,
                action::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
            )
            .with_hint(|pod, _old, new| {
                // Only the gated pod's own update can open its gates.
                match as_pod(new) {
                    Some(p) if p.metadata.uid == pod.metadata.uid => QueueingHint::Queue,
                    _ => QueueingHint::Skip,
                }
            }),
        ]
    }

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &Pod) -> Status {
        let gates = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_deref())
            .unwrap_or_default();
        if gates.is_empty() {
            return Status::success();
        }
        // Upstream formats the names as a Go slice: `[a b]`.
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        Status::new(
            Code::UnschedulableAndUnresolvable,
            format!("waiting for scheduling gates: [{}]", names.join(" ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::PodSchedulingGate;

    fn gated(gates: &[&str]) -> Pod {
        let mut pod = testing::pod("p", &[]);
        if let Some(spec) = pod.spec.as_mut() {
            spec.scheduling_gates = Some(
                gates
                    .iter()
                    .map(|g| PodSchedulingGate {
                        name: g.to_string(),
                    })
                    .collect(),
            );
        }
        pod
    }

    #[test]
    fn gates_hold_the_pod() {
        let cases = [
            ("no gates", testing::pod("p", &[]), None),
            ("empty gates", gated(&[]), None),
            (
                "one gate",
                gated(&["foo"]),
                Some("waiting for scheduling gates: [foo]"),
            ),
            (
                "two gates",
                gated(&["foo", "bar"]),
                Some("waiting for scheduling gates: [foo bar]"),
            ),
        ];
        for (name, pod, want) in cases {
            let s = SchedulingGates.pre_enqueue(&pod);
            match want {
                None => assert!(s.is_success(), "{name}: {s:?}"),
                Some(msg) => {
                    assert_eq!(s.code, Code::UnschedulableAndUnresolvable, "{name}");
                    assert_eq!(s.message(), msg, "{name}");
                }
            }
        }
    }

    #[test]
    fn hint_queues_only_the_pod_itself() {
        let events = SchedulingGates.events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let pod = testing::pod("p", &[]);
        let other = testing::pod("q", &[]);
        assert_eq!(hint(&pod, Some(&pod), Some(&pod)), QueueingHint::Queue);
        assert_eq!(hint(&pod, Some(&other), Some(&other)), QueueingHint::Skip);
    }
}
