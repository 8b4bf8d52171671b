//! The NodeName plugin: a pod that names its node (`spec.nodeName`) fits only there.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, Status,
};
use crate::plugins::helper::objects::as_node;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodeName";
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeName))
}

/// Whether the pod may run on the node named `node_name`.
pub fn fits(pod: &Pod, node_name: &str) -> bool {
    let wanted = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default();
    wanted.is_empty() || wanted == node_name
}

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint::new(EventResource::Node, action::ADD).with_hint(
                |pod, _old, new| match as_node(new) {
                    Some(n) if !fits(pod, n.metadata.name.as_deref().unwrap_or_default()) => {
                        QueueingHint::Skip
                    }
                    _ => QueueingHint::Queue,
                },
            ),
        ]
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if fits(&pod.pod, node.node_name()) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing;

    fn pod_on(node: &str) -> Pod {
        let mut p = testing::pod("p", &[]);
        if let Some(s) = p.spec.as_mut() {
            s.node_name = (!node.is_empty()).then(|| node.to_string());
        }
        p
    }

    #[test]
    fn filter_table() {
        let cases = [
            ("no node name", "", "foo", Code::Success),
            ("same node", "foo", "foo", Code::Success),
            (
                "other node",
                "bar",
                "foo",
                Code::UnschedulableAndUnresolvable,
            ),
        ];
        for (name, wanted, node, code) in cases {
            let s = NodeName.filter(
                &CycleState::new(),
                &testing::pod_info(pod_on(wanted)),
                &testing::node_info(testing::node(node, &[], &[]), vec![]),
            );
            assert_eq!(s.code, code, "{name}");
            if code != Code::Success {
                assert_eq!(s.message(), ERR_REASON);
            }
        }
    }

    #[test]
    fn node_add_hint() {
        let events = NodeName.events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let node = testing::node("foo", &[], &[]);
        assert_eq!(hint(&pod_on("foo"), None, Some(&node)), QueueingHint::Queue);
        assert_eq!(hint(&pod_on("bar"), None, Some(&node)), QueueingHint::Skip);
        assert_eq!(hint(&pod_on(""), None, Some(&node)), QueueingHint::Queue);
    }
}
