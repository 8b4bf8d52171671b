//! What one pod charges to a quota, and which quota scopes it falls under, as upstream's pod
//! quota evaluator.

use api_types::resource::{Quantity, ResourceList};
use k8s_openapi::api::core::v1::{Container, Pod, ScopedResourceSelectorRequirement};
use std::collections::BTreeMap;

/// Resources a pod's usage answers for beyond the `requests.`/`limits.`/hugepages prefixes.
const POD_NAMES: &[&str] = &["pods", "count/pods", "cpu", "memory", "ephemeral-storage"];

/// Whether a quota resource name is measured from pods.
pub fn is_pod_resource(name: &str) -> bool {
    POD_NAMES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("limits.")
        || (name.starts_with("requests.") && name != "requests.storage")
}

/// A pod whose phase is terminal, or whose deletion grace period has passed, no longer uses
/// compute (upstream's `QuotaV1Pod`); it still counts in `count/pods`.
pub fn uses_compute(pod: &Pod, now: jiff::Timestamp) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    if let (Some(deleted), Some(grace)) = (
        pod.metadata.deletion_timestamp.as_ref(),
        pod.metadata.deletion_grace_period_seconds,
    ) && now > deleted.0 + jiff::SignedDuration::from_secs(grace)
    {
        return false;
    }
    true
}

fn list(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> ResourceList {
    map.into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(&v.0)?)))
        .collect()
}

fn add_into(into: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        let sum = into.get(k).map_or(*v, |cur| cur.add(v));
        into.insert(k.clone(), sum);
    }
}

fn max_into(into: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        if into.get(k).is_none_or(|cur| v > cur) {
            into.insert(k.clone(), *v);
        }
    }
}

/// The effective requests (or limits) of a pod: its containers and restartable init
/// containers run together, each plain init container runs alone beside the sidecars started
/// before it, the larger of the two wins, and the pod overhead comes on top.
fn effective(pod: &Pod, pick: fn(&Container) -> ResourceList) -> ResourceList {
    let Some(spec) = pod.spec.as_ref() else {
        return ResourceList::new();
    };
    let mut total = ResourceList::new();
    for c in &spec.containers {
        add_into(&mut total, &pick(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for c in spec.init_containers.iter().flatten() {
        let own = pick(c);
        if c.restart_policy.as_deref() == Some("Always") {
            add_into(&mut total, &own);
            add_into(&mut sidecars, &own);
            max_into(&mut init_peak, &sidecars);
        } else {
            let mut running = sidecars.clone();
            add_into(&mut running, &own);
            max_into(&mut init_peak, &running);
        }
    }
    max_into(&mut total, &init_peak);
    add_into(&mut total, &list(spec.overhead.as_ref()));
    total
}

fn requests(c: &Container) -> ResourceList {
    list(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
}

fn limits(c: &Container) -> ResourceList {
    list(c.resources.as_ref().and_then(|r| r.limits.as_ref()))
}

/// An extended resource (`example.com/gpu`): namespaced by a domain outside kubernetes.io.
fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/")
}

/// Everything one pod charges, under every quota name that measures it.
pub fn usage(pod: &Pod, now: jiff::Timestamp) -> ResourceList {
    let mut result = ResourceList::from([("count/pods".to_string(), Quantity::from_int(1))]);
    if !uses_compute(pod, now) {
        return result;
    }
    result.insert("pods".into(), Quantity::from_int(1));
    let requests = effective(pod, requests);
    let limits = effective(pod, limits);
    for base in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(base) {
            result.insert(base.into(), *q);
            result.insert(format!("requests.{base}"), *q);
        }
        if let Some(q) = limits.get(base) {
            result.insert(format!("limits.{base}"), *q);
        }
    }
    for (name, q) in &requests {
        if name.starts_with("hugepages-") {
            result.insert(name.clone(), *q);
            result.insert(format!("requests.{name}"), *q);
        } else if is_extended(name) {
            result.insert(format!("requests.{name}"), *q);
        }
    }
    result
}

/// Whether a pod falls under one scope requirement of a quota.
pub fn matches_scope(pod: &Pod, req: &ScopedResourceSelectorRequirement) -> bool {
    let spec = pod.spec.as_ref();
    let terminating = spec
        .and_then(|s| s.active_deadline_seconds)
        .is_some_and(|d| d >= 0);
    match req.scope_name.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "PriorityClass" => {
            let class = spec.and_then(|s| s.priority_class_name.as_deref());
            let values = req.values.as_deref().unwrap_or_default();
            match req.operator.as_str() {
                "In" => class.is_some_and(|c| values.iter().any(|v| v == c)),
                "NotIn" => class.is_none_or(|c| !values.iter().any(|v| v == c)),
                "Exists" => class.is_some_and(|c| !c.is_empty()),
                "DoesNotExist" => class.is_none_or(str::is_empty),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(pod),
        _ => false,
    }
}

/// BestEffort QoS: no container states a cpu or memory request or limit.
fn is_best_effort(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .all(|c| {
            let r = requests(c);
            let l = limits(c);
            ["cpu", "memory"].iter().all(|k| {
                r.get(*k).is_none_or(Quantity::is_zero) && l.get(*k).is_none_or(Quantity::is_zero)
            })
        })
}

fn uses_cross_namespace_affinity(pod: &Pod) -> bool {
    let Some(affinity) = pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
        return false;
    };
    let crosses = |t: &k8s_openapi::api::core::v1::PodAffinityTerm| {
        t.namespace_selector.is_some() || t.namespaces.as_ref().is_some_and(|n| !n.is_empty())
    };
    let pa = affinity.pod_affinity.as_ref();
    let anti = affinity.pod_anti_affinity.as_ref();
    pa.and_then(|a| {
        a.required_during_scheduling_ignored_during_execution
            .as_ref()
    })
    .into_iter()
    .flatten()
    .chain(
        anti.and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten(),
    )
    .any(crosses)
        || pa
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .into_iter()
            .flatten()
            .chain(
                anti.and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .into_iter()
                .flatten(),
            )
            .any(|w| crosses(&w.pod_affinity_term))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("pod")
    }

    fn canonical(list: &ResourceList) -> BTreeMap<String, String> {
        list.iter()
            .map(|(k, v)| (k.clone(), v.canonical()))
            .collect()
    }

    #[test]
    fn usage_of_pods() {
        let now = jiff::Timestamp::now();
        let cases = [
            (
                "two containers and an overhead",
                json!({"spec": {"containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "200m"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "250m", "example.com/gpu": "1"}}}
                ], "overhead": {"cpu": "50m"}}}),
                vec![
                    ("count/pods", "1"),
                    ("cpu", "400m"),
                    ("limits.cpu", "250m"),
                    ("memory", "1Gi"),
                    ("pods", "1"),
                    ("requests.cpu", "400m"),
                    ("requests.example.com/gpu", "1"),
                    ("requests.memory", "1Gi"),
                ],
            ),
            (
                "a big init container wins over the containers",
                json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]}}),
                vec![
                    ("count/pods", "1"),
                    ("cpu", "1"),
                    ("pods", "1"),
                    ("requests.cpu", "1"),
                ],
            ),
            (
                "a sidecar runs beside the containers",
                json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}]}}),
                vec![
                    ("count/pods", "1"),
                    ("cpu", "200m"),
                    ("pods", "1"),
                    ("requests.cpu", "200m"),
                ],
            ),
            (
                "a finished pod only counts as an object",
                json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]},
                    "status": {"phase": "Succeeded"}}),
                vec![("count/pods", "1")],
            ),
        ];
        for (name, p, want) in cases {
            let want: BTreeMap<String, String> = want
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(canonical(&usage(&pod(p), now)), want, "{name}");
        }
    }

    #[test]
    fn scopes() {
        let best_effort =
            pod(json!({"spec": {"containers": [{"name": "a"}], "priorityClassName": "high"}}));
        let burstable = pod(json!({"spec": {"activeDeadlineSeconds": 10,
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}}));
        let req = |scope: &str, op: &str, values: &[&str]| ScopedResourceSelectorRequirement {
            scope_name: scope.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        };
        let cases = [
            (req("BestEffort", "Exists", &[]), true, false),
            (req("NotBestEffort", "Exists", &[]), false, true),
            (req("Terminating", "Exists", &[]), false, true),
            (req("NotTerminating", "Exists", &[]), true, false),
            (req("PriorityClass", "In", &["high"]), true, false),
            (req("PriorityClass", "NotIn", &["high"]), false, true),
            (req("PriorityClass", "Exists", &[]), true, false),
            (req("PriorityClass", "DoesNotExist", &[]), false, true),
            (
                req("CrossNamespacePodAffinity", "Exists", &[]),
                false,
                false,
            ),
        ];
        for (r, a, b) in cases {
            assert_eq!(matches_scope(&best_effort, &r), a, "{r:?} best effort");
            assert_eq!(matches_scope(&burstable, &r), b, "{r:?} burstable");
        }
    }
}
