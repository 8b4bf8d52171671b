//! Pod re-creation backoff after failures: 10 s doubling per consecutive failure, capped at
//! 6 min, counted from the last failure (upstream's backoff records).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use std::time::Duration;

pub const BASE: Duration = Duration::from_secs(10);
pub const MAX: Duration = Duration::from_secs(360);

/// The delay owed after `failures` consecutive failures (none after zero).
pub fn delay(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let shift = (failures - 1).min(16);
    BASE.saturating_mul(1u32 << shift).min(MAX)
}

/// How long to wait, at `now`, before creating a replacement after `failures` consecutive
/// failures, the last one at `last_failure`.
pub fn remaining(failures: u32, last_failure: Option<Timestamp>, now: Timestamp) -> Duration {
    let Some(last) = last_failure else {
        return Duration::ZERO;
    };
    let wait = delay(failures);
    let elapsed = now.duration_since(last);
    let elapsed = Duration::try_from(elapsed).unwrap_or(Duration::ZERO);
    wait.saturating_sub(elapsed)
}

/// When a finished pod finished: its containers' latest finish time, else the Ready
/// condition's last transition, else its deletion or creation time.
pub fn finish_time(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref();
    let containers = status
        .into_iter()
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .chain(s.container_statuses.iter())
        })
        .flatten();
    let finished = containers
        .filter_map(|cs| cs.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max();
    if finished.is_some() {
        return finished;
    }
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    ready
        .or_else(|| pod.metadata.deletion_timestamp.as_ref().map(|t| t.0))
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_capped() {
        let cases = [
            (0, 0),
            (1, 10),
            (2, 20),
            (3, 40),
            (6, 320),
            (7, 360),
            (40, 360),
        ];
        for (failures, secs) in cases {
            assert_eq!(delay(failures), Duration::from_secs(secs), "{failures}");
        }
    }

    #[test]
    fn remaining_counts_from_last_failure() {
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().expect("ts");
        let at = |s: &str| Some(s.parse::<Timestamp>().expect("ts"));
        assert_eq!(remaining(2, None, now), Duration::ZERO);
        assert_eq!(
            remaining(2, at("2026-01-01T00:00:50Z"), now),
            Duration::from_secs(10)
        );
        assert_eq!(
            remaining(1, at("2026-01-01T00:00:00Z"), now),
            Duration::ZERO
        );
        assert_eq!(
            remaining(0, at("2026-01-01T00:01:00Z"), now),
            Duration::ZERO
        );
    }
}
