//! Which pod goes first, as upstream's rankers: for memory, pods using more than they
//! requested, then lower priority, then the most usage above the request; for disk the same
//! on ephemeral storage (or inodes); for pids, lower priority then the most processes.

use super::signals::Resource;
use crate::kubelet::admission::pod_request;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::cmp::Ordering;
use std::sync::Arc;

/// Upstream's `SystemCriticalPriority`.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// One container's usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerUsage {
    pub name: String,
    /// Working set bytes.
    pub memory: Option<u64>,
    /// Bytes of its logs (the writable layer is not measured).
    pub ephemeral: Option<u64>,
}

/// One pod's usage, from its cgroup and its directories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodUsage {
    pub memory: Option<u64>,
    /// Logs and disk-backed local volumes.
    pub ephemeral: Option<u64>,
    pub inodes: Option<u64>,
    pub processes: Option<u64>,
    pub containers: Vec<ContainerUsage>,
    /// Bytes used in each emptyDir volume, by name (memory-backed ones too).
    pub empty_dirs: Vec<(String, u64)>,
}

/// Static and mirror pods and pods at system-critical priority are never evicted.
pub fn is_critical(pod: &Pod) -> bool {
    crate::pod::is_static_pod(pod)
        || crate::pod::is_mirror_pod(pod)
        || priority(pod) >= SYSTEM_CRITICAL_PRIORITY
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// The pod's request of a resource in its base unit (bytes), as admission sums it.
pub fn request(pod: &Pod, resource: Resource) -> i128 {
    let name = match resource {
        Resource::Memory => "memory",
        Resource::EphemeralStorage => "ephemeral-storage",
        Resource::Inodes | Resource::Pids => return 0,
    };
    pod_request(pod, name) / 1000
}

/// A container's own request of a resource in bytes (0 when unset), as messages show it.
pub fn request_of_container(c: &Container, resource: Resource) -> i128 {
    let name = match resource {
        Resource::Memory => "memory",
        Resource::EphemeralStorage => "ephemeral-storage",
        Resource::Inodes | Resource::Pids => return 0,
    };
    c.resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(name))
        .and_then(|q| api_types::resource::Quantity::parse(&q.0))
        .map(|q| q.value())
        .unwrap_or(0)
}

fn usage(u: &PodUsage, resource: Resource) -> Option<i128> {
    match resource {
        Resource::Memory => u.memory,
        Resource::EphemeralStorage => u.ephemeral,
        Resource::Inodes => u.inodes,
        Resource::Pids => u.processes,
    }
    .map(i128::from)
}

type Ranked<'a> = (&'a Arc<Pod>, Option<&'a PodUsage>);

/// Pods without figures first (nothing says they are cheap), then those above their request.
fn exceeds_requests(a: &Ranked<'_>, b: &Ranked<'_>, resource: Resource) -> Ordering {
    let above = |(pod, u): &Ranked<'_>| {
        u.and_then(|u| usage(u, resource))
            .map(|used| used > request(pod, resource))
    };
    match (above(a), above(b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x),
    }
}

fn by_priority(a: &Ranked<'_>, b: &Ranked<'_>) -> Ordering {
    priority(a.0).cmp(&priority(b.0))
}

/// The most usage above the request first.
fn by_usage_above_request(a: &Ranked<'_>, b: &Ranked<'_>, resource: Resource) -> Ordering {
    let above = |(pod, u): &Ranked<'_>| {
        u.and_then(|u| usage(u, resource))
            .map(|used| used - request(pod, resource))
            .unwrap_or(0)
    };
    above(b).cmp(&above(a))
}

/// `pods` in eviction order for a shortage of `resource`.
pub fn rank(
    pods: &[Arc<Pod>],
    usage_of: &dyn Fn(&Pod) -> Option<PodUsage>,
    resource: Resource,
) -> Vec<Arc<Pod>> {
    let figures: Vec<Option<PodUsage>> = pods.iter().map(|p| usage_of(p)).collect();
    let mut order: Vec<Ranked<'_>> = pods
        .iter()
        .zip(figures.iter().map(Option::as_ref))
        .collect();
    order.sort_by(|a, b| match resource {
        Resource::Pids => by_priority(a, b).then_with(|| by_usage_above_request(a, b, resource)),
        _ => exceeds_requests(a, b, resource)
            .then_with(|| by_priority(a, b))
            .then_with(|| by_usage_above_request(a, b, resource)),
    });
    order.into_iter().map(|(p, _)| p.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    const MI: u64 = 1024 * 1024;

    fn pod(name: &str, priority: i32, memory_request: Option<&str>) -> Arc<Pod> {
        let resources = match memory_request {
            Some(r) => json!({"requests": {"memory": r, "ephemeral-storage": r}}),
            None => json!({}),
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "uid": name},
                "spec": {
                    "priority": priority,
                    "containers": [{"name": "c", "resources": resources}],
                },
            }))
            .unwrap(),
        )
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter()
            .map(|p| p.metadata.name.as_deref().unwrap_or_default())
            .collect()
    }

    #[test]
    fn ranking() {
        type Case = (
            &'static str,
            Resource,
            Vec<(Arc<Pod>, Option<u64>)>,
            &'static [&'static str],
        );
        let cases: Vec<Case> = vec![
            (
                "a best-effort pod using less goes before a burstable one within its request",
                Resource::Memory,
                vec![
                    (pod("burstable", 0, Some("100Mi")), Some(80 * MI)),
                    (pod("besteffort", 0, None), Some(50 * MI)),
                ],
                &["besteffort", "burstable"],
            ),
            (
                "among pods above their requests, lower priority first",
                Resource::Memory,
                vec![
                    (pod("high", 1000, None), Some(500 * MI)),
                    (pod("low", 0, None), Some(10 * MI)),
                ],
                &["low", "high"],
            ),
            (
                "same priority: the most usage above the request",
                Resource::Memory,
                vec![
                    (pod("small", 0, Some("10Mi")), Some(30 * MI)),
                    (pod("big", 0, Some("10Mi")), Some(90 * MI)),
                    (pod("within", 0, Some("1Gi")), Some(900 * MI)),
                ],
                &["big", "small", "within"],
            ),
            (
                "a pod without figures first",
                Resource::Memory,
                vec![
                    (pod("measured", 0, None), Some(90 * MI)),
                    (pod("unknown", 0, None), None),
                ],
                &["unknown", "measured"],
            ),
            (
                "disk: above the request first, then the least below it",
                Resource::EphemeralStorage,
                vec![
                    (pod("requested", 0, Some("100Mi")), Some(60 * MI)),
                    (pod("writer", 0, None), Some(20 * MI)),
                    (pod("idle", 0, None), Some(0)),
                ],
                &["writer", "idle", "requested"],
            ),
            (
                "pids: priority before count",
                Resource::Pids,
                vec![
                    (pod("many", 10, None), Some(500)),
                    (pod("few", 0, None), Some(5)),
                    (pod("some", 0, None), Some(50)),
                ],
                &["some", "few", "many"],
            ),
        ];
        for (name, resource, input, want) in cases {
            let pods: Vec<Arc<Pod>> = input.iter().map(|(p, _)| p.clone()).collect();
            let figures: HashMap<String, Option<u64>> = input
                .iter()
                .map(|(p, u)| (p.metadata.name.clone().unwrap(), *u))
                .collect();
            let usage_of = |p: &Pod| {
                let n = (*figures.get(p.metadata.name.as_deref()?)?)?;
                Some(PodUsage {
                    memory: Some(n),
                    ephemeral: Some(n),
                    inodes: Some(n),
                    processes: Some(n),
                    ..PodUsage::default()
                })
            };
            let ranked = rank(&pods, &usage_of, resource);
            assert_eq!(names(&ranked), want, "{name}");
        }
    }

    #[test]
    fn critical_pods() {
        assert!(is_critical(&pod(
            "p",
            SYSTEM_CRITICAL_PRIORITY + 1000,
            None
        )));
        assert!(!is_critical(&pod("p", 1000, None)));
        let mut static_pod = (*pod("s", 0, None)).clone();
        static_pod.metadata.annotations = Some(
            [(
                "kubernetes.io/config.source".to_string(),
                "file".to_string(),
            )]
            .into(),
        );
        assert!(is_critical(&static_pod));
    }
}
