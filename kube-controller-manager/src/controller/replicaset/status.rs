//! The status a ReplicaSet reports for its pods (upstream's `calculateStatus`).

use crate::controller::utils::pods::{is_pod_available, is_pod_ready};
use api_types::labels::Selector;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The condition reporting that pods could not be created or deleted.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// What the status is computed from.
#[derive(Debug)]
pub struct StatusInput<'a> {
    pub current: ReplicaSetStatus,
    pub desired_replicas: i32,
    pub min_ready_seconds: i32,
    pub template_labels: Option<&'a BTreeMap<String, String>>,
    pub generation: Option<i64>,
    /// The claimed, active pods.
    pub pods: &'a [Arc<Pod>],
    /// The error of this sync's creates or deletes, if any.
    pub manage_error: Option<String>,
    pub now: Timestamp,
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `Some(n)` unless zero, as the API omits zero counts.
fn omit_zero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

/// The new status: counts of the claimed pods, `ReplicaFailure` set when creates or deletes
/// failed and cleared once a sync manages its replicas again, and the observed generation.
pub fn calculate_status(input: StatusInput<'_>) -> ReplicaSetStatus {
    let template = input
        .template_labels
        .filter(|l| !l.is_empty())
        .and_then(|l| Selector::from_map(l).ok());
    let empty = BTreeMap::new();
    let mut fully_labeled = 0;
    let mut ready = 0;
    let mut available = 0;
    for pod in input.pods {
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        // An empty template selects every pod, as upstream's empty label set does.
        if template.as_ref().is_none_or(|t| t.matches(labels)) {
            fully_labeled += 1;
        }
        if is_pod_ready(pod) {
            ready += 1;
            if is_pod_available(pod, input.min_ready_seconds, input.now) {
                available += 1;
            }
        }
    }
    let mut status = input.current;
    let mut conditions = status.conditions.take().unwrap_or_default();
    let has_failure = conditions.iter().any(|c| c.type_ == REPLICA_FAILURE);
    match &input.manage_error {
        Some(err) if !has_failure => {
            let diff = count(input.pods.len()) - input.desired_replicas;
            let reason = if diff < 0 {
                "FailedCreate"
            } else if diff > 0 {
                "FailedDelete"
            } else {
                ""
            };
            conditions.push(ReplicaSetCondition {
                type_: REPLICA_FAILURE.into(),
                status: "True".into(),
                reason: Some(reason.into()),
                message: Some(err.clone()),
                last_transition_time: Some(Time(input.now)),
            });
        }
        None if has_failure => conditions.retain(|c| c.type_ != REPLICA_FAILURE),
        _ => {}
    }
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status.replicas = count(input.pods.len());
    status.fully_labeled_replicas = omit_zero(fully_labeled);
    status.ready_replicas = omit_zero(ready);
    status.available_replicas = omit_zero(available);
    status.observed_generation = input.generation;
    status
}

/// Whether writing `new` over `old` would change anything (upstream skips the write).
pub fn status_changed(old: &ReplicaSetStatus, new: &ReplicaSetStatus) -> bool {
    let norm = |s: &ReplicaSetStatus| {
        let mut s = s.clone();
        s.fully_labeled_replicas = s.fully_labeled_replicas.filter(|n| *n != 0);
        s.ready_replicas = s.ready_replicas.filter(|n| *n != 0);
        s.available_replicas = s.available_replicas.filter(|n| *n != 0);
        s.conditions = s.conditions.filter(|c| !c.is_empty());
        s
    };
    norm(old) != norm(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use kube::api::ObjectMeta;

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn pod(labels: &[(&str, &str)], ready_since: Option<i64>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: ready_since.map(|s| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(ts(s))),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        })
    }

    fn failure(reason: &str) -> ReplicaSetCondition {
        ReplicaSetCondition {
            type_: REPLICA_FAILURE.into(),
            status: "True".into(),
            reason: Some(reason.into()),
            message: Some("boom".into()),
            last_transition_time: Some(Time(ts(1000))),
        }
    }

    #[test]
    fn counts_and_conditions() {
        let template: BTreeMap<String, String> =
            [("app".into(), "web".into()), ("tier".into(), "fe".into())].into();
        let pods = vec![
            pod(&[("app", "web"), ("tier", "fe")], Some(100)),
            pod(&[("app", "web"), ("tier", "fe")], Some(995)),
            pod(&[("app", "web")], None),
        ];
        struct Case {
            what: &'static str,
            current: Vec<ReplicaSetCondition>,
            desired: i32,
            error: Option<&'static str>,
            want_failure: Option<&'static str>,
        }
        let cases = [
            Case {
                what: "no error",
                current: vec![],
                desired: 3,
                error: None,
                want_failure: None,
            },
            Case {
                what: "create failed",
                current: vec![],
                desired: 5,
                error: Some("boom"),
                want_failure: Some("FailedCreate"),
            },
            Case {
                what: "delete failed",
                current: vec![],
                desired: 1,
                error: Some("boom"),
                want_failure: Some("FailedDelete"),
            },
            Case {
                what: "kept while failing",
                current: vec![failure("FailedCreate")],
                desired: 1,
                error: Some("boom"),
                want_failure: Some("FailedCreate"),
            },
            Case {
                what: "cleared on success",
                current: vec![failure("FailedCreate")],
                desired: 3,
                error: None,
                want_failure: None,
            },
        ];
        for c in cases {
            let status = calculate_status(StatusInput {
                current: ReplicaSetStatus {
                    conditions: Some(c.current),
                    ..Default::default()
                },
                desired_replicas: c.desired,
                min_ready_seconds: 10,
                template_labels: Some(&template),
                generation: Some(4),
                pods: &pods,
                manage_error: c.error.map(String::from),
                now: ts(1000),
            });
            assert_eq!(status.replicas, 3, "{}", c.what);
            assert_eq!(status.fully_labeled_replicas, Some(2), "{}", c.what);
            assert_eq!(status.ready_replicas, Some(2), "{}", c.what);
            assert_eq!(status.available_replicas, Some(1), "{}", c.what);
            assert_eq!(status.observed_generation, Some(4), "{}", c.what);
            let failure = status
                .conditions
                .as_ref()
                .and_then(|cs| cs.iter().find(|c| c.type_ == REPLICA_FAILURE))
                .and_then(|c| c.reason.as_deref());
            assert_eq!(failure, c.want_failure, "{}", c.what);
        }
    }

    #[test]
    fn unchanged_status_is_not_written() {
        let a = ReplicaSetStatus {
            replicas: 2,
            ready_replicas: Some(0),
            conditions: Some(vec![]),
            ..Default::default()
        };
        let b = ReplicaSetStatus {
            replicas: 2,
            ..Default::default()
        };
        assert!(!status_changed(&a, &b));
        let c = ReplicaSetStatus {
            observed_generation: Some(2),
            ..b.clone()
        };
        assert!(status_changed(&b, &c));
    }
}
