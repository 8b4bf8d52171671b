//! `TaintNodesByCondition`: a node is registered tainted `node.kubernetes.io/not-ready:NoSchedule`
//! so nothing is scheduled onto it before the node lifecycle controller has seen it report
//! Ready and lifts the taint.

use super::service_account::{child_object, items, map_child_array};
use crate::admission::{Attributes, Operation, Plugin};
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::{Value, json};

pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";

#[derive(Debug, Default)]
pub struct TaintNodesByCondition;

#[async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        _old: Option<&Value>,
        _state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.operation == Operation::Create && attrs.is_main("", "nodes") {
            add_not_ready_taint(object);
        }
        Ok(())
    }
}

/// Adds the taint unless the node already carries one with its key and effect (whatever its
/// value), as upstream's taint matching.
pub fn add_not_ready_taint(node: &mut Value) {
    let present = items(&node["spec"]["taints"])
        .any(|t| t["key"] == TAINT_NODE_NOT_READY && t["effect"] == "NoSchedule");
    if present {
        return;
    }
    if let Some(taints) = child_object(node, "spec").and_then(|s| map_child_array(s, "taints")) {
        taints.push(json!({"key": TAINT_NODE_NOT_READY, "effect": "NoSchedule"}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_nodes_get_the_not_ready_taint_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        add_not_ready_taint(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": TAINT_NODE_NOT_READY, "effect": "NoSchedule"}])
        );
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn other_taints_are_kept_and_a_not_ready_no_execute_is_not_enough() {
        let mut node = json!({"spec": {"taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": TAINT_NODE_NOT_READY, "effect": "NoExecute"},
        ]}});
        add_not_ready_taint(&mut node);
        let taints = node["spec"]["taints"].as_array().expect("taints");
        assert_eq!(taints.len(), 3);
        assert_eq!(taints[0]["key"], "dedicated");
        assert_eq!(
            taints[2],
            json!({"key": TAINT_NODE_NOT_READY, "effect": "NoSchedule"})
        );

        let mut node = json!({"spec": {"taints": [
            {"key": TAINT_NODE_NOT_READY, "value": "x", "effect": "NoSchedule"},
        ]}});
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(1));
    }
}
