//! A PodDisruptionBudget's status from its pods: how many are expected, how many must stay
//! healthy, how many are, which evictions are still in flight, and so how many disruptions
//! are allowed (upstream's disruption controller `trySync`).

use crate::controller::endpoint::pods::is_pod_ready;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How long an eviction recorded in `disruptedPods` is waited for before the pod counts again.
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);
pub const CONDITION_TYPE: &str = "DisruptionAllowed";
pub const SUFFICIENT_PODS: &str = "SufficientPods";
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
pub const SYNC_FAILED: &str = "SyncFailed";

/// `value` of `total`: an integer as is, a percentage scaled (rounded up when `round_up`).
pub fn scaled_value(value: &IntOrString, total: i32, round_up: bool) -> anyhow::Result<i32> {
    match value {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let Some(percent) = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                anyhow::bail!(
                    "invalid value for IntOrString: invalid type: string is not a percentage: {s:?}"
                );
            };
            let scaled = percent * i64::from(total);
            let v = if round_up {
                (scaled + 99).div_euclid(100)
            } else {
                scaled.div_euclid(100)
            };
            Ok(i32::try_from(v).unwrap_or(i32::MAX))
        }
    }
}

fn is_percent(value: &IntOrString) -> bool {
    matches!(value, IntOrString::String(_))
}

pub fn controller_of(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// The scale of one pod controller: its uid (several pods share it) and replicas.
pub type Scale = (String, i32);

/// (expectedPods, desiredHealthy, names of pods without a controller). `scale_of` finds the
/// scale of a pod's controller; it is only asked when the budget needs it (maxUnavailable or
/// a percentage).
pub fn expected_and_desired(
    pdb: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
    scale_of: &dyn Fn(&Pod, &OwnerReference) -> anyhow::Result<Scale>,
) -> anyhow::Result<(i32, i32, Vec<String>)> {
    let spec = pdb.spec.clone().unwrap_or_default();
    let expected_scale = || -> anyhow::Result<(i32, Vec<String>)> {
        let mut scales: BTreeMap<String, i32> = BTreeMap::new();
        let mut unmanaged = Vec::new();
        for pod in pods {
            let Some(owner) = controller_of(pod) else {
                unmanaged.push(pod.metadata.name.clone().unwrap_or_default());
                continue;
            };
            // Pods of one controller share its scale: look it up once.
            if scales.contains_key(&owner.uid) {
                continue;
            }
            let (uid, replicas) = scale_of(pod, owner)?;
            scales.insert(owner.uid.clone(), 0);
            scales.insert(uid, replicas);
        }
        let total = scales.values().map(|v| i64::from(*v)).sum::<i64>();
        Ok((i32::try_from(total).unwrap_or(i32::MAX), unmanaged))
    };
    if let Some(max_unavailable) = &spec.max_unavailable {
        let (expected, unmanaged) = expected_scale()?;
        let max = scaled_value(max_unavailable, expected, true)?;
        return Ok((expected, (expected - max).max(0), unmanaged));
    }
    match &spec.min_available {
        Some(min) if !is_percent(min) => Ok((len(pods), scaled_value(min, 0, true)?, Vec::new())),
        Some(min) => {
            let (expected, unmanaged) = expected_scale()?;
            Ok((expected, scaled_value(min, expected, true)?, unmanaged))
        }
        None => Ok((0, 0, Vec::new())),
    }
}

fn len(pods: &[Arc<Pod>]) -> i32 {
    i32::try_from(pods.len()).unwrap_or(i32::MAX)
}

/// The recorded evictions still pending (pod present, not yet deleting, recorded less than
/// [`DELETION_TIMEOUT`] ago), and when the oldest of them expires.
pub fn pending_disruptions(
    pdb: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
    now: jiff::Timestamp,
) -> (BTreeMap<String, Time>, Option<jiff::Timestamp>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<jiff::Timestamp> = None;
    let recorded = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref());
    for (name, at) in recorded.into_iter().flatten() {
        let Some(pod) = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name.as_str()))
        else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Ok(expires) = at.0.checked_add(DELETION_TIMEOUT) else {
            continue;
        };
        if expires <= now {
            tracing::info!(pod = %name, "pod was expected to be deleted but it wasn't");
            continue;
        }
        recheck = Some(recheck.map_or(expires, |r| r.min(expires)));
        kept.insert(name.clone(), at.clone());
    }
    (kept, recheck)
}

/// Ready pods that are neither deleting nor being evicted.
pub fn count_healthy(pods: &[Arc<Pod>], disrupted: &BTreeMap<String, Time>) -> i32 {
    let healthy = pods.iter().filter(|p| {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        !disrupted.contains_key(name) && p.metadata.deletion_timestamp.is_none() && is_pod_ready(p)
    });
    i32::try_from(healthy.count()).unwrap_or(i32::MAX)
}

/// Sets (or replaces) the DisruptionAllowed condition, keeping its transition time when its
/// status does not change.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    allowed: bool,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: jiff::Timestamp,
) {
    let status = if allowed { "True" } else { "False" };
    let previous = conditions.iter().find(|c| c.type_ == CONDITION_TYPE);
    let transition = match previous {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    conditions.retain(|c| c.type_ != CONDITION_TYPE);
    conditions.push(Condition {
        type_: CONDITION_TYPE.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation,
        last_transition_time: transition,
    });
}

/// The status for the computed counts.
pub fn build_status(
    pdb: &PodDisruptionBudget,
    current_healthy: i32,
    desired_healthy: i32,
    expected: i32,
    disrupted: BTreeMap<String, Time>,
    now: jiff::Timestamp,
) -> PodDisruptionBudgetStatus {
    let mut allowed = current_healthy - desired_healthy;
    if expected <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let previous = pdb.status.clone().unwrap_or_default();
    let mut conditions = previous.conditions.unwrap_or_default();
    let generation = pdb.metadata.generation;
    let reason = if allowed > 0 {
        SUFFICIENT_PODS
    } else {
        INSUFFICIENT_PODS
    };
    set_condition(&mut conditions, allowed > 0, reason, "", generation, now);
    PodDisruptionBudgetStatus {
        current_healthy,
        desired_healthy,
        expected_pods: expected,
        disruptions_allowed: allowed,
        disrupted_pods: Some(disrupted).filter(|d| !d.is_empty()),
        observed_generation: generation,
        conditions: Some(conditions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(name: &str, ready: bool, owner: Option<&str>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                owner_references: owner.map(|uid| {
                    vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: uid.into(),
                        uid: uid.into(),
                        controller: Some(true),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn pdb(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                generation: Some(3),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                min_available: min,
                max_unavailable: max,
                ..Default::default()
            }),
            status: None,
        }
    }

    fn scale_of(_: &Pod, owner: &OwnerReference) -> anyhow::Result<Scale> {
        match owner.uid.as_str() {
            "rs" => Ok(("rs".into(), 4)),
            other => anyhow::bail!("no scale for {other}"),
        }
    }

    type Case = (
        &'static str,
        PodDisruptionBudget,
        Vec<Arc<Pod>>,
        Option<(i32, i32, i32, i32)>,
    );

    #[test]
    fn counts_per_budget_kind() {
        let i = |n| Some(IntOrString::Int(n));
        let p = |s: &str| Some(IntOrString::String(s.into()));
        let managed = vec![
            pod("a", true, Some("rs")),
            pod("b", true, Some("rs")),
            pod("c", false, Some("rs")),
        ];
        // (budget, pods, want (expected, desired, healthy, allowed) or an error)
        let cases: Vec<Case> = vec![
            (
                "minAvailable int",
                pdb(i(2), None),
                managed.clone(),
                Some((3, 2, 2, 0)),
            ),
            (
                "minAvailable 1",
                pdb(i(1), None),
                managed.clone(),
                Some((3, 1, 2, 1)),
            ),
            (
                "minAvailable 50% of scale 4",
                pdb(p("50%"), None),
                managed.clone(),
                Some((4, 2, 2, 0)),
            ),
            (
                "minAvailable 25% rounds up",
                pdb(p("25%"), None),
                managed.clone(),
                Some((4, 1, 2, 1)),
            ),
            (
                "maxUnavailable 1 of 4",
                pdb(None, i(1)),
                managed.clone(),
                Some((4, 3, 2, 0)),
            ),
            (
                "maxUnavailable 75%",
                pdb(None, p("75%")),
                managed.clone(),
                Some((4, 1, 2, 1)),
            ),
            (
                "minAvailable int ignores controllers",
                pdb(i(1), None),
                vec![pod("x", true, Some("unknown"))],
                Some((1, 1, 1, 0)),
            ),
            (
                "unknown controller fails a percentage",
                pdb(p("50%"), None),
                vec![pod("x", true, Some("unknown"))],
                None,
            ),
            ("no pods", pdb(i(1), None), vec![], Some((0, 1, 0, 0))),
            (
                "bare pods with maxUnavailable expect none",
                pdb(None, i(0)),
                vec![pod("x", true, None)],
                Some((0, 0, 1, 0)),
            ),
        ];
        let now = jiff::Timestamp::now();
        for (name, budget, pods, want) in cases {
            let got =
                expected_and_desired(&budget, &pods, &scale_of).map(|(expected, desired, _)| {
                    let healthy = count_healthy(&pods, &BTreeMap::new());
                    let status =
                        build_status(&budget, healthy, desired, expected, BTreeMap::new(), now);
                    (
                        status.expected_pods,
                        status.desired_healthy,
                        status.current_healthy,
                        status.disruptions_allowed,
                    )
                });
            match want {
                Some(want) => assert_eq!(got.ok(), Some(want), "{name}"),
                None => assert!(got.is_err(), "{name}: {got:?}"),
            }
        }
    }

    #[test]
    fn condition_and_generation() {
        let now = jiff::Timestamp::now();
        let budget = pdb(Some(IntOrString::Int(1)), None);
        let status = build_status(&budget, 2, 1, 2, BTreeMap::new(), now);
        assert_eq!(status.observed_generation, Some(3));
        let c = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", SUFFICIENT_PODS)
        );
        let status = build_status(&budget, 1, 1, 2, BTreeMap::new(), now);
        let c = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", INSUFFICIENT_PODS)
        );
    }

    #[test]
    fn disrupted_pods_expire() {
        let now = jiff::Timestamp::now();
        let mut budget = pdb(Some(IntOrString::Int(1)), None);
        let recent = now.checked_sub(Duration::from_secs(30)).unwrap();
        let old = now.checked_sub(Duration::from_secs(300)).unwrap();
        let mut deleting = (*pod("gone", true, None)).clone();
        deleting.metadata.deletion_timestamp = Some(Time(now));
        budget.status = Some(PodDisruptionBudgetStatus {
            disrupted_pods: Some(
                [
                    ("a".to_string(), Time(recent)),
                    ("b".to_string(), Time(old)),
                    ("gone".to_string(), Time(recent)),
                    ("missing".to_string(), Time(recent)),
                ]
                .into(),
            ),
            ..Default::default()
        });
        let pods = vec![
            pod("a", true, None),
            pod("b", true, None),
            Arc::new(deleting),
        ];
        let (kept, recheck) = pending_disruptions(&budget, &pods, now);
        assert_eq!(kept.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(recheck, recent.checked_add(DELETION_TIMEOUT).ok());
        assert_eq!(
            count_healthy(&pods, &kept),
            1,
            "a is being evicted, gone is deleting"
        );
    }

    #[test]
    fn percentages() {
        let p = |s: &str| IntOrString::String(s.into());
        assert_eq!(scaled_value(&p("50%"), 3, true).unwrap(), 2);
        assert_eq!(scaled_value(&p("50%"), 3, false).unwrap(), 1);
        assert!(scaled_value(&p("abc"), 3, true).is_err());
    }
}
