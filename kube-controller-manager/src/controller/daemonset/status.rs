//! The DaemonSet's status counts (upstream's `updateDaemonSetStatus`).

use super::eligibility::node_should_run;
use super::plan::{NodePods, oldest_first};
use super::revision::{is_pod_updated, template_generation};
use crate::controller::utils::pods::{is_pod_available, is_pod_ready};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::Node;
use std::sync::Arc;

/// Counts per node: a node that should run the daemon counts toward desired, its oldest pod
/// toward ready/available/updated; a pod on a node that should not run it is misscheduled.
pub fn calculate_status(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    node_pods: &NodePods,
    hash: &str,
    now: Timestamp,
) -> DaemonSetStatus {
    let min_ready = ds
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);
    let generation = template_generation(ds);
    let mut s = DaemonSetStatus {
        collision_count: ds.status.as_ref().and_then(|s| s.collision_count),
        conditions: ds.status.as_ref().and_then(|s| s.conditions.clone()),
        observed_generation: ds.metadata.generation,
        ..Default::default()
    };
    let mut available = 0;
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let pods = node_pods.get(name).filter(|p| !p.is_empty());
        let should_run = node_should_run(node, ds).should_run;
        match (should_run, pods) {
            (true, None) => s.desired_number_scheduled += 1,
            (true, Some(pods)) => {
                s.desired_number_scheduled += 1;
                s.current_number_scheduled += 1;
                let mut pods = pods.clone();
                pods.sort_by(oldest_first);
                let pod = &pods[0];
                if is_pod_ready(pod) {
                    s.number_ready += 1;
                    if is_pod_available(pod, min_ready, now) {
                        available += 1;
                    }
                }
                if is_pod_updated(pod.metadata.labels.as_ref(), hash, generation.as_deref()) {
                    *s.updated_number_scheduled.get_or_insert(0) += 1;
                }
            }
            (false, Some(_)) => s.number_misscheduled += 1,
            (false, None) => {}
        }
    }
    s.number_available = Some(available);
    s.number_unavailable = Some(s.desired_number_scheduled - available);
    s.updated_number_scheduled = Some(s.updated_number_scheduled.unwrap_or(0));
    s
}

/// Whether writing `next` changes anything the controller owns.
pub fn status_changed(current: Option<&DaemonSetStatus>, next: &DaemonSetStatus) -> bool {
    let cur = current.cloned().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    cur.desired_number_scheduled != next.desired_number_scheduled
        || cur.current_number_scheduled != next.current_number_scheduled
        || cur.number_misscheduled != next.number_misscheduled
        || cur.number_ready != next.number_ready
        || n(cur.updated_number_scheduled) != n(next.updated_number_scheduled)
        || n(cur.number_available) != n(next.number_available)
        || n(cur.number_unavailable) != n(next.number_unavailable)
        || cur.observed_generation != next.observed_generation
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::daemonset::revision::REVISION_HASH_LABEL;
    use k8s_openapi::api::apps::v1::DaemonSetSpec;
    use k8s_openapi::api::core::v1::{NodeSpec, Pod, PodCondition, PodStatus, Taint};
    use kube::api::ObjectMeta;

    fn node(name: &str, tainted: bool) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: tainted.then(|| {
                    vec![Taint {
                        key: "x".into(),
                        effect: "NoSchedule".into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            status: None,
        })
    }

    fn pod(hash: &str, ready: bool) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(format!("p-{hash}")),
                labels: Some([(REVISION_HASH_LABEL.to_string(), hash.to_string())].into()),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    #[test]
    fn counts() {
        let ds = DaemonSet {
            metadata: ObjectMeta {
                generation: Some(3),
                ..Default::default()
            },
            spec: Some(DaemonSetSpec::default()),
            status: None,
        };
        let nodes = vec![
            node("a", false),
            node("b", false),
            node("c", false),
            node("t", true),
        ];
        let node_pods: NodePods = [
            ("a".to_string(), vec![pod("new", true)]),
            ("b".to_string(), vec![pod("old", false)]),
            ("t".to_string(), vec![pod("old", true)]),
            ("gone".to_string(), vec![pod("old", true)]),
        ]
        .into();
        let s = calculate_status(&ds, &nodes, &node_pods, "new", Timestamp::now());
        assert_eq!(s.desired_number_scheduled, 3);
        assert_eq!(s.current_number_scheduled, 2);
        assert_eq!(s.number_misscheduled, 1);
        assert_eq!(s.number_ready, 1);
        assert_eq!(s.number_available, Some(1));
        assert_eq!(s.number_unavailable, Some(2));
        assert_eq!(s.updated_number_scheduled, Some(1));
        assert_eq!(s.observed_generation, Some(3));
        assert!(status_changed(None, &s));
        assert!(!status_changed(Some(&s), &s));
    }
}
