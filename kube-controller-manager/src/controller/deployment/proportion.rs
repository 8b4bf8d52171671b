//! Proportional scaling: when a Deployment is resized in the middle of a rollout, every active
//! ReplicaSet gets a share of the change in proportion to its size, so the rollout's ratio of
//! old to new pods is kept.

use super::annotations::max_replicas_annotation;
use super::replicas::{desired, max_surge, spec_replicas, sum_spec};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use std::cmp::Ordering;

/// Oldest first; equal timestamps by name, as upstream's `ReplicaSetsByCreationTimestamp`.
pub fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let ts = |rs: &ReplicaSet| rs.metadata.creation_timestamp.as_ref().map(|t| t.0);
    ts(a)
        .cmp(&ts(b))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// New sizes for the active ReplicaSets `active` (new and old, all with replicas > 0) so that
/// together they hold `desired + maxSurge` (0 when the Deployment is scaled to 0). Returned in
/// the order they should be written: largest first (on a tie, the newer when growing and the
/// older when shrinking, which is where the leftover of rounding goes).
pub fn plan(d: &Deployment, active: &[&ReplicaSet], status_replicas: i32) -> Vec<(String, i32)> {
    let allowed = if desired(d) > 0 {
        desired(d) + max_surge(d)
    } else {
        0
    };
    let to_add = allowed - sum_spec(active);
    let mut sorted = active.to_vec();
    sorted.sort_by(|a, b| {
        spec_replicas(b).cmp(&spec_replicas(a)).then_with(|| {
            if to_add > 0 {
                by_creation(b, a)
            } else {
                by_creation(a, b)
            }
        })
    });
    let mut added = 0;
    let mut sizes: Vec<(String, i32)> = sorted
        .iter()
        .map(|rs| {
            let size = spec_replicas(rs);
            let share = if to_add != 0 {
                proportion(rs, d, to_add, added, status_replicas)
            } else {
                0
            };
            added += share;
            (rs.metadata.name.clone().unwrap_or_default(), size + share)
        })
        .collect();
    if let Some(first) = sizes.first_mut()
        && to_add != 0
    {
        first.1 = (first.1 + to_add - added).max(0);
    }
    sizes
}

/// The share of `to_add` (what is still unassigned: `to_add - added`) one ReplicaSet gets:
/// its size scaled by the ratio of the new to the former `max-replicas`.
fn proportion(
    rs: &ReplicaSet,
    d: &Deployment,
    to_add: i32,
    added: i32,
    status_replicas: i32,
) -> i32 {
    let size = spec_replicas(rs);
    if size == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if desired(d) == 0 {
        -size
    } else {
        let now_max = desired(d) + max_surge(d);
        let before = max_replicas_annotation(rs).unwrap_or(status_replicas);
        if before == 0 {
            0
        } else {
            (f64::from(size) * f64::from(now_max) / f64::from(before)).round() as i32 - size
        }
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::annotations::set_replicas_annotations;
    use super::super::replicas::tests::{deployment, rs};
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn annotated(name: &str, size: i32, former: &Deployment, age: i64) -> ReplicaSet {
        let mut r = rs(name, size, size);
        set_replicas_annotations(&mut r, former);
        r.metadata.creation_timestamp = Some(Time(
            jiff::Timestamp::from_second(1_000_000 - age).expect("valid timestamp"),
        ));
        r
    }

    #[test]
    fn resizing_mid_rollout_is_proportional() {
        let int = IntOrString::Int;
        // (former size, surge, unavailable, old size, new size, new deployment size) -> (old, new)
        let cases = [
            // 10 -> 15 with 3 surge: 13 pods become 18, shared 8:5 -> 11:7 (rounding to the larger).
            (10, 3, 2, 8, 5, 15, (11, 7)),
            // 10 -> 5: 13 pods become 8.
            (10, 3, 2, 8, 5, 5, (5, 3)),
            // To zero: everything goes.
            (10, 3, 2, 8, 5, 0, (0, 0)),
            // The larger (new) set takes the one extra pod.
            (4, 1, 0, 2, 3, 5, (2, 4)),
            // Equal sizes: the newer one takes it.
            (4, 0, 1, 2, 2, 5, (2, 3)),
        ];
        for (former, surge, unavail, old, new, size, want) in cases {
            let before = deployment(former, int(surge), int(unavail));
            let now = deployment(size, int(surge), int(unavail));
            let (o, n) = (
                annotated("old", old, &before, 10),
                annotated("new", new, &before, 1),
            );
            let plan = plan(&now, &[&o, &n], old + new);
            let get = |name: &str| plan.iter().find(|(n, _)| n == name).map(|p| p.1);
            assert_eq!(
                (get("old"), get("new")),
                (Some(want.0), Some(want.1)),
                "{former}->{size}"
            );
            let total: i32 = plan.iter().map(|p| p.1).sum();
            let allowed = if size > 0 { size + surge } else { 0 };
            assert_eq!(total, allowed, "{former}->{size}");
        }
    }
}
