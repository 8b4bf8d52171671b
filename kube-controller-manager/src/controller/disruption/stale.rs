//! Pods marked as disruption targets (the eviction API's `DisruptionTarget` condition) that
//! were not deleted after all: after [`STALE_TIMEOUT`] the condition is reset to False, as
//! upstream's stale pod disruption worker does.

use k8s_openapi::api::core::v1::Pod;
use std::time::Duration;

pub const STALE_TIMEOUT: Duration = Duration::from_secs(120);
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";

/// How long until the pod's DisruptionTarget condition is stale (zero: it is), or None when
/// there is nothing to reset (no such True condition, or the pod is being deleted).
pub fn stale_in(pod: &Pod, now: jiff::Timestamp) -> Option<Duration> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == DISRUPTION_TARGET && c.status == "True")?;
    let since = condition.last_transition_time.as_ref().map_or(now, |t| t.0);
    let stale_at = since.checked_add(STALE_TIMEOUT).unwrap_or(now);
    Some(if stale_at <= now {
        Duration::ZERO
    } else {
        stale_at.duration_since(now).unsigned_abs()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(status: &str, age_secs: u64, deleting: bool) -> Pod {
        let now = jiff::Timestamp::now();
        let mut pod = Pod {
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: DISRUPTION_TARGET.into(),
                    status: status.into(),
                    last_transition_time: Some(Time(
                        now.checked_sub(Duration::from_secs(age_secs)).unwrap(),
                    )),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        if deleting {
            pod.metadata.deletion_timestamp = Some(Time(now));
        }
        pod
    }

    #[test]
    fn staleness() {
        let now = jiff::Timestamp::now();
        let cases = [
            ("fresh", pod("True", 20, false), Some(true)),
            ("old", pod("True", 300, false), Some(false)),
            ("deleting", pod("True", 300, true), None),
            ("reset already", pod("False", 300, false), None),
        ];
        for (name, pod, want) in cases {
            let got = stale_in(&pod, now).map(|d| d > Duration::ZERO);
            assert_eq!(got, want, "{name}");
        }
        assert!(stale_in(&Pod::default(), now).is_none());
    }
}
