//! Replica arithmetic of a rollout: the surge and unavailability fenceposts, how far the new
//! ReplicaSet may grow and how far the old ones may shrink.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub const RECREATE: &str = "Recreate";

/// `spec.replicas` of a Deployment (the apiserver defaults it to 1).
pub fn desired(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// `spec.replicas` of a ReplicaSet.
pub fn spec_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

pub fn status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

pub fn available_replicas(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

pub fn ready_replicas(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0)
}

pub fn is_recreate(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some(RECREATE)
}

/// Resolves an int-or-percent against `total`: percentages round up for surge and down for
/// unavailability, as upstream's `GetScaledValueFromIntOrPercent`.
pub fn scaled_value(v: Option<&IntOrString>, total: i32, round_up: bool) -> i32 {
    match v {
        None => 0,
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => {
            let Some(pct) = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                // Validation rejects anything else; treat garbage as 0 rather than fail the sync.
                return 0;
            };
            let product = pct * i64::from(total);
            let v = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            i32::try_from(v).unwrap_or(i32::MAX)
        }
    }
}

/// `(maxSurge, maxUnavailable)` resolved for `desired` replicas. When both round to 0 the
/// rollout could never move, so unavailability becomes 1 (surge may be blocked by quota).
pub fn fenceposts(d: &Deployment) -> (i32, i32) {
    let desired = desired(d);
    let ru = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    let surge = scaled_value(ru.and_then(|r| r.max_surge.as_ref()), desired, true);
    let unavailable = scaled_value(ru.and_then(|r| r.max_unavailable.as_ref()), desired, false);
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

pub fn max_surge(d: &Deployment) -> i32 {
    if is_recreate(d) { 0 } else { fenceposts(d).0 }
}

pub fn max_unavailable(d: &Deployment) -> i32 {
    let desired = desired(d);
    if is_recreate(d) || desired == 0 {
        return 0;
    }
    fenceposts(d).1.min(desired)
}

pub fn sum_spec(rss: &[&ReplicaSet]) -> i32 {
    rss.iter().map(|rs| spec_replicas(rs)).sum()
}

/// The size the new ReplicaSet may grow to now: Recreate jumps to the desired count; a
/// rolling update stays within `desired + maxSurge` pods in total.
pub fn new_rs_new_replicas(d: &Deployment, all: &[&ReplicaSet], new_rs: &ReplicaSet) -> i32 {
    let desired = desired(d);
    if is_recreate(d) {
        return desired;
    }
    let current = spec_replicas(new_rs);
    let max_total = desired + max_surge(d);
    let total = sum_spec(all);
    if total >= max_total {
        return current;
    }
    current + (max_total - total).min(desired - current)
}

/// The sizes old ReplicaSets are scaled down to in one rolling-update step, in order: first
/// unhealthy replicas (which would otherwise block the rollout), then available ones down to
/// the availability floor. `olds` must be sorted oldest first and hold only active sets.
pub fn plan_old_scale_down(
    d: &Deployment,
    olds: &[&ReplicaSet],
    new_rs: &ReplicaSet,
) -> Vec<(String, i32)> {
    let mut sizes: Vec<(String, i32, i32)> = olds
        .iter()
        .map(|rs| {
            let name = rs.metadata.name.clone().unwrap_or_default();
            (name, spec_replicas(rs), available_replicas(rs))
        })
        .collect();
    let old_total: i32 = sizes.iter().map(|s| s.1).sum();
    if old_total == 0 {
        return Vec::new();
    }
    let all_total = old_total + spec_replicas(new_rs);
    let min_available = desired(d) - max_unavailable(d);
    let new_unavailable = spec_replicas(new_rs) - available_replicas(new_rs);
    let max_scaled_down = all_total - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut plan = Vec::new();
    let mut cleaned = 0;
    for (name, size, available) in &mut sizes {
        if cleaned >= max_scaled_down {
            break;
        }
        if *size == 0 || *size <= *available {
            continue;
        }
        let n = (max_scaled_down - cleaned).min(*size - *available);
        *size -= n;
        cleaned += n;
        plan.push((name.clone(), *size));
    }
    // Removing unavailable pods leaves the available count as it was.
    let available_total: i32 = sizes.iter().map(|s| s.2).sum::<i32>() + available_replicas(new_rs);
    if available_total > min_available {
        let target = available_total - min_available;
        let mut done = 0;
        for (name, size, _) in &mut sizes {
            if done >= target {
                break;
            }
            if *size == 0 {
                continue;
            }
            let n = (*size).min(target - done);
            *size -= n;
            done += n;
            match plan.iter_mut().find(|(p, _)| p == name) {
                Some(entry) => entry.1 = *size,
                None => plan.push((name.clone(), *size)),
            }
        }
    }
    plan
}

/// The one ReplicaSet to scale when the Deployment's size changes: the only active one, or
/// (none active) the new one, else the newest old one. `None` when several are active.
pub fn active_or_latest<'a>(
    new_rs: Option<&'a ReplicaSet>,
    olds_oldest_first: &[&'a ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let mut active = new_rs
        .into_iter()
        .chain(olds_oldest_first.iter().copied())
        .filter(|rs| spec_replicas(rs) > 0);
    match (active.next(), active.next()) {
        (Some(only), None) => Some(only),
        (Some(_), Some(_)) => None,
        (None, _) => new_rs.or_else(|| olds_oldest_first.last().copied()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        DeploymentSpec, DeploymentStrategy, ReplicaSetSpec, ReplicaSetStatus,
        RollingUpdateDeployment,
    };
    use kube::api::ObjectMeta;

    pub fn deployment(replicas: i32, surge: IntOrString, unavailable: IntOrString) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(surge),
                        max_unavailable: Some(unavailable),
                    }),
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    pub fn rs(name: &str, replicas: i32, available: i32) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(replicas),
                ..Default::default()
            }),
            status: Some(ReplicaSetStatus {
                replicas,
                available_replicas: Some(available),
                ready_replicas: Some(available),
                ..Default::default()
            }),
        }
    }

    fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }
    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailable_down() {
        let cases = [
            (10, pct("25%"), pct("25%"), (3, 2)),
            (4, pct("25%"), pct("25%"), (1, 1)),
            (1, pct("25%"), pct("25%"), (1, 0)),
            (3, int(1), int(0), (1, 0)),
            (3, int(0), pct("10%"), (0, 1)),
            (3, int(0), int(0), (0, 1)),
            (0, pct("25%"), pct("25%"), (0, 1)),
        ];
        for (replicas, surge, unavailable, want) in cases {
            let d = deployment(replicas, surge.clone(), unavailable.clone());
            assert_eq!(fenceposts(&d), want, "{replicas} {surge:?} {unavailable:?}");
        }
        assert_eq!(max_unavailable(&deployment(0, int(1), int(1))), 0);
        assert_eq!(max_unavailable(&deployment(2, int(0), int(5))), 2);
    }

    #[test]
    fn new_rs_grows_within_the_surge() {
        // (desired, surge, old size, new size) -> new size allowed
        let cases = [
            (3, 1, 3, 0, 1),
            (3, 1, 2, 1, 2),
            (3, 1, 3, 1, 1),
            (3, 2, 0, 0, 3),
            (3, 0, 2, 0, 1),
        ];
        for (desired, surge, old, new, want) in cases {
            let d = deployment(desired, int(surge), int(1));
            let (o, n) = (rs("old", old, old), rs("new", new, 0));
            assert_eq!(
                new_rs_new_replicas(&d, &[&o, &n], &n),
                want,
                "{desired} {surge} {old} {new}"
            );
        }
    }

    #[test]
    fn old_sets_shrink_to_the_availability_floor_unhealthy_first() {
        let d = deployment(3, int(1), int(0));
        // New pod not yet available: nothing may go.
        assert!(plan_old_scale_down(&d, &[&rs("old", 3, 3)], &rs("new", 1, 0)).is_empty());
        // New pod available: one old one may go.
        assert_eq!(
            plan_old_scale_down(&d, &[&rs("old", 3, 3)], &rs("new", 1, 1)),
            vec![("old".to_string(), 2)]
        );
        // Unhealthy old replicas go first even when availability is at the floor.
        let d = deployment(3, int(1), int(1));
        assert_eq!(
            plan_old_scale_down(&d, &[&rs("a", 2, 0), &rs("b", 2, 2)], &rs("new", 0, 0)),
            vec![("a".to_string(), 0)]
        );
        // Oldest first when scaling healthy ones.
        let d = deployment(4, int(0), int(2));
        assert_eq!(
            plan_old_scale_down(&d, &[&rs("a", 1, 1), &rs("b", 3, 3)], &rs("new", 0, 0)),
            vec![("a".to_string(), 0), ("b".to_string(), 2)]
        );
    }

    #[test]
    fn active_or_latest_picks_the_only_active_set() {
        let (n0, n2, a0, a3, b0) = (
            rs("n", 0, 0),
            rs("n", 2, 2),
            rs("a", 0, 0),
            rs("a", 3, 3),
            rs("b", 0, 0),
        );
        let name = |r: Option<&ReplicaSet>| r.and_then(|r| r.metadata.name.clone());
        assert_eq!(name(active_or_latest(Some(&n2), &[&a0])), Some("n".into()));
        assert_eq!(name(active_or_latest(Some(&n0), &[&a3])), Some("a".into()));
        assert_eq!(name(active_or_latest(Some(&n2), &[&a3])), None);
        assert_eq!(name(active_or_latest(Some(&n0), &[&a0])), Some("n".into()));
        assert_eq!(name(active_or_latest(None, &[&a0, &b0])), Some("b".into()));
    }
}
