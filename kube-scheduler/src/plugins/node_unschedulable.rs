//! The NodeUnschedulable plugin: cordoned nodes (`spec.unschedulable`) take only pods that
//! tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, Status,
};
use crate::plugins::helper::objects::{as_node, as_pod};
use crate::plugins::helper::taints::{
    EFFECT_NO_SCHEDULE, pod_tolerations, tolerations_tolerate_taint,
};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodeUnschedulable";
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

pub struct NodeUnschedulable;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeUnschedulable))
}

fn is_unschedulable(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

fn tolerates_unschedulable(pod: &Pod) -> bool {
    let taint = Taint {
        key: TAINT_NODE_UNSCHEDULABLE.to_string(),
        effect: EFFECT_NO_SCHEDULE.to_string(),
        ..Default::default()
    };
    tolerations_tolerate_taint(pod_tolerations(pod), &taint)
}

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(EventResource::Node, action::ADD | action::UPDATE_NODE_TAINT)
                .with_hint(|_pod, old, new| {
                    let Some(new) = as_node(new) else {
                        return QueueingHint::Queue;
                    };
                    let was_schedulable = as_node(old).is_some_and(|o| !is_unschedulable(o));
                    if !was_schedulable && !is_unschedulable(new) {
                        QueueingHint::Queue
                    } else {
                        QueueingHint::Skip
                    }
                }),
            ClusterEventWithHint::new(EventResource::Pod, action::UPDATE_POD_TOLERATIONS)
                .with_hint(|pod, _old, new| match as_pod(new) {
                    Some(p) if p.metadata.uid == pod.metadata.uid && tolerates_unschedulable(p) => {
                        QueueingHint::Queue
                    }
                    _ => QueueingHint::Skip,
                }),
        ]
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(n) = node.node.as_deref() else {
            return Status::error("node not found");
        };
        if !is_unschedulable(n) || tolerates_unschedulable(&pod.pod) {
            return Status::success();
        }
        Status::unresolvable(ERR_REASON_UNSCHEDULABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::{NodeSpec, Toleration};

    fn node(unschedulable: Option<bool>) -> Node {
        let mut n = testing::node("n", &[], &[]);
        n.spec = Some(NodeSpec {
            unschedulable,
            ..Default::default()
        });
        n
    }

    fn pod(tolerations: Vec<Toleration>) -> Pod {
        let mut p = testing::pod("p", &[]);
        if let Some(s) = p.spec.as_mut() {
            s.tolerations = Some(tolerations);
        }
        p
    }

    fn tol(key: &str, effect: &str) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: (!effect.is_empty()).then(|| effect.into()),
            ..Default::default()
        }
    }

    #[test]
    fn filter_table() {
        let cases = [
            ("schedulable node", node(None), pod(vec![]), Code::Success),
            (
                "explicitly schedulable",
                node(Some(false)),
                pod(vec![]),
                Code::Success,
            ),
            (
                "cordoned",
                node(Some(true)),
                pod(vec![]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "cordoned but tolerated",
                node(Some(true)),
                pod(vec![tol(TAINT_NODE_UNSCHEDULABLE, "NoSchedule")]),
                Code::Success,
            ),
            (
                "toleration for any effect",
                node(Some(true)),
                pod(vec![tol(TAINT_NODE_UNSCHEDULABLE, "")]),
                Code::Success,
            ),
            (
                "toleration of another effect",
                node(Some(true)),
                pod(vec![tol(TAINT_NODE_UNSCHEDULABLE, "NoExecute")]),
                Code::UnschedulableAndUnresolvable,
            ),
        ];
        for (name, n, p, want) in cases {
            let s = NodeUnschedulable.filter(
                &CycleState::new(),
                &testing::pod_info(p),
                &testing::node_info(n, vec![]),
            );
            assert_eq!(s.code, want, "{name}");
            if want != Code::Success {
                assert_eq!(s.message(), ERR_REASON_UNSCHEDULABLE);
            }
        }
    }

    #[test]
    fn node_hint_queues_when_node_becomes_schedulable() {
        let events = NodeUnschedulable.events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let p = pod(vec![]);
        let (cordoned, open) = (node(Some(true)), node(None));
        assert_eq!(hint(&p, None, Some(&open)), QueueingHint::Queue);
        assert_eq!(hint(&p, None, Some(&cordoned)), QueueingHint::Skip);
        assert_eq!(hint(&p, Some(&cordoned), Some(&open)), QueueingHint::Queue);
        assert_eq!(hint(&p, Some(&open), Some(&open)), QueueingHint::Skip);
    }
}
