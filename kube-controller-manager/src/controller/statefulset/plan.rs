//! What one sync of a StatefulSet does to its pods (upstream's `updateStatefulSet`), as a pure
//! decision over the pods in the cache: create the missing ordinals, replace failed pods,
//! remove ordinals beyond the replica count from the highest, then roll the update down from
//! the highest ordinal to the partition. Under OrderedReady each step waits for the one before
//! it to be Running and Ready (and available); under Parallel everything happens at once, and
//! only the rolling update still goes one pod at a time.

use super::identity::{identity_matches, ordinal_of, pod_revision};
use crate::controller::utils::pods::{is_pod_available, is_pod_ready};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;

/// Which revision a new pod is created from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Current,
    Update,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Create {
        ordinal: i32,
        from: Which,
    },
    /// Delete a pod; `condemned` when its ordinal is beyond the replica count.
    Delete {
        name: String,
        condemned: bool,
    },
    /// Delete a finished pod so it is created again (`failed` tells Failed from Succeeded).
    Recreate {
        name: String,
        failed: bool,
    },
    /// Put the identity labels back on a pod.
    FixIdentity {
        name: String,
        ordinal: i32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    RollingUpdate { partition: i32 },
    OnDelete,
}

pub struct PlanInput<'a> {
    pub set: &'a StatefulSet,
    pub pods: &'a [Arc<Pod>],
    pub start: i32,
    pub replicas: i32,
    pub monotonic: bool,
    pub strategy: Strategy,
    pub update_revision: &'a str,
    pub min_ready_seconds: i32,
    pub now: Timestamp,
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn is_finished(pod: &Pod) -> bool {
    matches!(phase(pod), "Failed" | "Succeeded")
}

pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && is_pod_ready(pod)
}

/// Running, Ready, available after minReadySeconds and not being deleted.
pub fn is_healthy(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    is_running_and_ready(pod)
        && !is_terminating(pod)
        && is_pod_available(pod, min_ready_seconds, now)
}

/// The revision a newly created pod of `ordinal` runs: ordinals below the partition keep the
/// current revision.
pub fn new_pod_revision(strategy: Strategy, start: i32, ordinal: i32) -> Which {
    match strategy {
        Strategy::RollingUpdate { partition } if ordinal < start.saturating_add(partition) => {
            Which::Current
        }
        _ => Which::Update,
    }
}

pub fn plan(input: &PlanInput<'_>) -> Vec<Action> {
    let mut actions = Vec::new();
    plan_into(input, &mut actions);
    actions
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn plan_into(input: &PlanInput<'_>, actions: &mut Vec<Action>) {
    let healthy = |p: &Pod| is_healthy(p, input.min_ready_seconds, input.now);
    let count = usize::try_from(input.replicas).unwrap_or(0);
    let mut slots: Vec<Option<&Arc<Pod>>> = vec![None; count];
    let mut condemned: Vec<(i32, &Arc<Pod>)> = Vec::new();
    for pod in input.pods {
        let Some(ordinal) = ordinal_of(input.set, pod) else {
            continue;
        };
        let index = i64::from(ordinal) - i64::from(input.start);
        match usize::try_from(index) {
            Ok(i) if i < count => slots[i] = Some(pod),
            _ => condemned.push((ordinal, pod)),
        }
    }
    condemned.sort_by_key(|(ordinal, _)| std::cmp::Reverse(*ordinal));

    for (i, slot) in slots.iter().enumerate() {
        let ordinal = input.start + i32::try_from(i).unwrap_or(i32::MAX);
        let Some(pod) = slot else {
            actions.push(Action::Create {
                ordinal,
                from: new_pod_revision(input.strategy, input.start, ordinal),
            });
            if input.monotonic {
                return;
            }
            continue;
        };
        if is_finished(pod) {
            // Replaced once the old one is gone (its deletion requeues the set).
            if !is_terminating(pod) {
                actions.push(Action::Recreate {
                    name: name(pod),
                    failed: phase(pod) == "Failed",
                });
            }
            if input.monotonic {
                return;
            }
            continue;
        }
        if is_terminating(pod) || !healthy(pod) {
            if input.monotonic {
                return;
            }
            continue;
        }
        if !identity_matches(input.set, pod) {
            actions.push(Action::FixIdentity {
                name: name(pod),
                ordinal,
            });
        }
    }

    for (_, pod) in &condemned {
        if is_terminating(pod) {
            if input.monotonic {
                return;
            }
            continue;
        }
        actions.push(Action::Delete {
            name: name(pod),
            condemned: true,
        });
        if input.monotonic {
            return;
        }
    }

    let Strategy::RollingUpdate { partition } = input.strategy else {
        return;
    };
    if !actions.is_empty() {
        // Scaling first; the rollout continues once the set has its pods.
        return;
    }
    let lowest = usize::try_from(partition.max(0)).unwrap_or(0);
    for slot in slots.iter().skip(lowest).rev() {
        let Some(pod) = slot else { return };
        if pod_revision(pod) != Some(input.update_revision) && !is_terminating(pod) {
            actions.push(Action::Delete {
                name: name(pod),
                condemned: false,
            });
            return;
        }
        if !healthy(pod) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::statefulset::identity::{
        POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL,
    };
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;

    fn set() -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// state: "ready", "pending", "failed", "deleting"; rev: the revision label.
    fn pod(ordinal: i32, state: &str, rev: &str) -> Arc<Pod> {
        let name = format!("web-{ordinal}");
        let ready = state == "ready";
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some("ns".into()),
                labels: Some(
                    [
                        (POD_NAME_LABEL.to_string(), name),
                        (POD_INDEX_LABEL.to_string(), ordinal.to_string()),
                        (REVISION_LABEL.to_string(), rev.to_string()),
                    ]
                    .into(),
                ),
                deletion_timestamp: (state == "deleting").then_some(Time(Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some(
                    match state {
                        "ready" | "deleting" => "Running",
                        "failed" => "Failed",
                        _ => "Pending",
                    }
                    .into(),
                ),
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

    fn create(ordinal: i32, from: Which) -> Action {
        Action::Create { ordinal, from }
    }
    fn delete(name: &str, condemned: bool) -> Action {
        Action::Delete {
            name: name.into(),
            condemned,
        }
    }

    /// (what, pods, replicas, monotonic, strategy, want)
    type Case = (
        &'static str,
        Vec<Arc<Pod>>,
        i32,
        bool,
        Strategy,
        Vec<Action>,
    );

    #[test]
    fn plans() {
        use Which::{Current, Update};
        let roll = |partition| Strategy::RollingUpdate { partition };
        let cases: Vec<Case> = vec![
            (
                "ordered: first pod",
                vec![],
                3,
                true,
                roll(0),
                vec![create(0, Update)],
            ),
            (
                "ordered: waits for web-0",
                vec![pod(0, "pending", "u")],
                3,
                true,
                roll(0),
                vec![],
            ),
            (
                "ordered: next after ready",
                vec![pod(0, "ready", "u")],
                3,
                true,
                roll(0),
                vec![create(1, Update)],
            ),
            (
                "parallel: all at once",
                vec![pod(1, "pending", "u")],
                3,
                false,
                roll(0),
                vec![create(0, Update), create(2, Update)],
            ),
            (
                "failed pod deleted",
                vec![pod(0, "failed", "u")],
                1,
                true,
                roll(0),
                vec![Action::Recreate {
                    name: "web-0".into(),
                    failed: true,
                }],
            ),
            (
                "scale down from highest",
                vec![
                    pod(0, "ready", "u"),
                    pod(1, "ready", "u"),
                    pod(2, "ready", "u"),
                ],
                1,
                true,
                roll(0),
                vec![delete("web-2", true)],
            ),
            (
                "scale down waits for termination",
                vec![
                    pod(0, "ready", "u"),
                    pod(1, "ready", "u"),
                    pod(2, "deleting", "u"),
                ],
                1,
                true,
                roll(0),
                vec![],
            ),
            (
                "parallel scale down",
                vec![
                    pod(0, "ready", "u"),
                    pod(1, "ready", "u"),
                    pod(2, "ready", "u"),
                ],
                1,
                false,
                roll(0),
                vec![delete("web-2", true), delete("web-1", true)],
            ),
            (
                "partition: only the highest updated",
                vec![
                    pod(0, "ready", "c"),
                    pod(1, "ready", "c"),
                    pod(2, "ready", "c"),
                ],
                3,
                true,
                roll(2),
                vec![delete("web-2", false)],
            ),
            (
                "partition reached",
                vec![
                    pod(0, "ready", "c"),
                    pod(1, "ready", "c"),
                    pod(2, "ready", "u"),
                ],
                3,
                true,
                roll(2),
                vec![],
            ),
            (
                "recreated below partition from current",
                vec![pod(1, "ready", "c"), pod(2, "ready", "u")],
                3,
                false,
                roll(2),
                vec![create(0, Current)],
            ),
            (
                "rollout waits for the updated pod",
                vec![
                    pod(0, "ready", "c"),
                    pod(1, "ready", "c"),
                    pod(2, "pending", "u"),
                ],
                3,
                false,
                roll(0),
                vec![],
            ),
            (
                "rollout continues downward",
                vec![
                    pod(0, "ready", "c"),
                    pod(1, "ready", "c"),
                    pod(2, "ready", "u"),
                ],
                3,
                true,
                roll(0),
                vec![delete("web-1", false)],
            ),
            (
                "on delete recreates a deleted pod at the update revision",
                vec![pod(1, "ready", "c")],
                2,
                true,
                Strategy::OnDelete,
                vec![create(0, Update)],
            ),
            (
                "on delete never deletes",
                vec![pod(0, "ready", "c"), pod(1, "ready", "c")],
                2,
                true,
                Strategy::OnDelete,
                vec![],
            ),
        ];
        let s = set();
        for (what, pods, replicas, monotonic, strategy, want) in cases {
            let got = plan(&PlanInput {
                set: &s,
                pods: &pods,
                start: 0,
                replicas,
                monotonic,
                strategy,
                update_revision: "u",
                min_ready_seconds: 0,
                now: Timestamp::now(),
            });
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn ordinals_below_the_start_are_condemned() {
        let s = set();
        let pods = vec![pod(0, "ready", "u"), pod(1, "ready", "u")];
        let input = |replicas| PlanInput {
            set: &s,
            pods: &pods,
            start: 1,
            replicas,
            monotonic: true,
            strategy: Strategy::RollingUpdate { partition: 0 },
            update_revision: "u",
            min_ready_seconds: 0,
            now: Timestamp::now(),
        };
        assert_eq!(plan(&input(1)), vec![delete("web-0", true)]);
        assert_eq!(plan(&input(2)), vec![create(2, Which::Update)]);
    }

    #[test]
    fn min_ready_seconds_holds_the_next_ordinal() {
        let s = set();
        let pods = vec![pod(0, "ready", "u")];
        let input = |now| PlanInput {
            set: &s,
            pods: &pods,
            start: 0,
            replicas: 2,
            monotonic: true,
            strategy: Strategy::RollingUpdate { partition: 0 },
            update_revision: "u",
            min_ready_seconds: 10,
            now,
        };
        assert_eq!(plan(&input(Timestamp::UNIX_EPOCH)), vec![]);
        assert_eq!(
            plan(&input(Timestamp::now())),
            vec![create(1, Which::Update)]
        );
    }
}
