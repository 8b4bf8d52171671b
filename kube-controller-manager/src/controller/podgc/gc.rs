//! Which pods the pod garbage collector removes, decided from cached state only (the live
//! check of orphan candidates lives in the controller).

use crate::controller::nodelifecycle::taints::{self, NO_EXECUTE, OUT_OF_SERVICE};
use k8s_openapi::api::core::v1::{Node, Pod};
use std::collections::HashSet;

pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

pub fn is_terminated(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

pub fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn evicted(pod: &Pod) -> bool {
    phase(pod) == "Failed"
        && pod.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted")
}

/// The terminated pods beyond `threshold`, evicted ones first, then oldest first.
pub fn terminated_to_delete(
    pods: &[std::sync::Arc<Pod>],
    threshold: i32,
) -> Vec<std::sync::Arc<Pod>> {
    if threshold <= 0 {
        return Vec::new();
    }
    let mut terminated: Vec<_> = pods.iter().filter(|p| is_terminated(p)).cloned().collect();
    let excess = terminated.len().saturating_sub(threshold as usize);
    if excess == 0 {
        return Vec::new();
    }
    terminated.sort_by(|a, b| {
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        evicted(b)
            .cmp(&evicted(a))
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    terminated.truncate(excess);
    terminated
}

/// Terminating pods on NotReady nodes an admin declared out of service: their kubelet will
/// never confirm the deletion.
pub fn terminating_out_of_service(
    pods: &[std::sync::Arc<Pod>],
    nodes: &[std::sync::Arc<Node>],
) -> Vec<std::sync::Arc<Pod>> {
    let out: HashSet<&str> = nodes
        .iter()
        .filter(|n| {
            taints::has_taint(n, OUT_OF_SERVICE, NO_EXECUTE)
                && taints::condition(n, "Ready").is_none_or(|c| c.status != "True")
        })
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some() && !is_terminated(p))
        .filter(|p| node_name(p).is_some_and(|n| out.contains(n)))
        .cloned()
        .collect()
}

/// Terminating pods never scheduled: no kubelet will ever finish them.
pub fn unscheduled_terminating(pods: &[std::sync::Arc<Pod>]) -> Vec<std::sync::Arc<Pod>> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some() && node_name(p).is_none())
        .cloned()
        .collect()
}

/// The missing nodes to confirm absent with a live GET now: seen deleted, or missing from the
/// cache for the whole quarantine. Also returns when the next one comes out of quarantine.
/// `missing` and `deleted` forget nodes no pod refers to any more.
pub fn orphan_candidates(
    referenced: &HashSet<&str>,
    missing: &mut std::collections::HashMap<String, std::time::Instant>,
    deleted: &mut HashSet<String>,
    now: std::time::Instant,
    quarantine: std::time::Duration,
) -> (Vec<String>, Option<std::time::Duration>) {
    missing.retain(|n, _| referenced.contains(n.as_str()));
    deleted.retain(|n| referenced.contains(n.as_str()));
    let mut due = Vec::new();
    let mut next_check: Option<std::time::Duration> = None;
    for name in referenced {
        let since = *missing.entry(name.to_string()).or_insert(now);
        let waited = now.duration_since(since);
        if deleted.contains(*name) || waited >= quarantine {
            due.push(name.to_string());
        } else {
            let left = quarantine - waited;
            next_check = Some(next_check.map_or(left, |n| n.min(left)));
        }
    }
    due.sort();
    (due, next_check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use std::sync::Arc;

    fn pod(
        name: &str,
        created: i64,
        phase: &str,
        node: Option<&str>,
        terminating: bool,
    ) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        let ts = |s| Time(jiff::Timestamp::from_second(1_700_000_000 + s).unwrap());
        p.metadata.creation_timestamp = Some(ts(created));
        if terminating {
            p.metadata.deletion_timestamp = Some(ts(created + 1));
        }
        p.spec = Some(PodSpec {
            node_name: node.map(Into::into),
            ..Default::default()
        });
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            reason: (phase == "Failed" && name.starts_with("evicted")).then(|| "Evicted".into()),
            ..Default::default()
        });
        Arc::new(p)
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn terminated_threshold() {
        let pods = vec![
            pod("new", 3, "Succeeded", Some("n"), false),
            pod("old", 1, "Failed", Some("n"), false),
            pod("running", 0, "Running", Some("n"), false),
            pod("mid", 2, "Succeeded", Some("n"), false),
            pod("evicted", 4, "Failed", Some("n"), false),
        ];
        let cases = [
            (0, vec![]),
            (-1, vec![]),
            (4, vec![]),
            (3, vec!["evicted"]),
            (1, vec!["evicted", "old", "mid"]),
        ];
        for (threshold, want) in cases {
            assert_eq!(
                names(&terminated_to_delete(&pods, threshold)),
                want,
                "threshold {threshold}"
            );
        }
    }

    #[test]
    fn quarantine() {
        use std::collections::HashMap;
        use std::time::{Duration, Instant};
        let q = Duration::from_secs(40);
        let t0 = Instant::now();
        let mut missing = HashMap::new();
        let mut deleted: HashSet<String> = ["gone".to_string(), "unused".to_string()].into();
        let referenced: HashSet<&str> = ["gone", "new"].into();
        // A node seen deleted is checked at once; an unknown one waits out the quarantine.
        let (due, next) = orphan_candidates(&referenced, &mut missing, &mut deleted, t0, q);
        assert_eq!(due, vec!["gone"]);
        assert_eq!(next, Some(q));
        assert!(
            !deleted.contains("unused"),
            "forgotten when no pod refers to it"
        );
        let later = t0 + Duration::from_secs(30);
        let (due, next) = orphan_candidates(&referenced, &mut missing, &mut deleted, later, q);
        assert_eq!(due, vec!["gone"]);
        assert_eq!(next, Some(Duration::from_secs(10)));
        let (due, next) = orphan_candidates(&referenced, &mut missing, &mut deleted, t0 + q, q);
        assert_eq!(due, vec!["gone", "new"]);
        assert_eq!(next, None);
        // The pods went away: nothing is remembered.
        let (due, _) = orphan_candidates(&HashSet::new(), &mut missing, &mut deleted, t0 + q, q);
        assert!(due.is_empty() && missing.is_empty() && deleted.is_empty());
    }

    #[test]
    fn terminating() {
        let pods = vec![
            pod("a", 0, "Running", Some("oos"), true),
            pod("b", 0, "Running", Some("oos"), false),
            pod("c", 0, "Running", Some("ok"), true),
            pod("d", 0, "Pending", None, true),
            pod("e", 0, "Pending", None, false),
        ];
        let node = |name: &str, tainted: bool| {
            let mut n = Node::default();
            n.metadata.name = Some(name.into());
            n.spec = Some(NodeSpec {
                taints: tainted.then(|| vec![taints::taint(OUT_OF_SERVICE, NO_EXECUTE)]),
                ..Default::default()
            });
            Arc::new(n)
        };
        let nodes = vec![node("oos", true), node("ok", false)];
        assert_eq!(names(&terminating_out_of_service(&pods, &nodes)), vec!["a"]);
        assert_eq!(names(&unscheduled_terminating(&pods)), vec!["d"]);
    }
}
