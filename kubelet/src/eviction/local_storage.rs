//! Local ephemeral storage limits (upstream's `localStorageEviction`, on by default with
//! LocalStorageCapacityIsolation): a pod is evicted when an emptyDir outgrows its `sizeLimit`,
//! when its ephemeral storage outgrows the sum of its containers' `ephemeral-storage` limits,
//! or when a container's logs outgrow its own limit. No node pressure is needed for these.

use super::rank::PodUsage;
use api_types::resource::Quantity;
use k8s_openapi::api::core::v1::{Container, Pod};

fn limit(c: &Container) -> Option<Quantity> {
    c.resources
        .as_ref()?
        .limits
        .as_ref()?
        .get("ephemeral-storage")
        .and_then(|q| Quantity::parse(&q.0))
        .filter(|q| !q.is_zero())
}

/// Upstream's PodLimits for ephemeral-storage: the containers' sum (sidecars included), at
/// least any init container's, plus the overhead; None when no container has a limit.
fn pod_limit(pod: &Pod) -> Option<Quantity> {
    let spec = pod.spec.as_ref()?;
    let mut found = false;
    let mut sum = Quantity::ZERO;
    let mut sidecars = Quantity::ZERO;
    let mut init_max = Quantity::ZERO;
    for c in &spec.containers {
        if let Some(l) = limit(c) {
            found = true;
            sum = sum.add(&l);
        }
    }
    for c in spec.init_containers.iter().flatten() {
        let Some(l) = limit(c) else { continue };
        found = true;
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars = sidecars.add(&l);
            sum = sum.add(&l);
        } else {
            init_max = init_max.max(sidecars.add(&l));
        }
    }
    if !found {
        return None;
    }
    let overhead = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get("ephemeral-storage"))
        .and_then(|q| Quantity::parse(&q.0))
        .unwrap_or(Quantity::ZERO);
    Some(sum.max(init_max).add(&overhead))
}

/// Whether the pod has any limit this module enforces (only those pods are measured).
pub fn has_limits(pod: &Pod) -> bool {
    let Some(spec) = &pod.spec else { return false };
    spec.volumes
        .iter()
        .flatten()
        .any(|v| v.empty_dir.as_ref().is_some_and(|e| e.size_limit.is_some()))
        || pod_limit(pod).is_some()
}

/// Why the pod must go, in upstream's words; None when it is within its limits.
pub fn violation(pod: &Pod, usage: &PodUsage) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    for v in spec.volumes.iter().flatten() {
        let Some(size) = v
            .empty_dir
            .as_ref()
            .and_then(|e| e.size_limit.as_ref())
            .and_then(|q| Quantity::parse(&q.0))
            .filter(|q| !q.is_zero() && !q.is_negative())
        else {
            continue;
        };
        let used = usage
            .empty_dirs
            .iter()
            .find(|(name, _)| *name == v.name)
            .map(|(_, b)| i128::from(*b));
        if used.is_some_and(|u| u > size.value()) {
            return Some(format!(
                "Usage of EmptyDir volume {:?} exceeds the limit {:?}. ",
                v.name,
                size.canonical()
            ));
        }
    }
    if let (Some(l), Some(used)) = (pod_limit(pod), usage.ephemeral)
        && i128::from(used) > l.value()
    {
        return Some(format!(
            "Pod ephemeral local storage usage exceeds the total limit of containers {}. ",
            l.canonical()
        ));
    }
    for c in &spec.containers {
        let (Some(l), Some(used)) = (
            limit(c),
            usage
                .containers
                .iter()
                .find(|u| u.name == c.name)
                .and_then(|u| u.ephemeral),
        ) else {
            continue;
        };
        if i128::from(used) > l.value() {
            return Some(format!(
                "Container {} exceeded its local ephemeral storage limit {:?}. ",
                c.name,
                l.canonical()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eviction::rank::ContainerUsage;
    use serde_json::json;

    const MI: u64 = 1024 * 1024;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
    }

    fn usage(ephemeral: u64, volume: u64, logs: u64) -> PodUsage {
        PodUsage {
            ephemeral: Some(ephemeral),
            empty_dirs: vec![("data".into(), volume)],
            containers: vec![ContainerUsage {
                name: "c".into(),
                ephemeral: Some(logs),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn limits() {
        let sized = pod(json!({
            "containers": [{"name": "c"}],
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "2Mi"}}],
        }));
        let pod_limited = pod(json!({
            "containers": [
                {"name": "c", "resources": {"limits": {"ephemeral-storage": "3Mi"}}},
                {"name": "d", "resources": {"limits": {"ephemeral-storage": "1Mi"}}},
            ],
        }));
        let unlimited = pod(json!({"containers": [{"name": "c"}]}));
        let cases: Vec<(&str, &Pod, PodUsage, Option<&str>)> = vec![
            (
                "within the size limit",
                &sized,
                usage(2 * MI, 2 * MI, 0),
                None,
            ),
            (
                "over the size limit",
                &sized,
                usage(3 * MI, 3 * MI, 0),
                Some("Usage of EmptyDir volume \"data\" exceeds the limit \"2Mi\". "),
            ),
            (
                "within the pod's limit",
                &pod_limited,
                usage(4 * MI, 0, 0),
                None,
            ),
            (
                "over the pod's limit",
                &pod_limited,
                usage(5 * MI, 0, 0),
                Some(
                    "Pod ephemeral local storage usage exceeds the total limit of containers 4Mi. ",
                ),
            ),
            (
                "a container's logs over its limit",
                &pod_limited,
                usage(4 * MI, 0, 3 * MI + 1),
                Some("Container c exceeded its local ephemeral storage limit \"3Mi\". "),
            ),
            (
                "no limits",
                &unlimited,
                usage(50 * MI, 50 * MI, 50 * MI),
                None,
            ),
        ];
        for (name, p, u, want) in cases {
            assert_eq!(violation(p, &u).as_deref(), want, "{name}");
        }
        assert!(has_limits(&sized) && has_limits(&pod_limited) && !has_limits(&unlimited));
    }
}
