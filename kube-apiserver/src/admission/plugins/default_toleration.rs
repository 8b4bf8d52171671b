//! `DefaultTolerationSeconds`: a pod that says nothing about nodes becoming not-ready or
//! unreachable tolerates both for five minutes, so a short node outage does not evict it at
//! once (the taint manager evicts pods that do not tolerate these NoExecute taints).

use super::service_account::{child_object, items, map_child_array};
use crate::admission::{Attributes, Operation, Plugin};
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::{Value, json};

pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// Upstream's default for both (`--default-not-ready-toleration-seconds`,
/// `--default-unreachable-toleration-seconds`).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

#[derive(Debug, Default)]
pub struct DefaultTolerationSeconds;

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        _old: Option<&Value>,
        _state: &ApiState,
    ) -> Result<(), ApiError> {
        // Updates too, as upstream: tolerations may be added to a running pod, and one that
        // lost them gets them back.
        if matches!(attrs.operation, Operation::Create | Operation::Update)
            && attrs.is_main("", "pods")
        {
            add_default_tolerations(object, DEFAULT_TOLERATION_SECONDS);
        }
        Ok(())
    }
}

/// Whether one of the pod's tolerations covers the NoExecute taint `key`: same key or any key,
/// NoExecute or any effect.
fn tolerates_no_execute(pod: &Value, key: &str) -> bool {
    items(&pod["spec"]["tolerations"]).any(|t| {
        let t_key = t["key"].as_str().unwrap_or_default();
        let effect = t["effect"].as_str().unwrap_or_default();
        (t_key == key || t_key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
    })
}

/// Appends `<key>:NoExecute` Exists tolerations for not-ready and unreachable nodes with
/// `seconds`, each unless the pod already tolerates that taint.
pub fn add_default_tolerations(pod: &mut Value, seconds: i64) {
    let missing: Vec<&str> = [TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE]
        .into_iter()
        .filter(|key| !tolerates_no_execute(pod, key))
        .collect();
    if missing.is_empty() {
        return;
    }
    let Some(tolerations) =
        child_object(pod, "spec").and_then(|s| map_child_array(s, "tolerations"))
    else {
        return;
    };
    for key in missing {
        tolerations.push(json!({
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": seconds,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toleration(key: &str) -> Value {
        json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    }

    #[test]
    fn adds_both_tolerations_to_a_pod_without_any() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]}});
        add_default_tolerations(&mut pod, 300);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                toleration(TAINT_NODE_NOT_READY),
                toleration(TAINT_NODE_UNREACHABLE)
            ])
        );
        // A second pass (an update) adds nothing.
        add_default_tolerations(&mut pod, 300);
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn keeps_the_pods_own_choice() {
        let own = json!({"key": TAINT_NODE_NOT_READY, "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 5});
        let mut pod = json!({"spec": {"tolerations": [own.clone()]}});
        add_default_tolerations(&mut pod, 300);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([own, toleration(TAINT_NODE_UNREACHABLE)])
        );
    }

    #[test]
    fn a_toleration_of_every_taint_or_every_effect_counts() {
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_default_tolerations(&mut all, 300);
        assert_eq!(all["spec"]["tolerations"].as_array().map(Vec::len), Some(1));

        let mut any_effect = json!({"spec": {"tolerations": [
            {"key": TAINT_NODE_UNREACHABLE, "operator": "Exists"}
        ]}});
        add_default_tolerations(&mut any_effect, 300);
        assert_eq!(
            any_effect["spec"]["tolerations"][1],
            toleration(TAINT_NODE_NOT_READY)
        );
    }

    #[test]
    fn a_no_schedule_toleration_does_not_count() {
        let mut pod = json!({"spec": {"tolerations": [
            {"key": TAINT_NODE_NOT_READY, "operator": "Exists", "effect": "NoSchedule"}
        ]}});
        add_default_tolerations(&mut pod, 300);
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(3));
    }
}
