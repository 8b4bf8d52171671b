//! A StatefulSet's status from its pods and revisions (upstream's `computeReplicaStatus` and
//! `completeRollingUpdate`).

use super::identity::pod_revision;
use super::plan::{Strategy, is_running_and_ready, is_terminating};
use crate::controller::utils::pods::is_pod_available;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSetStatus;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;

pub struct StatusInput<'a> {
    pub pods: &'a [Arc<Pod>],
    pub current_revision: &'a str,
    pub update_revision: &'a str,
    pub strategy: Strategy,
    pub min_ready_seconds: i32,
    pub generation: Option<i64>,
    pub collision_count: Option<i32>,
    pub previous: Option<&'a StatefulSetStatus>,
    pub now: Timestamp,
}

pub fn compute_status(input: &StatusInput<'_>) -> StatefulSetStatus {
    let mut status = StatefulSetStatus {
        observed_generation: input.generation,
        collision_count: input.collision_count,
        current_revision: Some(input.current_revision.to_string()),
        update_revision: Some(input.update_revision.to_string()),
        conditions: input.previous.and_then(|p| p.conditions.clone()),
        ..Default::default()
    };
    let (mut replicas, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
    for pod in input.pods {
        replicas += 1;
        if is_running_and_ready(pod) {
            ready += 1;
            if is_pod_available(pod, input.min_ready_seconds, input.now) {
                available += 1;
            }
        }
        if !is_terminating(pod) {
            let rev = pod_revision(pod);
            if rev == Some(input.current_revision) {
                current += 1;
            }
            if rev == Some(input.update_revision) {
                updated += 1;
            }
        }
    }
    status.replicas = replicas;
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(current);
    status.updated_replicas = Some(updated);
    // A rolling update that reached every pod makes the update revision the current one.
    if matches!(input.strategy, Strategy::RollingUpdate { .. })
        && updated == replicas
        && ready == replicas
    {
        status.current_replicas = Some(updated);
        status.current_revision = Some(input.update_revision.to_string());
    }
    status
}

/// Whether a write is needed (upstream's `inconsistentStatus`).
pub fn status_changed(old: Option<&StatefulSetStatus>, new: &StatefulSetStatus) -> bool {
    let Some(old) = old else { return true };
    old.observed_generation != new.observed_generation
        || old.replicas != new.replicas
        || old.ready_replicas.unwrap_or(0) != new.ready_replicas.unwrap_or(0)
        || old.available_replicas.unwrap_or(0) != new.available_replicas.unwrap_or(0)
        || old.current_replicas.unwrap_or(0) != new.current_replicas.unwrap_or(0)
        || old.updated_replicas.unwrap_or(0) != new.updated_replicas.unwrap_or(0)
        || old.current_revision != new.current_revision
        || old.update_revision != new.update_revision
        || old.collision_count != new.collision_count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::statefulset::identity::REVISION_LABEL;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;

    fn pod(rev: &str, ready: bool) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                labels: Some([(REVISION_LABEL.to_string(), rev.to_string())].into()),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    last_transition_time: Some(Time(Timestamp::UNIX_EPOCH)),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    #[test]
    fn statuses() {
        // (pods, strategy, want (replicas, ready, current, updated, currentRevision))
        let roll = Strategy::RollingUpdate { partition: 0 };
        let cases = [
            (
                vec![pod("c", true), pod("c", true), pod("u", true)],
                roll,
                (3, 3, 2, 1, "c"),
            ),
            (
                vec![pod("u", true), pod("u", false)],
                roll,
                (2, 1, 0, 2, "c"),
            ),
            (
                vec![pod("u", true), pod("u", true)],
                roll,
                (2, 2, 2, 2, "u"),
            ),
            (
                vec![pod("u", true), pod("u", true)],
                Strategy::OnDelete,
                (2, 2, 0, 2, "c"),
            ),
        ];
        for (pods, strategy, want) in cases {
            let s = compute_status(&StatusInput {
                pods: &pods,
                current_revision: "c",
                update_revision: "u",
                strategy,
                min_ready_seconds: 0,
                generation: Some(4),
                collision_count: None,
                previous: None,
                now: Timestamp::now(),
            });
            let got = (
                s.replicas,
                s.ready_replicas.unwrap_or(0),
                s.current_replicas.unwrap_or(0),
                s.updated_replicas.unwrap_or(0),
                s.current_revision.clone().unwrap_or_default(),
            );
            assert_eq!(got, (want.0, want.1, want.2, want.3, want.4.to_string()));
            assert_eq!(s.observed_generation, Some(4));
            assert_eq!(s.update_revision.as_deref(), Some("u"));
            assert!(status_changed(None, &s));
            assert!(!status_changed(Some(&s), &s));
        }
    }
}
