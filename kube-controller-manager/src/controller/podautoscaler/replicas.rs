//! The replica count a resource-utilization target asks for (upstream's replica calculator):
//! pods grouped into ready, unready, missing (no metrics) and ignored, the 10% tolerance, and
//! the conservative treatment of unready and missing pods so they never cause flapping.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Ratios within this distance from 1 change nothing (`--horizontal-pod-autoscaler-tolerance`).
pub const TOLERANCE: f64 = 0.1;
/// A CPU sample taken this soon after the pod started may still include its start-up burst.
pub const CPU_INITIALIZATION_PERIOD: Duration = Duration::from_secs(300);
/// A pod turning unready this soon after it started is taken as still initializing.
pub const INITIAL_READINESS_DELAY: Duration = Duration::from_secs(30);

/// One pod's usage (milli-units) from the metrics API.
#[derive(Clone, Debug, PartialEq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: jiff::Timestamp,
    pub window: Duration,
}

/// What the calculator needs to know of a pod.
#[derive(Clone, Debug)]
pub struct PodState {
    pub name: String,
    pub phase: String,
    pub deleting: bool,
    /// The Ready condition: its status and last transition.
    pub ready: Option<(bool, jiff::Timestamp)>,
    pub start_time: Option<jiff::Timestamp>,
    /// The sum of the requests of the measured resource (milli-units).
    pub request: i64,
}

/// What a resource target computed.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub replicas: i32,
    /// Current utilization in percent of the requests.
    pub utilization: i32,
    /// Average usage per pod (milli-units).
    pub average: i64,
}

#[derive(Debug, Default, PartialEq)]
struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

fn add(t: jiff::Timestamp, d: Duration) -> jiff::Timestamp {
    jiff::SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(t)
}

fn group_pods(
    pods: &[PodState],
    metrics: &BTreeMap<String, PodMetric>,
    cpu: bool,
    now: jiff::Timestamp,
) -> Groups {
    let mut g = Groups::default();
    for pod in pods {
        if pod.deleting || pod.phase == "Failed" {
            g.ignored.insert(pod.name.clone());
            continue;
        }
        if pod.phase == "Pending" {
            g.unready.insert(pod.name.clone());
            continue;
        }
        let Some(metric) = metrics.get(&pod.name) else {
            g.missing.insert(pod.name.clone());
            continue;
        };
        if cpu {
            let unready = match (pod.ready, pod.start_time) {
                (Some((ready, transition)), Some(start)) => {
                    if add(start, CPU_INITIALIZATION_PERIOD) > now {
                        // Still initializing: the sample must postdate readiness.
                        !ready || metric.timestamp < add(transition, metric.window)
                    } else {
                        !ready && add(start, INITIAL_READINESS_DELAY) > transition
                    }
                }
                _ => true,
            };
            if unready {
                g.unready.insert(pod.name.clone());
                continue;
            }
        }
        g.ready += 1;
    }
    g
}

/// usage / request over the pods that have both, against the target percentage: the ratio,
/// the utilization in percent and the average usage.
fn utilization_ratio(
    metrics: &BTreeMap<String, i64>,
    requests: &BTreeMap<String, i64>,
    target: i32,
) -> Result<(f64, i32, i64), String> {
    let (mut used, mut requested, mut n) = (0i64, 0i64, 0i64);
    for (name, value) in metrics {
        if let Some(request) = requests.get(name) {
            used += value;
            requested += request;
            n += 1;
        }
    }
    if requested == 0 || n == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = (used.saturating_mul(100) / requested) as i32;
    Ok((
        f64::from(utilization) / f64::from(target.max(1)),
        utilization,
        used / n,
    ))
}

/// What a resource metric aims at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// Percent of the pods' requests.
    Utilization(i32),
    /// Average usage per pod (milli-units).
    AverageValue(i64),
}

/// The ratio of usage to `target`, the utilization in percent (0 for an average-value target)
/// and the average usage.
fn usage_ratio(
    metrics: &BTreeMap<String, i64>,
    requests: &BTreeMap<String, i64>,
    target: Target,
) -> Result<(f64, i32, i64), String> {
    match target {
        Target::Utilization(t) => utilization_ratio(metrics, requests, t),
        Target::AverageValue(v) => {
            let n = i64::try_from(metrics.len()).unwrap_or(i64::MAX);
            if n == 0 {
                return Err("no metrics returned matched known pods".into());
            }
            let average = metrics.values().sum::<i64>() / n;
            Ok((average as f64 / v.max(1) as f64, 0, average))
        }
    }
}

/// The replicas `target` asks for, given `current` replicas.
pub fn resource_replicas(
    current: i32,
    target: Target,
    pods: &[PodState],
    metrics: &BTreeMap<String, PodMetric>,
    cpu: bool,
    now: jiff::Timestamp,
) -> Result<Proposal, String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let groups = group_pods(pods, metrics, cpu, now);
    let mut usage: BTreeMap<String, i64> = metrics
        .iter()
        .filter(|(name, _)| !groups.ignored.contains(*name) && !groups.unready.contains(*name))
        .map(|(name, m)| (name.clone(), m.value))
        .collect();
    if usage.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let requests: BTreeMap<String, i64> =
        pods.iter().map(|p| (p.name.clone(), p.request)).collect();
    let (ratio, utilization, average) = usage_ratio(&usage, &requests, target)?;
    let proposal = |replicas| Proposal {
        replicas,
        utilization,
        average,
    };
    let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && groups.missing.is_empty() {
        if (1.0 - ratio).abs() <= TOLERANCE {
            return Ok(proposal(current));
        }
        return Ok(proposal((ratio * groups.ready as f64).ceil() as i32));
    }
    // Missing pods count against the move: as fully used when scaling down, idle when up.
    for name in &groups.missing {
        let request = requests.get(name).copied().unwrap_or(0);
        let assumed = match target {
            _ if ratio >= 1.0 => 0,
            Target::Utilization(t) => request * i64::from(t.max(100)) / 100,
            Target::AverageValue(v) => v,
        };
        usage.insert(name.clone(), assumed);
    }
    if scale_up_with_unready {
        for name in &groups.unready {
            usage.insert(name.clone(), 0);
        }
    }
    let (new_ratio, _, _) = usage_ratio(&usage, &requests, target)?;
    if (1.0 - new_ratio).abs() <= TOLERANCE
        || (ratio < 1.0 && new_ratio > 1.0)
        || (ratio > 1.0 && new_ratio < 1.0)
    {
        return Ok(proposal(current));
    }
    let replicas = (new_ratio * usage.len() as f64).ceil() as i32;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Ok(proposal(current));
    }
    Ok(proposal(replicas))
}

/// The ScalingLimited outcome of clamping a recommendation: the replicas, whether they were
/// limited, the condition reason and its message.
#[derive(Clone, Debug, PartialEq)]
pub struct Clamped {
    pub replicas: i32,
    pub limited: bool,
    pub reason: &'static str,
    pub message: &'static str,
}

/// Clamps `desired` into [min, max] and, without behavior rules, to upstream's scale-up rate
/// (at most double, at least 4).
pub fn clamp(current: i32, desired: i32, min: i32, max: i32, rate_limited: bool) -> Clamped {
    let scale_up_limit = (current.saturating_mul(2)).max(4);
    let (upper, upper_reason, upper_message) = if rate_limited && max > scale_up_limit {
        (
            scale_up_limit,
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
    let (lower, lower_message) = if min == 0 {
        (1, "the desired replica count is zero")
    } else {
        (
            min,
            "the desired replica count is less than the minimum replica count",
        )
    };
    let (replicas, reason, message) = if desired < lower {
        (lower, "TooFewReplicas", lower_message)
    } else if desired > upper {
        (upper, upper_reason, upper_message)
    } else {
        (
            desired,
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        )
    };
    Clamped {
        replicas,
        limited: replicas != desired,
        reason,
        message,
    }
}

/// Recent recommendations of one HPA, for the stabilization windows.
pub type Recommendations = Vec<(i32, std::time::Instant)>;

fn record(recs: &mut Recommendations, desired: i32, now: std::time::Instant, keep: Duration) {
    let cutoff = now.checked_sub(keep);
    match recs
        .iter()
        .position(|(_, at)| cutoff.is_some_and(|c| *at < c))
    {
        Some(i) => recs[i] = (desired, now),
        None => recs.push((desired, now)),
    }
}

/// Without behavior rules: the highest recommendation of the scale-down window, so a
/// transient dip never scales down.
pub fn stabilize(
    recs: &mut Recommendations,
    desired: i32,
    now: std::time::Instant,
    window: Duration,
) -> i32 {
    let cutoff = now.checked_sub(window);
    let highest = recs
        .iter()
        .filter(|(_, at)| cutoff.is_none_or(|c| *at >= c))
        .map(|(r, _)| *r)
        .fold(desired, i32::max);
    record(recs, desired, now, window);
    highest
}

/// With behavior rules: scale up only to the lowest recommendation of the scale-up window and
/// down only to the highest of the scale-down window.
pub fn stabilize_with_windows(
    recs: &mut Recommendations,
    current: i32,
    desired: i32,
    now: std::time::Instant,
    up: Duration,
    down: Duration,
) -> i32 {
    let within = |at: &std::time::Instant, window: Duration| {
        now.checked_sub(window).is_none_or(|c| *at >= c)
    };
    let up_rec = recs
        .iter()
        .filter(|(_, at)| within(at, up))
        .map(|(r, _)| *r)
        .fold(desired, i32::min);
    let down_rec = recs
        .iter()
        .filter(|(_, at)| within(at, down))
        .map(|(r, _)| *r)
        .fold(desired, i32::max);
    record(recs, desired, now, up.max(down));
    current.max(up_rec).min(down_rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    /// A pod running for an hour, ready since then, requesting `request` milli-CPU.
    fn pod(name: &str, request: i64) -> PodState {
        PodState {
            name: name.into(),
            phase: "Running".into(),
            deleting: false,
            ready: Some((true, ts("2026-01-01T00:00:00Z"))),
            start_time: Some(ts("2026-01-01T00:00:00Z")),
            request,
        }
    }

    fn metric(value: i64) -> PodMetric {
        PodMetric {
            value,
            timestamp: ts("2026-01-01T00:59:00Z"),
            window: Duration::from_secs(60),
        }
    }

    #[test]
    fn resource_replicas_table() {
        let now = ts("2026-01-01T01:00:00Z");
        let pending = PodState {
            phase: "Pending".into(),
            ..pod("pending", 100)
        };
        let deleting = PodState {
            deleting: true,
            ..pod("deleting", 100)
        };
        // (what, current, target %, pods, usage per pod (None: no metric), want)
        type Case = (
            &'static str,
            i32,
            i32,
            Vec<PodState>,
            Vec<Option<i64>>,
            Result<i32, &'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "at target",
                3,
                50,
                vec![pod("a", 100), pod("b", 100), pod("c", 100)],
                vec![Some(50), Some(50), Some(50)],
                Ok(3),
            ),
            (
                "within tolerance",
                3,
                50,
                vec![pod("a", 100), pod("b", 100), pod("c", 100)],
                vec![Some(54), Some(54), Some(54)],
                Ok(3),
            ),
            (
                "double the target",
                3,
                50,
                vec![pod("a", 100), pod("b", 100), pod("c", 100)],
                vec![Some(100), Some(100), Some(100)],
                Ok(6),
            ),
            (
                "ceil on scale up",
                2,
                50,
                vec![pod("a", 100), pod("b", 100)],
                vec![Some(70), Some(70)],
                Ok(3),
            ),
            (
                "scale down",
                4,
                50,
                vec![pod("a", 100), pod("b", 100), pod("c", 100), pod("d", 100)],
                vec![Some(10), Some(10), Some(10), Some(10)],
                Ok(1),
            ),
            // Missing pods count as fully used when scaling down: 3 at 10% + 1 at 100%.
            (
                "missing pod damps scale down",
                4,
                50,
                vec![pod("a", 100), pod("b", 100), pod("c", 100), pod("d", 100)],
                vec![Some(10), Some(10), Some(10), None],
                Ok(3),
            ),
            // ... and as idle when scaling up: 1 at 200% and 1 at 0% is 100%, ceil(2*2)=4.
            (
                "missing pod damps scale up",
                2,
                50,
                vec![pod("a", 100), pod("b", 100)],
                vec![Some(200), None],
                Ok(4),
            ),
            // A pending pod counts as idle when scaling up: (150+150+0)/300 = 100%, 2*3 = 6.
            (
                "unready pod damps scale up",
                3,
                50,
                vec![pod("a", 100), pod("b", 100), pending.clone()],
                vec![Some(150), Some(150), None],
                Ok(6),
            ),
            // The damped ratio falling within tolerance keeps the current count.
            (
                "damped into tolerance",
                3,
                50,
                vec![pod("a", 100), pending.clone(), deleting.clone()],
                vec![Some(60), None, None],
                Ok(3),
            ),
            (
                "no ready pods",
                1,
                50,
                vec![pending],
                vec![None],
                Err("did not receive metrics for targeted pods (pods might be unready)"),
            ),
            (
                "no pods",
                1,
                50,
                vec![],
                vec![],
                Err("no pods returned by selector while calculating replica count"),
            ),
        ];
        for (what, current, target, pods, usage, want) in cases {
            let metrics = pods
                .iter()
                .zip(&usage)
                .filter_map(|(p, u)| u.map(|u| (p.name.clone(), metric(u))))
                .collect();
            let got = resource_replicas(
                current,
                Target::Utilization(target),
                &pods,
                &metrics,
                true,
                now,
            )
            .map(|p| p.replicas);
            assert_eq!(got, want.map_err(String::from), "{what}");
        }
    }

    #[test]
    fn utilization_and_average_are_reported() {
        let now = ts("2026-01-01T01:00:00Z");
        let pods = [pod("a", 200), pod("b", 200)];
        let metrics = [
            ("a".to_string(), metric(100)),
            ("b".to_string(), metric(300)),
        ]
        .into();
        let p = resource_replicas(2, Target::Utilization(100), &pods, &metrics, true, now)
            .expect("proposal");
        assert_eq!((p.utilization, p.average), (100, 200));
    }

    #[test]
    fn average_value_targets_need_no_requests() {
        let now = ts("2026-01-01T01:00:00Z");
        let pods = [pod("a", 0), pod("b", 0), pod("c", 0)];
        let metrics: BTreeMap<_, _> = [
            ("a".to_string(), metric(300)),
            ("b".to_string(), metric(300)),
        ]
        .into();
        // 300m on average against 100m: 3x the 2 measured pods, with the missing one idle.
        let p = resource_replicas(3, Target::AverageValue(100), &pods, &metrics, true, now)
            .expect("proposal");
        assert_eq!((p.replicas, p.average), (6, 300));
        // Scaling down, the missing pod counts at the target.
        let metrics: BTreeMap<_, _> =
            [("a".to_string(), metric(10)), ("b".to_string(), metric(10))].into();
        let p = resource_replicas(3, Target::AverageValue(100), &pods, &metrics, true, now)
            .expect("proposal");
        assert_eq!(p.replicas, 2);
    }

    #[test]
    fn cpu_samples_of_initializing_pods_are_unready() {
        let now = ts("2026-01-01T01:00:00Z");
        // Started a minute ago, ready 10 s ago: the 60 s sample still covers its start-up.
        let young = PodState {
            start_time: Some(ts("2026-01-01T00:59:00Z")),
            ready: Some((true, ts("2026-01-01T00:59:50Z"))),
            ..pod("young", 100)
        };
        let metrics = [("young".to_string(), metric(500))].into();
        let groups = group_pods(std::slice::from_ref(&young), &metrics, true, now);
        assert!(groups.unready.contains("young"), "{groups:?}");
        // Memory has no initialization burst.
        let groups = group_pods(&[young], &metrics, false, now);
        assert_eq!(groups.ready, 1);
    }

    #[test]
    fn clamp_table() {
        // (current, desired, min, max, rate limited) -> (replicas, reason)
        let cases = [
            ((3, 3, 1, 10, true), (3, "DesiredWithinRange")),
            ((3, 0, 2, 10, true), (2, "TooFewReplicas")),
            ((3, 0, 0, 10, true), (1, "TooFewReplicas")),
            ((3, 20, 1, 10, false), (10, "TooManyReplicas")),
            ((3, 20, 1, 100, true), (6, "ScaleUpLimit")),
            ((1, 20, 1, 100, true), (4, "ScaleUpLimit")),
            ((3, 20, 1, 5, true), (5, "TooManyReplicas")),
        ];
        for ((current, desired, min, max, rate), (want, reason)) in cases {
            let c = clamp(current, desired, min, max, rate);
            assert_eq!(
                (c.replicas, c.reason),
                (want, reason),
                "{current} {desired}"
            );
            assert_eq!(c.limited, want != desired);
        }
    }

    #[test]
    fn scale_down_is_stabilized_over_the_window() {
        let t0 = std::time::Instant::now();
        let window = Duration::from_secs(300);
        let mut recs = vec![(5, t0)];
        assert_eq!(
            stabilize(&mut recs, 2, t0 + Duration::from_secs(10), window),
            5
        );
        assert_eq!(
            stabilize(&mut recs, 7, t0 + Duration::from_secs(20), window),
            7
        );
        // Past the window the old highs no longer count.
        let late = t0 + Duration::from_secs(400);
        assert_eq!(stabilize(&mut recs, 2, late, window), 2);
        assert!(recs.len() <= 3, "old samples are reused: {recs:?}");
    }

    #[test]
    fn behavior_windows_hold_both_directions() {
        let t0 = std::time::Instant::now();
        let (up, down) = (Duration::from_secs(60), Duration::from_secs(300));
        let mut recs = vec![(3, t0)];
        // Up to 8 but the up window saw 3: stay at the current 3.
        let at = t0 + Duration::from_secs(10);
        assert_eq!(stabilize_with_windows(&mut recs, 3, 8, at, up, down), 3);
        // After the up window, the lowest recent recommendation is 8.
        let at = t0 + Duration::from_secs(120);
        assert_eq!(stabilize_with_windows(&mut recs, 3, 8, at, up, down), 8);
        // Down to 2 while 8 is in the down window: stay.
        let at = t0 + Duration::from_secs(130);
        assert_eq!(stabilize_with_windows(&mut recs, 8, 2, at, up, down), 8);
    }
}
