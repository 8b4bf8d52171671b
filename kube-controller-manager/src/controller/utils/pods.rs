//! Pod predicates and the deletion ranking shared by the workload controllers, as upstream's
//! `pkg/controller` and `podutil` helpers.

use futures::future::join_all;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// The pod index by controller uid (orphans under `<namespace>/_ORPHAN_POD`), as upstream's
/// `PodControllerUIDIndex`: a controller's sync reads its own pods and the orphans it may
/// adopt instead of every pod of the namespace.
pub const CONTROLLER_UID_INDEX: &str = "controllerUID";
const ORPHAN_POD: &str = "_ORPHAN_POD";

fn controller_uid_index_values(pod: &Pod) -> Vec<String> {
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    match controller {
        Some(r) => vec![r.uid.clone()],
        None => {
            let ns = pod.metadata.namespace.as_deref().unwrap_or("");
            vec![format!("{ns}/{ORPHAN_POD}")]
        }
    }
}

/// Adds [`CONTROLLER_UID_INDEX`] to the pod cache (a no-op when another controller did).
pub fn add_controller_uid_index(
    informer: &client_go_rs::informers::SharedInformer<Pod>,
) -> anyhow::Result<()> {
    match informer.add_indexer(CONTROLLER_UID_INDEX, controller_uid_index_values) {
        Ok(()) | Err(client_go_rs::listers::IndexerError::Conflict(_)) => Ok(()),
        Err(e) => Err(anyhow::Error::new(e).context("adding the controller uid pod index")),
    }
}

/// The cached pods controlled by `uid` and, with `orphans`, the orphans of `namespace`;
/// `None` when the cache has no [`CONTROLLER_UID_INDEX`].
pub fn pods_by_controller(
    pods: &client_go_rs::listers::Lister<Pod>,
    namespace: &str,
    uid: &str,
    orphans: bool,
) -> Option<Vec<Arc<Pod>>> {
    let mut out = pods.by_index(CONTROLLER_UID_INDEX, uid).ok()?;
    // A uid is unique, but a pod of another namespace naming it is no pod of this owner.
    out.retain(|p| p.metadata.namespace.as_deref() == Some(namespace));
    if orphans {
        let key = format!("{namespace}/{ORPHAN_POD}");
        out.extend(pods.by_index(CONTROLLER_UID_INDEX, &key).ok()?);
    }
    Some(out)
}

/// The annotation a user sets to tell the ReplicaSet controller which pods to delete first.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Not terminal and not being deleted: the pods a controller counts.
pub fn is_pod_active(pod: &Pod) -> bool {
    let p = phase(pod);
    p != "Succeeded" && p != "Failed" && pod.metadata.deletion_timestamp.is_none()
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_pod_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

fn ready_condition(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
}

/// When the pod became ready, if it is ready and the transition time is known.
pub fn pod_ready_since(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// Ready for at least `min_ready_seconds` at `now`.
pub fn is_pod_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !is_pod_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    match pod_ready_since(pod) {
        Some(since) => {
            let ready_for = now.as_second() - since.as_second();
            ready_for >= i64::from(min_ready_seconds)
        }
        None => false,
    }
}

/// The highest restart count among the pod's containers.
fn max_container_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).max().unwrap_or(0))
        .unwrap_or(0)
}

fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST))
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(0)
}

/// Upstream's phase ordinals; phases it does not list (terminal ones, which active pods do
/// not have) rank with Pending.
fn phase_rank(pod: &Pod) -> u8 {
    match phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// `t1` sorts first: it is later, or unknown (upstream's `afterOrZero`).
fn after_or_zero(t1: Option<Timestamp>, t2: Option<Timestamp>) -> Ordering {
    match (t1, t2) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// Compares two times on a log2 scale of their age, so pods that came up at about the same
/// time are deleted in random (uid) order rather than strictly newest first; this spreads the
/// deletions over failure domains (upstream's `LogarithmicScaleDown`).
fn log_scale_order(
    t1: Option<Timestamp>,
    t2: Option<Timestamp>,
    uid1: &str,
    uid2: &str,
    now: Timestamp,
) -> Ordering {
    if t1 == t2 {
        return Ordering::Equal;
    }
    let (Some(a), Some(b)) = (t1, t2) else {
        return after_or_zero(t1, t2);
    };
    let bucket = |t: Timestamp| {
        let age = now.as_nanosecond() - t.as_nanosecond();
        if age <= 0 {
            -1
        } else {
            // ilog2 of a positive i128 fits any u32.
            i64::from(age.ilog2())
        }
    };
    match bucket(a).cmp(&bucket(b)) {
        Ordering::Equal => uid1.cmp(uid2),
        other => other,
    }
}

/// The order in which surplus pods are deleted, first to last (upstream's
/// `ActivePodsWithRanks`): unassigned before assigned; Pending, Unknown, then Running; not
/// ready before ready; lower deletion cost first; more pods of the owner on the same node
/// (`rank`) first; ready more recently first; more restarts first; newer first.
pub fn compare_for_deletion(
    a: &Pod,
    rank_a: usize,
    b: &Pod,
    rank_b: usize,
    now: Timestamp,
) -> Ordering {
    let assigned = |p: &Pod| !node_name(p).is_empty();
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| phase_rank(a).cmp(&phase_rank(b)))
        .then_with(|| is_pod_ready(a).cmp(&is_pod_ready(b)))
        .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
        .then_with(|| rank_b.cmp(&rank_a))
        .then_with(|| {
            if is_pod_ready(a) && is_pod_ready(b) {
                log_scale_order(pod_ready_since(a), pod_ready_since(b), uid(a), uid(b), now)
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| max_container_restarts(b).cmp(&max_container_restarts(a)))
        .then_with(|| log_scale_order(creation(a), creation(b), uid(a), uid(b), now))
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

fn creation(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// For each pod of `pods`, how many active pods of `related` run on its node (upstream's
/// `getPodsRankedByRelatedPodsOnSameNode`); unassigned pods rank 0.
pub fn ranks_by_related_pods_on_node(pods: &[Arc<Pod>], related: &[Arc<Pod>]) -> Vec<usize> {
    let mut per_node: HashMap<&str, usize> = HashMap::new();
    for p in related.iter().filter(|p| is_pod_active(p)) {
        let node = node_name(p);
        if !node.is_empty() {
            *per_node.entry(node).or_default() += 1;
        }
    }
    pods.iter()
        .map(|p| per_node.get(node_name(p)).copied().unwrap_or(0))
        .collect()
}

/// The `diff` pods to delete first among `pods`, ranked against `related` (upstream's
/// `getPodsToDelete`).
pub fn pods_to_delete(
    pods: &[Arc<Pod>],
    related: &[Arc<Pod>],
    diff: usize,
    now: Timestamp,
) -> Vec<Arc<Pod>> {
    if diff >= pods.len() {
        return pods.to_vec();
    }
    let ranks = ranks_by_related_pods_on_node(pods, related);
    let mut ranked: Vec<(Arc<Pod>, usize)> = pods.iter().cloned().zip(ranks).collect();
    ranked.sort_by(|(a, ra), (b, rb)| compare_for_deletion(a, *ra, b, *rb, now));
    ranked.into_iter().take(diff).map(|(p, _)| p).collect()
}

/// Runs `f` `count` times in batches of 1, 2, 4, ... (starting at `initial_batch_size`),
/// stopping after the first batch with a failure, so a systematically failing call (quota,
/// admission) costs a few requests rather than `count`. Returns how many calls succeeded and
/// the first error.
pub async fn slow_start_batch<F, Fut>(
    count: usize,
    initial_batch_size: usize,
    f: F,
) -> (usize, Option<anyhow::Error>)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let mut remaining = count;
    let mut successes = 0;
    let mut batch = initial_batch_size.max(1).min(count.max(1));
    let mut next_index = 0;
    while remaining > 0 {
        let size = batch.min(remaining);
        let results = join_all((next_index..next_index + size).map(&f)).await;
        next_index += size;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(()) => successes += 1,
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        }
        if first_err.is_some() {
            return (successes, first_err);
        }
        remaining -= size;
        batch = (batch * 2).min(remaining.max(1));
    }
    (successes, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[derive(Clone, Default)]
    struct P {
        name: &'static str,
        node: &'static str,
        phase: &'static str,
        ready_since: Option<i64>,
        restarts: i32,
        created: i64,
        cost: Option<&'static str>,
        deleting: bool,
    }

    fn pod(p: P) -> Arc<Pod> {
        let conditions = p.ready_since.map(|s| {
            vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(Time(ts(s))),
                ..Default::default()
            }]
        });
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(p.name.into()),
                uid: Some(format!("uid-{}", p.name)),
                creation_timestamp: Some(Time(ts(p.created))),
                annotations: p
                    .cost
                    .map(|c| [(POD_DELETION_COST.to_string(), c.to_string())].into()),
                deletion_timestamp: p.deleting.then(|| Time(ts(1))),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: (!p.node.is_empty()).then(|| p.node.to_string()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(p.phase.to_string()),
                conditions,
                container_statuses: Some(vec![ContainerStatus {
                    restart_count: p.restarts,
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    #[test]
    fn predicates() {
        let now = ts(1_000);
        let cases = [
            // (pod, active, ready, available with minReady 10)
            (
                P {
                    phase: "Running",
                    ready_since: Some(900),
                    ..Default::default()
                },
                true,
                true,
                true,
            ),
            (
                P {
                    phase: "Running",
                    ready_since: Some(995),
                    ..Default::default()
                },
                true,
                true,
                false,
            ),
            (
                P {
                    phase: "Running",
                    ..Default::default()
                },
                true,
                false,
                false,
            ),
            (
                P {
                    phase: "Pending",
                    ..Default::default()
                },
                true,
                false,
                false,
            ),
            (
                P {
                    phase: "Succeeded",
                    ..Default::default()
                },
                false,
                false,
                false,
            ),
            (
                P {
                    phase: "Failed",
                    ..Default::default()
                },
                false,
                false,
                false,
            ),
            (
                P {
                    phase: "Running",
                    ready_since: Some(1),
                    deleting: true,
                    ..Default::default()
                },
                false,
                true,
                true,
            ),
        ];
        for (i, (p, active, ready, available)) in cases.into_iter().enumerate() {
            let p = pod(p);
            assert_eq!(is_pod_active(&p), active, "case {i} active");
            assert_eq!(is_pod_ready(&p), ready, "case {i} ready");
            assert_eq!(
                is_pod_available(&p, 10, now),
                available,
                "case {i} available"
            );
            assert_eq!(
                is_pod_available(&p, 0, now),
                ready,
                "case {i} available, no minReady"
            );
        }
    }

    #[test]
    fn deletion_order() {
        let now = ts(1_000_000);
        // Each case: the pod that must be deleted before the other.
        let cases: Vec<(&str, P, P)> = vec![
            (
                "unassigned first",
                P {
                    name: "a",
                    phase: "Pending",
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n1",
                    phase: "Pending",
                    ..Default::default()
                },
            ),
            (
                "pending before running",
                P {
                    name: "a",
                    node: "n1",
                    phase: "Pending",
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n1",
                    phase: "Running",
                    ..Default::default()
                },
            ),
            (
                "unknown before running",
                P {
                    name: "a",
                    node: "n1",
                    phase: "Unknown",
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n1",
                    phase: "Running",
                    ..Default::default()
                },
            ),
            (
                "not ready before ready",
                P {
                    name: "a",
                    node: "n1",
                    phase: "Running",
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n1",
                    phase: "Running",
                    ready_since: Some(1),
                    ..Default::default()
                },
            ),
            (
                "lower deletion cost first",
                P {
                    name: "a",
                    node: "n1",
                    phase: "Running",
                    cost: Some("-5"),
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n1",
                    phase: "Running",
                    ..Default::default()
                },
            ),
            (
                "doubled up first",
                P {
                    name: "a",
                    node: "n2",
                    phase: "Running",
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n1",
                    phase: "Running",
                    ..Default::default()
                },
            ),
            (
                "ready more recently first",
                P {
                    name: "a",
                    node: "n3",
                    phase: "Running",
                    ready_since: Some(999_990),
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n3",
                    phase: "Running",
                    ready_since: Some(10),
                    ..Default::default()
                },
            ),
            (
                "more restarts first",
                P {
                    name: "a",
                    node: "n3",
                    phase: "Running",
                    restarts: 3,
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n3",
                    phase: "Running",
                    restarts: 1,
                    ..Default::default()
                },
            ),
            (
                "newer first",
                P {
                    name: "a",
                    node: "n3",
                    phase: "Running",
                    created: 999_999,
                    ..Default::default()
                },
                P {
                    name: "b",
                    node: "n3",
                    phase: "Running",
                    created: 5,
                    ..Default::default()
                },
            ),
        ];
        // n2 hosts two pods of the owner, n1 one, n3 one.
        let related = vec![
            pod(P {
                name: "x",
                node: "n2",
                phase: "Running",
                ..Default::default()
            }),
            pod(P {
                name: "y",
                node: "n2",
                phase: "Running",
                ..Default::default()
            }),
            pod(P {
                name: "z",
                node: "n1",
                phase: "Running",
                ..Default::default()
            }),
        ];
        for (what, first, second) in cases {
            let pods = vec![pod(second), pod(first)];
            let order = pods_to_delete(&pods, &related, 1, now);
            assert_eq!(order.len(), 1);
            assert_eq!(order[0].metadata.name.as_deref(), Some("a"), "{what}");
        }
    }

    #[test]
    fn controller_uid_index() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owned = |name: &str, ns: &str, uid: Option<&str>| {
            let mut p = Pod::default();
            p.metadata.name = Some(name.into());
            p.metadata.namespace = Some(ns.into());
            p.metadata.owner_references = uid.map(|u| {
                vec![OwnerReference {
                    uid: u.into(),
                    controller: Some(true),
                    ..Default::default()
                }]
            });
            Arc::new(p)
        };
        let indexer = Arc::new(client_go_rs::listers::Indexer::new());
        let lister = client_go_rs::listers::Lister::new(indexer.clone());
        assert!(
            pods_by_controller(&lister, "ns", "u1", true).is_none(),
            "no index yet"
        );
        indexer
            .add_indexer(CONTROLLER_UID_INDEX, controller_uid_index_values)
            .unwrap_or_else(|e| panic!("{e}"));
        for p in [
            owned("a", "ns", Some("u1")),
            owned("b", "ns", Some("u2")),
            owned("c", "ns", None),
            owned("d", "other", None),
        ] {
            indexer.insert(p);
        }
        let names = |pods: Option<Vec<Arc<Pod>>>| {
            let mut n: Vec<String> = pods
                .unwrap_or_default()
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            n.sort();
            n
        };
        assert_eq!(
            names(pods_by_controller(&lister, "ns", "u1", true)),
            ["a", "c"]
        );
        assert_eq!(names(pods_by_controller(&lister, "ns", "u1", false)), ["a"]);
        assert_eq!(
            names(pods_by_controller(&lister, "other", "u2", true)),
            ["d"]
        );
    }

    #[test]
    fn pods_to_delete_takes_all_when_diff_is_large() {
        let pods = vec![pod(P {
            name: "a",
            ..Default::default()
        })];
        assert_eq!(pods_to_delete(&pods, &pods, 5, ts(10)).len(), 1);
    }

    #[tokio::test]
    async fn slow_start_batches() {
        let cases = [
            // (count, fail from call index, expected successes, expected calls)
            (0, None, 0, 0),
            (7, None, 7, 7),
            (10, Some(0), 0, 1),
            (10, Some(1), 1, 3),
            (10, Some(4), 4, 7),
            (10, Some(9), 9, 10),
        ];
        for (count, fail_from, want_ok, want_calls) in cases {
            let calls = AtomicUsize::new(0);
            let (ok, err) = slow_start_batch(count, 1, |i| {
                calls.fetch_add(1, AtomicOrdering::SeqCst);
                let fail = fail_from.is_some_and(|f| i >= f);
                async move {
                    if fail {
                        anyhow::bail!("boom")
                    }
                    Ok(())
                }
            })
            .await;
            assert_eq!(ok, want_ok, "count {count} fail {fail_from:?}");
            assert_eq!(err.is_some(), fail_from.is_some());
            assert_eq!(
                calls.load(AtomicOrdering::SeqCst),
                want_calls,
                "calls for {count}"
            );
        }
    }
}
