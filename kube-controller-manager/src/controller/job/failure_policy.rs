//! `spec.podFailurePolicy`: the first rule matching a failed pod decides what its failure
//! means (fail the Job, fail the index, ignore it, or count it against the backoff limit).

use k8s_openapi::api::batch::v1::{PodFailurePolicy, PodFailurePolicyRule};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The Job fails; the message becomes the condition's.
    FailJob(String),
    /// The pod's index fails (backoffLimitPerIndex).
    FailIndex,
    /// Not counted: the pod is replaced as if it never ran.
    Ignore,
    /// Counted against the backoff limit, as without a policy.
    Count,
}

/// What `policy` says about a failed `pod`; `Count` when no rule matches (upstream's default).
pub fn evaluate(policy: Option<&PodFailurePolicy>, pod: &Pod) -> Action {
    let Some(policy) = policy else {
        return Action::Count;
    };
    for (index, rule) in policy.rules.iter().enumerate() {
        let Some(what) = rule_matches(rule, pod) else {
            continue;
        };
        return match rule.action.as_str() {
            "FailJob" => Action::FailJob(format!("{what} matching FailJob rule at index {index}")),
            "FailIndex" => Action::FailIndex,
            "Ignore" => Action::Ignore,
            // Count, and actions this version does not know, behave as no policy.
            _ => Action::Count,
        };
    }
    Action::Count
}

/// Describes the match (for the FailJob message) when `rule` matches `pod`.
fn rule_matches(rule: &PodFailurePolicyRule, pod: &Pod) -> Option<String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if let Some(req) = &rule.on_exit_codes {
        let status = pod.status.as_ref()?;
        let containers = status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten());
        for cs in containers {
            if req
                .container_name
                .as_deref()
                .is_some_and(|want| want != cs.name)
            {
                continue;
            }
            let Some(code) = exit_code(cs) else { continue };
            // A container that succeeded never explains a failure.
            if code == 0 {
                continue;
            }
            let listed = req.values.contains(&code);
            let hit = match req.operator.as_str() {
                "In" => listed,
                "NotIn" => !listed,
                _ => false,
            };
            if hit {
                return Some(format!(
                    "Container {} for pod {ns}/{name} failed with exit code {code}",
                    cs.name
                ));
            }
        }
        return None;
    }
    if let Some(patterns) = &rule.on_pod_conditions {
        let conditions = pod.status.as_ref()?.conditions.as_ref()?;
        for pattern in patterns {
            let want_status = if pattern.status.is_empty() {
                "True"
            } else {
                pattern.status.as_str()
            };
            if conditions
                .iter()
                .any(|c| c.type_ == pattern.type_ && c.status == want_status)
            {
                return Some(format!("Pod {ns}/{name} has condition {}", pattern.type_));
            }
        }
    }
    None
}

fn exit_code(cs: &ContainerStatus) -> Option<i32> {
    cs.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(exit_codes: &[(&str, i32)], conditions: &[(&str, &str)]) -> Pod {
        let statuses: Vec<_> = exit_codes
            .iter()
            .map(|(n, c)| {
                json!({"name": n, "image": "i", "imageID": "", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": c}}})
            })
            .collect();
        let conds: Vec<_> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "containerStatuses": statuses, "conditions": conds}
        }))
        .expect("pod")
    }

    fn policy(rules: serde_json::Value) -> PodFailurePolicy {
        serde_json::from_value(json!({ "rules": rules })).expect("policy")
    }

    #[test]
    fn first_matching_rule_decides() {
        let p = policy(json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
        ]));
        let cases: Vec<(Pod, Action)> = vec![
            (pod(&[("main", 1)], &[("DisruptionTarget", "True")]), Action::Ignore),
            (
                pod(&[("main", 42)], &[]),
                Action::FailJob(
                    "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
                        .into(),
                ),
            ),
            // The FailJob rule names the container `main`.
            (pod(&[("side", 42)], &[]), Action::Count),
            (pod(&[("side", 3)], &[]), Action::FailIndex),
            (pod(&[("main", 1)], &[]), Action::Count),
            (pod(&[("main", 0)], &[("DisruptionTarget", "False")]), Action::Count),
        ];
        for (pod, want) in cases {
            assert_eq!(evaluate(Some(&p), &pod), want);
        }
        assert_eq!(evaluate(None, &pod(&[("main", 42)], &[])), Action::Count);
    }

    #[test]
    fn condition_rule_message() {
        let p = policy(json!([
            {"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue", "status": ""}]},
        ]));
        assert_eq!(
            evaluate(Some(&p), &pod(&[], &[("ConfigIssue", "True")])),
            Action::FailJob(
                "Pod ns/p has condition ConfigIssue matching FailJob rule at index 0".into()
            )
        );
    }
}
