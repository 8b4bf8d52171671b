//! The Deployment's status: counts summed from its ReplicaSets and the `Available` and
//! `Progressing` conditions (progress deadline, pause and resume).

use super::replicas::{
    available_replicas, desired, max_unavailable, ready_replicas, spec_replicas, status_replicas,
};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

pub const PROGRESSING: &str = "Progressing";
pub const AVAILABLE: &str = "Available";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const RS_UPDATED: &str = "ReplicaSetUpdated";
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const PAUSED: &str = "DeploymentPaused";
pub const RESUMED: &str = "DeploymentResumed";
pub const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
pub const MIN_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const MIN_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

pub fn get_condition<'a>(
    status: &'a DeploymentStatus,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
    }
}

/// Sets a condition unless one with the same status and reason is there; the transition time
/// survives a change that keeps the status.
pub fn set_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    if let Some(current) = get_condition(status, &condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, &condition.type_);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition);
}

/// `spec.progressDeadlineSeconds`, unless unset or "never" (MaxInt32).
pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .filter(|s| *s != i32::MAX)
}

pub fn is_paused(d: &Deployment) -> bool {
    d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false)
}

fn generation(d: &Deployment) -> i64 {
    d.metadata.generation.unwrap_or(0)
}

/// Whether the rollout is done: every desired replica updated and available, nothing else left.
pub fn complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let want = desired(d);
    s.updated_replicas.unwrap_or(0) == want
        && s.replicas.unwrap_or(0) == want
        && s.available_replicas.unwrap_or(0) == want
        && s.observed_generation.unwrap_or(0) >= generation(d)
}

/// Whether `new` shows progress over the Deployment's current status.
fn progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_olds = n(old.replicas) - n(old.updated_replicas);
    let new_olds = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_olds < old_olds
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

fn timed_out(d: &Deployment, new: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(cond) = get_condition(new, PROGRESSING) else {
        return false;
    };
    match cond.reason.as_deref() {
        Some(NEW_RS_AVAILABLE) => false,
        Some(TIMED_OUT) => true,
        _ => cond.last_update_time.as_ref().is_some_and(|t| {
            t.0.checked_add(jiff::SignedDuration::from_secs(i64::from(deadline)))
                .is_ok_and(|end| end < now)
        }),
    }
}

/// The status the ReplicaSets give, with the conditions carried over and `Available` set.
pub fn calculate_status(
    d: &Deployment,
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    now: Timestamp,
) -> DeploymentStatus {
    let available: i32 = all.iter().map(|rs| available_replicas(rs)).sum();
    let total: i32 = all.iter().map(|rs| spec_replicas(rs)).sum();
    let old = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: Some(generation(d)),
        replicas: Some(all.iter().map(|rs| status_replicas(rs)).sum()),
        updated_replicas: Some(new_rs.map_or(0, status_replicas)),
        ready_replicas: Some(all.iter().map(|rs| ready_replicas(rs)).sum()),
        available_replicas: Some(available),
        unavailable_replicas: Some((total - available).max(0)),
        collision_count: old.collision_count,
        conditions: old.conditions.clone(),
        terminating_replicas: old.terminating_replicas,
    };
    if available >= desired(d) - max_unavailable(d) {
        let c = new_condition(
            AVAILABLE,
            "True",
            MIN_AVAILABLE,
            "Deployment has minimum availability.".into(),
            now,
        );
        set_condition(&mut status, c);
    } else {
        let c = new_condition(
            AVAILABLE,
            "False",
            MIN_UNAVAILABLE,
            "Deployment does not have minimum availability.".into(),
            now,
        );
        set_condition(&mut status, c);
    }
    status
}

/// The status after a rollout step: `calculate_status` plus the `Progressing` verdict and the
/// ReplicaSets' failure condition.
pub fn rollout_status(
    d: &Deployment,
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    now: Timestamp,
) -> DeploymentStatus {
    let mut status = calculate_status(d, all, new_rs, now);
    if progress_deadline(d).is_none() {
        remove_condition(&mut status, PROGRESSING);
    }
    let current = d
        .status
        .as_ref()
        .and_then(|s| get_condition(s, PROGRESSING))
        .cloned();
    let already_complete = status.replicas == status.updated_replicas
        && current
            .as_ref()
            .is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE));
    let subject = match new_rs.and_then(|rs| rs.metadata.name.as_deref()) {
        Some(name) => format!("ReplicaSet {name:?}"),
        None => format!(
            "Deployment {:?}",
            d.metadata.name.as_deref().unwrap_or_default()
        ),
    };
    if progress_deadline(d).is_some() && !already_complete {
        if complete(d, &status) {
            let c = new_condition(
                PROGRESSING,
                "True",
                NEW_RS_AVAILABLE,
                format!("{subject} has successfully progressed."),
                now,
            );
            set_condition(&mut status, c);
        } else if progressing(d, &status) {
            let mut c = new_condition(
                PROGRESSING,
                "True",
                RS_UPDATED,
                format!("{subject} is progressing."),
                now,
            );
            // Progress refreshes lastUpdateTime (the deadline's start) even with the same reason.
            if let Some(current) = &current {
                if current.status == "True" {
                    c.last_transition_time = current.last_transition_time.clone();
                }
                remove_condition(&mut status, PROGRESSING);
            }
            set_condition(&mut status, c);
        } else if timed_out(d, &status, now) {
            let c = new_condition(
                PROGRESSING,
                "False",
                TIMED_OUT,
                format!("{subject} has timed out progressing."),
                now,
            );
            set_condition(&mut status, c);
        }
    }
    let failure = new_rs
        .into_iter()
        .chain(all.iter().copied())
        .flat_map(|rs| rs.status.iter().flat_map(|s| s.conditions.iter().flatten()))
        .find(|c| c.type_ == REPLICA_FAILURE)
        .cloned();
    match failure {
        Some(f) => set_condition(
            &mut status,
            DeploymentCondition {
                type_: REPLICA_FAILURE.to_string(),
                status: f.status,
                reason: f.reason,
                message: f.message,
                last_update_time: f.last_transition_time.clone(),
                last_transition_time: f.last_transition_time,
            },
        ),
        None => remove_condition(&mut status, REPLICA_FAILURE),
    }
    status
}

/// When to look at a stuck rollout again to declare it timed out: `None` when there is no
/// deadline to watch (none set, no Progressing condition yet, complete or already timed out).
pub fn requeue_after(d: &Deployment, new: &DeploymentStatus, now: Timestamp) -> Option<Duration> {
    let deadline = progress_deadline(d)?;
    let current = d
        .status
        .as_ref()
        .and_then(|s| get_condition(s, PROGRESSING))?;
    if complete(d, new) || current.reason.as_deref() == Some(TIMED_OUT) {
        return None;
    }
    let last = current.last_update_time.as_ref()?.0;
    let end = last
        .checked_add(jiff::SignedDuration::from_secs(i64::from(deadline)))
        .ok()?;
    let left = end.duration_since(now);
    // A second past the deadline, so the check sees it exceeded.
    let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
    Some(left + Duration::from_secs(1))
}

/// The Progressing condition a pause or resume calls for, if it changes anything. A reported
/// timeout is kept.
pub fn paused_condition(d: &Deployment, now: Timestamp) -> Option<DeploymentCondition> {
    progress_deadline(d)?;
    let current = d
        .status
        .as_ref()
        .and_then(|s| get_condition(s, PROGRESSING));
    let reason = current.and_then(|c| c.reason.as_deref());
    if reason == Some(TIMED_OUT) {
        return None;
    }
    let paused_recorded = reason == Some(PAUSED);
    if is_paused(d) && !paused_recorded {
        Some(new_condition(
            PROGRESSING,
            "Unknown",
            PAUSED,
            "Deployment is paused".into(),
            now,
        ))
    } else if !is_paused(d) && paused_recorded {
        Some(new_condition(
            PROGRESSING,
            "Unknown",
            RESUMED,
            "Deployment is resumed".into(),
            now,
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::replicas::tests::{deployment, rs};
    use super::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid timestamp")
    }

    fn with_progressing(
        mut d: Deployment,
        reason: &str,
        updated_at: i64,
        status: DeploymentStatus,
    ) -> Deployment {
        d.spec.as_mut().expect("spec").progress_deadline_seconds = Some(10);
        let mut s = status;
        s.conditions = Some(vec![new_condition(
            PROGRESSING,
            "True",
            reason,
            String::new(),
            at(updated_at),
        )]);
        d.status = Some(s);
        d
    }

    fn reason(s: &DeploymentStatus, type_: &str) -> Option<String> {
        get_condition(s, type_).and_then(|c| c.reason.clone())
    }

    #[test]
    fn counts_and_availability() {
        let d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        let (old, new) = (rs("old", 2, 2), rs("new", 2, 1));
        let s = calculate_status(&d, &[&old, &new], Some(&new), at(0));
        assert_eq!(
            (
                s.replicas,
                s.updated_replicas,
                s.available_replicas,
                s.unavailable_replicas
            ),
            (Some(4), Some(2), Some(3), Some(1))
        );
        assert_eq!(reason(&s, AVAILABLE).as_deref(), Some(MIN_AVAILABLE));
        let s = calculate_status(&d, &[&rs("new", 3, 2)], None, at(0));
        assert_eq!(reason(&s, AVAILABLE).as_deref(), Some(MIN_UNAVAILABLE));
    }

    #[test]
    fn progressing_verdicts() {
        let base = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        let before = DeploymentStatus {
            replicas: Some(4),
            updated_replicas: Some(1),
            available_replicas: Some(3),
            ready_replicas: Some(3),
            ..Default::default()
        };
        // (ReplicaSets (old, new), now) -> reason
        let cases = [
            // Nothing moved, deadline not passed: condition kept.
            ((3, 3, 1, 0), 5, NEW_RS_CREATED),
            // Nothing moved past the deadline.
            ((3, 3, 1, 0), 11, TIMED_OUT),
            // A new pod became available: progress, even past the deadline.
            ((3, 3, 1, 1), 30, RS_UPDATED),
            // All done.
            ((0, 0, 3, 3), 30, NEW_RS_AVAILABLE),
        ];
        for ((old_n, old_a, new_n, new_a), now, want) in cases {
            let mut d = with_progressing(base.clone(), NEW_RS_CREATED, 0, before.clone());
            d.metadata.generation = Some(1);
            let (old, new) = (rs("old", old_n, old_a), rs("new", new_n, new_a));
            let s = rollout_status(&d, &[&old, &new], Some(&new), at(now));
            assert_eq!(reason(&s, PROGRESSING).as_deref(), Some(want), "now {now}");
        }
    }

    #[test]
    fn a_replica_set_failure_is_reported_and_cleared() {
        use k8s_openapi::api::apps::v1::ReplicaSetCondition;
        let d = deployment(1, IntOrString::Int(1), IntOrString::Int(0));
        let mut failing = rs("new", 1, 0);
        if let Some(s) = failing.status.as_mut() {
            s.conditions = Some(vec![ReplicaSetCondition {
                type_: REPLICA_FAILURE.into(),
                status: "True".into(),
                reason: Some("FailedCreate".into()),
                message: Some("quota".into()),
                last_transition_time: None,
            }]);
        }
        let s = rollout_status(&d, &[&failing], Some(&failing), at(0));
        assert_eq!(reason(&s, REPLICA_FAILURE).as_deref(), Some("FailedCreate"));
        let mut d = d;
        d.status = Some(s);
        let healthy = rs("new", 1, 1);
        let s = rollout_status(&d, &[&healthy], Some(&healthy), at(1));
        assert!(get_condition(&s, REPLICA_FAILURE).is_none());
    }

    #[test]
    fn requeue_waits_for_the_deadline() {
        let base = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        let d = with_progressing(base.clone(), RS_UPDATED, 0, DeploymentStatus::default());
        let s = DeploymentStatus::default();
        assert_eq!(requeue_after(&d, &s, at(4)), Some(Duration::from_secs(7)));
        assert_eq!(requeue_after(&d, &s, at(40)), Some(Duration::from_secs(1)));
        let d = with_progressing(base.clone(), TIMED_OUT, 0, DeploymentStatus::default());
        assert_eq!(requeue_after(&d, &s, at(4)), None);
        assert_eq!(requeue_after(&base, &s, at(4)), None);
    }

    #[test]
    fn pause_and_resume_conditions() {
        let base = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        let mut paused = with_progressing(base.clone(), RS_UPDATED, 0, DeploymentStatus::default());
        paused.spec.as_mut().expect("spec").paused = Some(true);
        assert_eq!(
            paused_condition(&paused, at(1))
                .and_then(|c| c.reason)
                .as_deref(),
            Some(PAUSED)
        );
        let resumed = with_progressing(base.clone(), PAUSED, 0, DeploymentStatus::default());
        assert_eq!(
            paused_condition(&resumed, at(1))
                .and_then(|c| c.reason)
                .as_deref(),
            Some(RESUMED)
        );
        let mut timed_out =
            with_progressing(base.clone(), TIMED_OUT, 0, DeploymentStatus::default());
        timed_out.spec.as_mut().expect("spec").paused = Some(true);
        assert!(paused_condition(&timed_out, at(1)).is_none());
        assert!(
            paused_condition(
                &with_progressing(base, RS_UPDATED, 0, DeploymentStatus::default()),
                at(1)
            )
            .is_none()
        );
    }
}
