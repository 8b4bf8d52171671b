//! Which node-controller taints a node should carry, from its conditions, and how a node's
//! taint list changes to get there (the NoSchedule and NoExecute passes own different keys).

use crate::controller::utils;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
pub const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
pub const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
pub const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
pub const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

pub const NO_SCHEDULE: &str = "NoSchedule";
pub const NO_EXECUTE: &str = "NoExecute";

/// The keys the NoSchedule pass owns (with effect NoSchedule only).
const NO_SCHEDULE_KEYS: [&str; 7] = [
    NOT_READY,
    UNREACHABLE,
    MEMORY_PRESSURE,
    DISK_PRESSURE,
    PID_PRESSURE,
    NETWORK_UNAVAILABLE,
    UNSCHEDULABLE,
];

pub fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

pub fn taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

pub fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.to_string(),
        effect: effect.to_string(),
        ..Default::default()
    }
}

fn same_taint(a: &Taint, key: &str, effect: &str) -> bool {
    a.key == key && a.effect == effect
}

/// The NoSchedule keys a node's conditions and `spec.unschedulable` call for.
pub fn desired_no_schedule(node: &Node) -> Vec<&'static str> {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let mut keys = Vec::new();
    for c in conditions {
        let key = match (c.type_.as_str(), c.status.as_str()) {
            ("Ready", "False") => NOT_READY,
            ("Ready", "Unknown") => UNREACHABLE,
            ("MemoryPressure", "True") => MEMORY_PRESSURE,
            ("DiskPressure", "True") => DISK_PRESSURE,
            ("PIDPressure", "True") => PID_PRESSURE,
            ("NetworkUnavailable", "True") => NETWORK_UNAVAILABLE,
            _ => continue,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        keys.push(UNSCHEDULABLE);
    }
    keys
}

/// The node's taints after the NoSchedule pass, or None when they are already right.
pub fn reconcile_no_schedule(node: &Node) -> Option<Vec<Taint>> {
    let desired = desired_no_schedule(node);
    let current = taints(node);
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| {
            !(t.effect == NO_SCHEDULE
                && NO_SCHEDULE_KEYS.contains(&t.key.as_str())
                && !desired.contains(&t.key.as_str()))
        })
        .cloned()
        .collect();
    for key in desired {
        if !next.iter().any(|t| same_taint(t, key, NO_SCHEDULE)) {
            next.push(taint(key, NO_SCHEDULE));
        }
    }
    (next.len() != current.len() || next.iter().zip(current).any(|(a, b)| a != b)).then_some(next)
}

/// The node's taints with the NoExecute `add` (stamped `now`) and without the NoExecute
/// `remove`, or None when nothing changes.
pub fn swap_no_execute(
    current: &[Taint],
    add: Option<&str>,
    remove: &[&str],
    now: jiff::Timestamp,
) -> Option<Vec<Taint>> {
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| !(t.effect == NO_EXECUTE && remove.contains(&t.key.as_str())))
        .cloned()
        .collect();
    if let Some(key) = add
        && !next.iter().any(|t| same_taint(t, key, NO_EXECUTE))
    {
        next.push(Taint {
            time_added: Some(Time(now)),
            ..taint(key, NO_EXECUTE)
        });
    }
    (next.len() != current.len() || next.iter().zip(current).any(|(a, b)| a != b)).then_some(next)
}

pub fn has_taint(node: &Node, key: &str, effect: &str) -> bool {
    taints(node).iter().any(|t| same_taint(t, key, effect))
}

/// Whether `toleration` tolerates `taint` (upstream's `ToleratesTaint`), except that an empty
/// key with `Equal` tolerates nothing (validation rejects such a toleration anyway).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let key_empty = toleration.key.as_deref().unwrap_or("").is_empty();
    let equal = matches!(toleration.operator.as_deref(), None | Some("" | "Equal"));
    !(key_empty && equal) && utils::taints::tolerates(toleration, taint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};

    fn node(conditions: &[(&str, &str)], taints: &[(&str, &str)], unschedulable: bool) -> Node {
        Node {
            spec: Some(NodeSpec {
                taints: Some(taints.iter().map(|(k, e)| taint(k, e)).collect()),
                unschedulable: Some(unschedulable),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s)| NodeCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn keys(taints: &[Taint]) -> Vec<(String, String)> {
        taints
            .iter()
            .map(|t| (t.key.clone(), t.effect.clone()))
            .collect()
    }

    /// A case name, the node, and the taints (key, effect) the pass should write, if any.
    type Case = (
        &'static str,
        Node,
        Option<Vec<(&'static str, &'static str)>>,
    );

    #[test]
    fn no_schedule_pass() {
        let cases: Vec<Case> = vec![
            (
                "ready node loses admission's not-ready",
                node(&[("Ready", "True")], &[(NOT_READY, NO_SCHEDULE)], false),
                Some(vec![]),
            ),
            (
                "ready node without taints is left alone",
                node(&[("Ready", "True")], &[], false),
                None,
            ),
            (
                "unknown becomes unreachable, NoExecute and foreign taints kept",
                node(
                    &[("Ready", "Unknown")],
                    &[
                        (NOT_READY, NO_SCHEDULE),
                        (NOT_READY, NO_EXECUTE),
                        ("a", NO_SCHEDULE),
                    ],
                    false,
                ),
                Some(vec![
                    (NOT_READY, NO_EXECUTE),
                    ("a", NO_SCHEDULE),
                    (UNREACHABLE, NO_SCHEDULE),
                ]),
            ),
            (
                "pressures and cordon",
                node(
                    &[
                        ("Ready", "True"),
                        ("MemoryPressure", "True"),
                        ("DiskPressure", "False"),
                        ("PIDPressure", "True"),
                        ("NetworkUnavailable", "True"),
                    ],
                    &[(DISK_PRESSURE, NO_SCHEDULE)],
                    true,
                ),
                Some(vec![
                    (MEMORY_PRESSURE, NO_SCHEDULE),
                    (PID_PRESSURE, NO_SCHEDULE),
                    (NETWORK_UNAVAILABLE, NO_SCHEDULE),
                    (UNSCHEDULABLE, NO_SCHEDULE),
                ]),
            ),
        ];
        for (name, node, want) in cases {
            let got = reconcile_no_schedule(&node).map(|t| keys(&t));
            let want = want.map(|w| {
                w.iter()
                    .map(|(k, e)| (k.to_string(), e.to_string()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn no_execute_swap() {
        let now = jiff::Timestamp::now();
        let current = vec![
            taint(UNREACHABLE, NO_EXECUTE),
            taint(UNREACHABLE, NO_SCHEDULE),
        ];
        let next = swap_no_execute(&current, Some(NOT_READY), &[UNREACHABLE], now).unwrap();
        assert_eq!(
            keys(&next),
            vec![
                (UNREACHABLE.to_string(), NO_SCHEDULE.to_string()),
                (NOT_READY.to_string(), NO_EXECUTE.to_string())
            ]
        );
        assert_eq!(next[1].time_added, Some(Time(now)));
        assert!(swap_no_execute(&next, Some(NOT_READY), &[UNREACHABLE], now).is_none());
        assert_eq!(
            swap_no_execute(&next, None, &[NOT_READY, UNREACHABLE], now).map(|t| t.len()),
            Some(1)
        );
    }

    #[test]
    fn toleration_matching() {
        let t = Taint {
            value: Some("v".into()),
            ..taint(UNREACHABLE, NO_EXECUTE)
        };
        let tol =
            |key: Option<&str>, op: Option<&str>, value: Option<&str>, effect: Option<&str>| {
                Toleration {
                    key: key.map(Into::into),
                    operator: op.map(Into::into),
                    value: value.map(Into::into),
                    effect: effect.map(Into::into),
                    ..Default::default()
                }
            };
        let cases = [
            (tol(None, Some("Exists"), None, None), true),
            (
                tol(Some(UNREACHABLE), Some("Exists"), None, Some(NO_EXECUTE)),
                true,
            ),
            (
                tol(Some(UNREACHABLE), Some("Exists"), None, Some(NO_SCHEDULE)),
                false,
            ),
            (tol(Some(UNREACHABLE), None, Some("v"), None), true),
            (
                tol(Some(UNREACHABLE), Some("Equal"), Some("w"), None),
                false,
            ),
            (tol(Some(NOT_READY), Some("Exists"), None, None), false),
        ];
        for (i, (toleration, want)) in cases.iter().enumerate() {
            assert_eq!(tolerates(toleration, &t), *want, "case {i}");
        }
    }
}
