//! The scheduler's own metrics, with upstream's names and labels.

use std::time::Duration;

/// The outcome label of `scheduler_schedule_attempts_total` and the attempt duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    Scheduled,
    Unschedulable,
    Error,
}

impl AttemptResult {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
        }
    }
}

/// One scheduling attempt: counted, and its duration observed, per result and profile.
pub fn observe_attempt(result: AttemptResult, profile: &str, duration: Duration) {
    metrics::counter!(
        "scheduler_schedule_attempts_total",
        "result" => result.as_str(),
        "profile" => profile.to_string()
    )
    .increment(1);
    metrics::histogram!(
        "scheduler_scheduling_attempt_duration_seconds",
        "result" => result.as_str(),
        "profile" => profile.to_string()
    )
    .record(duration.as_secs_f64());
}

/// The scheduling SLI: from the pod's first entry in the queue to its binding, by attempts.
pub fn observe_pod_scheduled(attempts: u32, since_first_attempt: Duration) {
    metrics::histogram!(
        "scheduler_pod_scheduling_sli_duration_seconds",
        "attempts" => attempts.to_string()
    )
    .record(since_first_attempt.as_secs_f64());
}

/// A plugin extension point's duration (upstream's `scheduler_framework_extension_point_duration_seconds`).
pub fn observe_extension_point(
    point: &'static str,
    status: &'static str,
    profile: &str,
    d: Duration,
) {
    metrics::histogram!(
        "scheduler_framework_extension_point_duration_seconds",
        "extension_point" => point,
        "status" => status,
        "profile" => profile.to_string()
    )
    .record(d.as_secs_f64());
}
