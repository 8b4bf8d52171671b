//! What one sync does per node, as pure functions: the pods each node should have (upstream's
//! `podsShouldBeOnNode`), the rolling update's deletions and surge creations, the budgets.

use super::eligibility::Placement;
use crate::controller::utils::pods::is_pod_ready;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The claimed pods of a DaemonSet by the node they belong to.
pub type NodePods = BTreeMap<String, Vec<Arc<Pod>>>;

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn bound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

/// Upstream's `podByCreationTimestampAndPhase`: bound pods first, then the oldest, then by
/// name.
pub fn oldest_first(a: &Arc<Pod>, b: &Arc<Pod>) -> Ordering {
    bound(b)
        .cmp(&bound(a))
        .then_with(|| {
            let t = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// Whether the DaemonSet surges (creates the new pod before deleting the old one).
pub fn allows_surge(ds: &DaemonSet) -> bool {
    let (surge, _) = raw_budget(ds);
    surge
        .is_some_and(|s| !matches!(s, IntOrString::Int(0)) && s != IntOrString::String("0%".into()))
}

/// Whether the DaemonSet's strategy is RollingUpdate (the default).
pub fn is_rolling_update(ds: &DaemonSet) -> bool {
    ds.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate")
}

fn raw_budget(ds: &DaemonSet) -> (Option<IntOrString>, Option<IntOrString>) {
    let ru = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.rolling_update.as_ref());
    match ru {
        Some(ru) => (ru.max_surge.clone(), ru.max_unavailable.clone()),
        None => (None, None),
    }
}

/// An int or a percentage of `total` rounded up (upstream's `GetScaledValueFromIntOrPercent`
/// with roundUp); an unparsable percentage counts as 0.
fn scaled(v: &IntOrString, total: usize) -> usize {
    match v {
        IntOrString::Int(i) => usize::try_from(*i).unwrap_or(0),
        IntOrString::String(s) => {
            let pct = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .unwrap_or(0);
            (pct * total).div_ceil(100)
        }
    }
}

/// (maxSurge, maxUnavailable) for `desired` scheduled nodes; both zero becomes one
/// unavailable, so a rollout always progresses (upstream's `updatedDesiredNodeCounts`).
pub fn budget(ds: &DaemonSet, desired: usize) -> (usize, usize) {
    let (surge, unavailable) = raw_budget(ds);
    let surge = surge.map(|s| scaled(&s, desired)).unwrap_or(0);
    let unavailable = unavailable
        .map(|u| scaled(&u, desired))
        .unwrap_or(if surge == 0 { 1 } else { 0 });
    if desired > 0 && surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// What `manage` does on one node.
#[derive(Debug, Default)]
pub struct NodeActions {
    pub create: bool,
    pub delete: Vec<Arc<Pod>>,
    /// Failed pods to replace; the caller decides (by backoff) whether to delete them now.
    pub failed: Vec<Arc<Pod>>,
}

/// Upstream's `podsShouldBeOnNode`: a pod on each node that should run one, the surplus
/// deleted (oldest kept; with surge, the oldest old and new ones), finished pods replaced,
/// every pod deleted from a node that must not run one.
pub fn node_actions(
    placement: Placement,
    pods: Option<&Vec<Arc<Pod>>>,
    surge: bool,
    hash_updated: impl Fn(&Pod) -> bool,
    available: impl Fn(&Pod) -> bool,
) -> NodeActions {
    let mut out = NodeActions::default();
    match (placement, pods) {
        (p, None) if p.should_run => out.create = true,
        (p, Some(pods)) if p.should_continue_running => {
            let mut running: Vec<Arc<Pod>> = Vec::new();
            for pod in pods {
                if pod.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                match phase(pod) {
                    "Failed" => out.failed.push(pod.clone()),
                    "Succeeded" => out.delete.push(pod.clone()),
                    _ => running.push(pod.clone()),
                }
            }
            if running.len() <= 1 {
                return out;
            }
            running.sort_by(oldest_first);
            if !surge {
                out.delete.extend(running.into_iter().skip(1));
                return out;
            }
            let (mut oldest_new, mut oldest_old) = (None, None);
            for pod in running {
                let slot = if hash_updated(&pod) {
                    &mut oldest_new
                } else {
                    &mut oldest_old
                };
                if slot.is_none() {
                    *slot = Some(pod);
                } else {
                    out.delete.push(pod);
                }
            }
            if let (Some(new), Some(old)) = (oldest_new, oldest_old)
                && (!is_pod_ready(&old) || available(&new))
            {
                out.delete.push(old);
            }
        }
        (p, Some(pods)) if !p.should_continue_running => {
            out.delete.extend(
                pods.iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .cloned(),
            );
        }
        _ => {}
    }
    out
}

/// A node's pod of the current revision and its pod of an older one.
type NewAndOld = (Option<Arc<Pod>>, Option<Arc<Pod>>);

/// The new pod and the old pod of a node, or `None` when it has more than one of either
/// (the manage loop cleans those up first). Terminating pods do not count.
fn updated_and_old(pods: &[Arc<Pod>], updated: &impl Fn(&Pod) -> bool) -> Option<NewAndOld> {
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if updated(pod) { &mut new } else { &mut old };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod.clone());
    }
    Some((new, old))
}

/// The rolling update's step: which old pods to delete and (with surge) on which nodes to
/// create new pods, within the budget. `node_pods` holds every node that should run a pod
/// (with no pods if it has none) and the nodes that have pods.
pub fn rolling_update(
    node_pods: &NodePods,
    max_surge: usize,
    max_unavailable: usize,
    updated: impl Fn(&Pod) -> bool,
    available: impl Fn(&Pod) -> bool,
) -> (Vec<Arc<Pod>>, Vec<String>) {
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut replace_now = Vec::new();
        let mut candidates = Vec::new();
        for pods in node_pods.values() {
            match updated_and_old(pods, &updated) {
                None | Some((None, None)) | Some((Some(_), Some(_))) => unavailable += 1,
                Some((Some(new), None)) => {
                    if !available(&new) {
                        unavailable += 1;
                    }
                }
                Some((None, Some(old))) => {
                    if !available(&old) {
                        replace_now.push(old);
                    } else if unavailable < max_unavailable {
                        candidates.push(old);
                    }
                }
            }
        }
        let room = max_unavailable
            .saturating_sub(unavailable)
            .min(candidates.len());
        replace_now.extend(candidates.into_iter().take(room));
        return (replace_now, Vec::new());
    }
    let mut surging = 0;
    let mut create_now = Vec::new();
    let mut candidates = Vec::new();
    let mut delete = Vec::new();
    for (node, pods) in node_pods {
        match updated_and_old(pods, &updated) {
            None => surging += 1,
            Some((_, None)) => {}
            Some((None, Some(old))) => {
                if !available(&old) {
                    create_now.push(node.clone());
                } else if surging < max_surge {
                    candidates.push(node.clone());
                }
            }
            Some((Some(new), Some(old))) => {
                if available(&new) {
                    delete.push(old);
                } else {
                    surging += 1;
                }
            }
        }
    }
    let room = max_surge.saturating_sub(surging).min(candidates.len());
    create_now.extend(candidates.into_iter().take(room));
    (delete, create_now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
    };
    use k8s_openapi::api::core::v1::PodStatus;
    use kube::api::ObjectMeta;

    /// A pod named `<kind><n>`: kind `n` (new, ready and available), `o` (old, ready and
    /// available), `u` (old, unavailable), `w` (new, not yet available), `f` (failed), `s`
    /// (succeeded).
    fn pod(name: &str, created: i64) -> Arc<Pod> {
        let phase = match &name[..1] {
            "f" => "Failed",
            "s" => "Succeeded",
            _ => "Running",
        };
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                creation_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(created).unwrap_or_default(),
                )),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![k8s_openapi::api::core::v1::PodCondition {
                    type_: "Ready".into(),
                    status: if matches!(&name[..1], "n" | "o") {
                        "True"
                    } else {
                        "False"
                    }
                    .into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    fn updated(p: &Pod) -> bool {
        matches!(p.metadata.name.as_deref().map(|n| &n[..1]), Some("n" | "w"))
    }

    fn available(p: &Pod) -> bool {
        matches!(p.metadata.name.as_deref().map(|n| &n[..1]), Some("n" | "o"))
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    const RUN: Placement = Placement {
        should_run: true,
        should_continue_running: true,
    };
    const KEEP: Placement = Placement {
        should_run: false,
        should_continue_running: true,
    };
    const NO: Placement = Placement {
        should_run: false,
        should_continue_running: false,
    };

    #[test]
    fn per_node_actions() {
        type Case = (
            &'static str,
            Placement,
            Option<Vec<Arc<Pod>>>,
            bool,
            bool,
            Vec<&'static str>,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            ("missing", RUN, None, false, true, vec![], vec![]),
            ("not wanted, none", NO, None, false, false, vec![], vec![]),
            (
                "tainted NoSchedule, none",
                KEEP,
                None,
                false,
                false,
                vec![],
                vec![],
            ),
            (
                "one",
                RUN,
                Some(vec![pod("o1", 1)]),
                false,
                false,
                vec![],
                vec![],
            ),
            (
                "surplus keeps the oldest",
                RUN,
                Some(vec![pod("o2", 5), pod("o1", 1), pod("o3", 9)]),
                false,
                false,
                vec!["o2", "o3"],
                vec![],
            ),
            (
                "not eligible",
                NO,
                Some(vec![pod("o1", 1), pod("o2", 2)]),
                false,
                false,
                vec!["o1", "o2"],
                vec![],
            ),
            (
                "failed and succeeded",
                RUN,
                Some(vec![pod("f1", 1), pod("s1", 2)]),
                false,
                false,
                vec!["s1"],
                vec!["f1"],
            ),
            (
                "surge: new available replaces old",
                RUN,
                Some(vec![pod("o1", 1), pod("n1", 2)]),
                true,
                false,
                vec!["o1"],
                vec![],
            ),
            (
                "surge: new not available yet",
                RUN,
                Some(vec![pod("o1", 1), pod("w1", 2)]),
                true,
                false,
                vec![],
                vec![],
            ),
        ];
        for (what, placement, pods, surge, create, delete, failed) in cases {
            let got = node_actions(placement, pods.as_ref(), surge, updated, |p: &Pod| {
                available(p)
            });
            assert_eq!(got.create, create, "{what}");
            assert_eq!(names(&got.delete), delete, "{what}");
            assert_eq!(names(&got.failed), failed, "{what}");
        }
    }

    fn nodes(specs: &[&[&str]]) -> NodePods {
        specs
            .iter()
            .enumerate()
            .map(|(i, pods)| {
                (
                    format!("node{i}"),
                    pods.iter().map(|n| pod(n, i as i64)).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn rolling_without_surge() {
        type Case = (
            &'static str,
            Vec<&'static [&'static str]>,
            usize,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "one at a time",
                vec![&["o1"], &["o2"], &["o3"]],
                1,
                vec!["o1"],
            ),
            (
                "two allowed",
                vec![&["o1"], &["o2"], &["o3"]],
                2,
                vec!["o1", "o2"],
            ),
            (
                "new one not available yet",
                vec![&["w1"], &["o2"], &["o3"]],
                1,
                vec![],
            ),
            (
                "node without pod counts unavailable",
                vec![&[], &["o2"]],
                1,
                vec![],
            ),
            (
                "unavailable old pods always go",
                vec![&["w1"], &["u2"], &["o3"]],
                1,
                vec!["u2"],
            ),
            ("done", vec![&["n1"], &["n2"]], 1, vec![]),
        ];
        for (what, spec, max_unavailable, want) in cases {
            let (delete, create) =
                rolling_update(&nodes(&spec), 0, max_unavailable, updated, available);
            assert_eq!(names(&delete), want, "{what}");
            assert!(create.is_empty(), "{what}");
        }
    }

    #[test]
    fn rolling_with_surge() {
        let n = nodes(&[&["o1"], &["o2"], &["o3", "w3"], &["o4", "n4"]]);
        let (delete, create) = rolling_update(&n, 2, 0, updated, available);
        assert_eq!(names(&delete), vec!["o4"]);
        assert_eq!(create, vec!["node0".to_string()]);
    }

    fn ds(surge: Option<IntOrString>, unavailable: Option<IntOrString>) -> DaemonSet {
        DaemonSet {
            spec: Some(DaemonSetSpec {
                update_strategy: Some(DaemonSetUpdateStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDaemonSet {
                        max_surge: surge,
                        max_unavailable: unavailable,
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn budgets() {
        let s = |v: &str| Some(IntOrString::String(v.into()));
        let i = |v: i32| Some(IntOrString::Int(v));
        let cases = [
            (ds(None, None), 10, (0, 1)),
            (ds(i(0), i(3)), 10, (0, 3)),
            (ds(None, s("25%")), 10, (0, 3)),
            (ds(s("10%"), i(0)), 10, (1, 0)),
            (ds(i(0), i(0)), 10, (0, 1)),
            (DaemonSet::default(), 3, (0, 1)),
        ];
        for (d, desired, want) in cases {
            assert_eq!(budget(&d, desired), want, "{:?}", d.spec);
        }
        assert!(allows_surge(&ds(i(1), i(0))));
        assert!(!allows_surge(&ds(i(0), i(1))));
    }
}
