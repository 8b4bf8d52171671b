//! `spec.behavior`'s scaling policies: how far one step may go given the scale events of each
//! policy's period, as upstream's `convertDesiredReplicasWithBehaviorRate`.

use super::replicas::Clamped;
use k8s_openapi::api::autoscaling::v2::HPAScalingRules;
use std::time::{Duration, Instant};

/// One rescale of the target: how many replicas it added (or removed) and when.
#[derive(Clone, Copy, Debug)]
pub struct ScaleEvent {
    pub change: i32,
    pub at: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Select {
    Max,
    Min,
    Disabled,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Policy {
    Pods(i32),
    Percent(i32),
}

/// One direction's rules, with upstream's defaults for whatever is unset.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    select: Select,
    policies: Vec<(Policy, Duration)>,
}

impl Rules {
    pub fn from_spec(spec: Option<&HPAScalingRules>, up: bool) -> Self {
        let select = match spec.and_then(|s| s.select_policy.as_deref()) {
            Some("Min") => Select::Min,
            Some("Disabled") => Select::Disabled,
            _ => Select::Max,
        };
        let period = |s: i32| Duration::from_secs(u64::try_from(s).unwrap_or(0));
        let policies: Vec<_> = spec
            .and_then(|s| s.policies.as_ref())
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        let policy = match p.type_.as_str() {
                            "Pods" => Policy::Pods(p.value),
                            "Percent" => Policy::Percent(p.value),
                            _ => return None,
                        };
                        Some((policy, period(p.period_seconds)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let policies = if !policies.is_empty() {
            policies
        } else if up {
            vec![
                (Policy::Pods(4), Duration::from_secs(15)),
                (Policy::Percent(100), Duration::from_secs(15)),
            ]
        } else {
            vec![(Policy::Percent(100), Duration::from_secs(15))]
        };
        Self { select, policies }
    }

    /// The longest policy period: older events no longer matter.
    pub fn longest_period(&self) -> Duration {
        self.policies
            .iter()
            .map(|(_, p)| *p)
            .max()
            .unwrap_or_default()
    }
}

fn changed_within(events: &[ScaleEvent], period: Duration, now: Instant) -> i32 {
    let cutoff = now.checked_sub(period);
    events
        .iter()
        .filter(|e| cutoff.is_none_or(|c| e.at > c))
        .map(|e| e.change)
        .sum()
}

fn scale_up_limit(current: i32, events: &[ScaleEvent], rules: &Rules, now: Instant) -> i32 {
    if rules.select == Select::Disabled {
        return current;
    }
    let proposals = rules.policies.iter().map(|(policy, period)| {
        let start = current - changed_within(events, *period, now);
        match policy {
            Policy::Pods(n) => start.saturating_add(*n),
            Policy::Percent(p) => (f64::from(start) * (1.0 + f64::from(*p) / 100.0)).ceil() as i32,
        }
    });
    let limit = match rules.select {
        Select::Min => proposals.min(),
        _ => proposals.max(),
    };
    limit.unwrap_or(current).max(current)
}

fn scale_down_limit(current: i32, events: &[ScaleEvent], rules: &Rules, now: Instant) -> i32 {
    if rules.select == Select::Disabled {
        return current;
    }
    let proposals = rules.policies.iter().map(|(policy, period)| {
        let start = current + changed_within(events, *period, now);
        match policy {
            Policy::Pods(n) => start.saturating_sub(*n),
            Policy::Percent(p) => (f64::from(start) * (1.0 - f64::from(*p) / 100.0)) as i32,
        }
    });
    // The least change is the highest floor.
    let limit = match rules.select {
        Select::Min => proposals.max(),
        _ => proposals.min(),
    };
    limit.unwrap_or(current).min(current)
}

/// `desired` limited by the policies and by [min, max].
#[allow(clippy::too_many_arguments)]
pub fn rate_limited(
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
    up: (&Rules, &[ScaleEvent]),
    down: (&Rules, &[ScaleEvent]),
    now: Instant,
) -> Clamped {
    let within = Clamped {
        replicas: desired,
        limited: false,
        reason: "DesiredWithinRange",
        message: "the desired count is within the acceptable range",
    };
    if desired > current {
        let limit = scale_up_limit(current, up.1, up.0, now);
        let (upper, reason, message) = if max > limit {
            (
                limit,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        } else {
            (
                max,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        };
        if desired > upper {
            return Clamped {
                replicas: upper,
                limited: true,
                reason,
                message,
            };
        }
    } else if desired < current {
        let limit = scale_down_limit(current, down.1, down.0, now);
        let (lower, reason, message) = if min < limit {
            (
                limit,
                "ScaleDownLimit",
                "the desired replica count is decreasing faster than the maximum scale rate",
            )
        } else {
            (
                min,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        };
        if desired < lower {
            return Clamped {
                replicas: lower,
                limited: true,
                reason,
                message,
            };
        }
    }
    within
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::autoscaling::v2::HPAScalingPolicy;

    fn rules(select: &str, policies: &[(&str, i32, i32)]) -> Rules {
        Rules::from_spec(
            Some(&HPAScalingRules {
                select_policy: Some(select.into()),
                policies: Some(
                    policies
                        .iter()
                        .map(|(t, v, p)| HPAScalingPolicy {
                            type_: (*t).into(),
                            value: *v,
                            period_seconds: *p,
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            true,
        )
    }

    #[test]
    fn policy_table() {
        let now = Instant::now();
        let recent = [ScaleEvent {
            change: 2,
            at: now - Duration::from_secs(5),
        }];
        let none: [ScaleEvent; 0] = [];
        let default_up = Rules::from_spec(None, true);
        let default_down = Rules::from_spec(None, false);
        let pods2 = rules("Max", &[("Pods", 2, 60)]);
        let both_min = rules("Min", &[("Pods", 4, 60), ("Percent", 50, 60)]);
        let disabled = rules("Disabled", &[("Pods", 4, 60)]);
        // (what, current, desired, min, max, up rules, up events, down rules, down events) -> (replicas, reason)
        type Case<'a> = (
            &'a str,
            i32,
            i32,
            i32,
            i32,
            &'a Rules,
            &'a [ScaleEvent],
            &'a Rules,
            &'a [ScaleEvent],
            (i32, &'a str),
        );
        let cases: [Case; 9] = [
            (
                "defaults: +4 pods or +100%",
                3,
                20,
                1,
                50,
                &default_up,
                &none,
                &default_down,
                &none,
                (7, "ScaleUpLimit"),
            ),
            (
                "defaults: +100% of 10",
                10,
                40,
                1,
                50,
                &default_up,
                &none,
                &default_down,
                &none,
                (20, "ScaleUpLimit"),
            ),
            (
                "max below the rate",
                3,
                20,
                1,
                5,
                &default_up,
                &none,
                &default_down,
                &none,
                (5, "TooManyReplicas"),
            ),
            (
                "pods policy",
                3,
                20,
                1,
                50,
                &pods2,
                &none,
                &default_down,
                &none,
                (5, "ScaleUpLimit"),
            ),
            (
                "pods policy spent in the period",
                5,
                20,
                1,
                50,
                &pods2,
                &recent,
                &default_down,
                &none,
                (5, "ScaleUpLimit"),
            ),
            (
                "select Min",
                10,
                40,
                1,
                50,
                &both_min,
                &none,
                &default_down,
                &none,
                (14, "ScaleUpLimit"),
            ),
            (
                "disabled",
                3,
                20,
                1,
                50,
                &disabled,
                &none,
                &default_down,
                &none,
                (3, "ScaleUpLimit"),
            ),
            (
                "scale down by at most 100%",
                10,
                1,
                1,
                50,
                &default_up,
                &none,
                &default_down,
                &none,
                (1, "DesiredWithinRange"),
            ),
            (
                "scale down limited by pods",
                10,
                1,
                1,
                50,
                &default_up,
                &none,
                &rules("Max", &[("Pods", 3, 60)]),
                &none,
                (7, "ScaleDownLimit"),
            ),
        ];
        for (what, current, desired, min, max, ur, ue, dr, de, (want, reason)) in cases {
            let got = rate_limited(current, desired, min, max, (ur, ue), (dr, de), now);
            assert_eq!((got.replicas, got.reason), (want, reason), "{what}");
        }
    }
}
