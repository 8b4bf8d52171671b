//! Job conditions and the success policy: how a Job's outcome is recorded.

use super::indexes;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, SuccessPolicy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeSet;

pub const COMPLETE: &str = "Complete";
pub const FAILED: &str = "Failed";
pub const FAILURE_TARGET: &str = "FailureTarget";
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
pub const SUSPENDED: &str = "Suspended";

pub fn find<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

pub fn is_true(status: &JobStatus, type_: &str) -> bool {
    find(status, type_).is_some_and(|c| c.status == "True")
}

/// The terminal condition (Complete or Failed) when the Job has finished.
pub fn finished(job: &Job) -> Option<&JobCondition> {
    let status = job.status.as_ref()?;
    status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == COMPLETE || c.type_ == FAILED) && c.status == "True")
}

/// Sets a condition; the transition time changes only when the status does. Returns whether
/// anything changed.
pub fn set(
    status: &mut JobStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_) {
        if c.status == value && c.reason.as_deref() == Some(reason) {
            return false;
        }
        if c.status != value {
            c.last_transition_time = Some(Time(now));
        }
        c.status = value.into();
        c.reason = Some(reason.into());
        c.message = Some(message.into());
        c.last_probe_time = Some(Time(now));
        return true;
    }
    conditions.push(JobCondition {
        type_: type_.into(),
        status: value.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    });
    true
}

/// The message of the first success policy rule the succeeded indexes satisfy.
pub fn success_policy_met(
    policy: &SuccessPolicy,
    succeeded: &BTreeSet<i32>,
    completions: i32,
) -> Option<String> {
    for (i, rule) in policy.rules.iter().enumerate() {
        let met = match (&rule.succeeded_indexes, rule.succeeded_count) {
            (Some(ranges), count) => {
                let wanted = indexes::parse(Some(ranges), completions);
                let hits = wanted.intersection(succeeded).count();
                match count {
                    Some(n) => hits >= n.max(0) as usize,
                    None => !wanted.is_empty() && hits == wanted.len(),
                }
            }
            (None, Some(n)) => succeeded.len() >= n.max(0) as usize,
            (None, None) => false,
        };
        if met {
            return Some(format!("Matched rules at index {i}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn success_policy_rules() {
        let policy: SuccessPolicy = serde_json::from_value(json!({"rules": [
            {"succeededIndexes": "0,2-3"},
            {"succeededIndexes": "4-7", "succeededCount": 2},
            {"succeededCount": 5},
        ]}))
        .expect("policy");
        let set = |v: &[i32]| v.iter().copied().collect::<BTreeSet<_>>();
        let cases: &[(&[i32], Option<usize>)] = &[
            (&[], None),
            (&[0, 2], None),
            (&[0, 2, 3], Some(0)),
            (&[4, 9], None),
            (&[4, 6], Some(1)),
            (&[0, 1, 8, 9, 10], Some(2)),
        ];
        for (done, want) in cases {
            let got = success_policy_met(&policy, &set(done), 12);
            assert_eq!(
                got,
                want.map(|i| format!("Matched rules at index {i}")),
                "{done:?}"
            );
        }
    }

    #[test]
    fn set_keeps_transition_time_when_status_unchanged() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().expect("ts");
        let t1: Timestamp = "2026-01-01T00:01:00Z".parse().expect("ts");
        let mut status = JobStatus::default();
        assert!(set(&mut status, SUSPENDED, "True", "JobSuspended", "m", t0));
        assert!(!set(
            &mut status,
            SUSPENDED,
            "True",
            "JobSuspended",
            "m",
            t1
        ));
        assert!(set(&mut status, SUSPENDED, "False", "JobResumed", "m", t1));
        let c = find(&status, SUSPENDED).expect("condition");
        assert_eq!(c.last_transition_time, Some(Time(t1)));
    }
}
