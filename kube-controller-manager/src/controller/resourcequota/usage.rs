//! A quota's `status.used`: what the objects of its namespace use of each resource in its
//! `spec.hard`, as upstream's `quota.CalculateUsage` with the pod, service, claim and object
//! count evaluators.

use super::pods;
use api_types::resource::{Quantity, ResourceList};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, Pod, ResourceQuota, ScopedResourceSelectorRequirement, Service,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Core resources that also have a bare (pre-`count/`) quota name.
const LEGACY: &[&str] = &[
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

const CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The objects of one namespace the usage is measured from.
#[derive(Debug, Default)]
pub struct Contents {
    pub pods: Vec<Arc<Pod>>,
    pub services: Vec<Arc<Service>>,
    pub claims: Vec<Arc<PersistentVolumeClaim>>,
    /// Object counts by quota count name (`count/configmaps`, `count/widgets.example.com`).
    pub counts: BTreeMap<String, usize>,
}

/// The quota's scopes (`spec.scopes` and `spec.scopeSelector`) as requirements.
pub fn scope_requirements(quota: &ResourceQuota) -> Vec<ScopedResourceSelectorRequirement> {
    let spec = quota.spec.as_ref();
    let mut reqs: Vec<ScopedResourceSelectorRequirement> = spec
        .and_then(|s| s.scopes.as_ref())
        .into_iter()
        .flatten()
        .map(|scope| ScopedResourceSelectorRequirement {
            scope_name: scope.clone(),
            operator: "Exists".into(),
            values: None,
        })
        .collect();
    reqs.extend(
        spec.and_then(|s| s.scope_selector.as_ref())
            .and_then(|s| s.match_expressions.clone())
            .into_iter()
            .flatten(),
    );
    reqs
}

/// The quota names of `spec.hard`.
pub fn hard_names(quota: &ResourceQuota) -> Vec<String> {
    quota
        .spec
        .as_ref()
        .and_then(|s| s.hard.as_ref())
        .map(|h| h.keys().cloned().collect())
        .unwrap_or_default()
}

/// The `count/<plural>[.<group>]` name of a hard resource counting objects, legacy names
/// included (`configmaps` is `count/configmaps`); `None` for anything else.
pub fn count_name(name: &str) -> Option<String> {
    if LEGACY.contains(&name) {
        return Some(format!("count/{name}"));
    }
    name.strip_prefix("count/")
        .filter(|rest| !rest.is_empty())
        .map(|_| name.to_string())
}

fn is_service_resource(name: &str) -> bool {
    matches!(
        name,
        "services" | "count/services" | "services.loadbalancers" | "services.nodeports"
    )
}

fn is_claim_resource(name: &str) -> bool {
    matches!(
        name,
        "persistentvolumeclaims" | "count/persistentvolumeclaims" | "requests.storage"
    ) || name.contains(CLASS_SUFFIX)
}

fn add(into: &mut ResourceList, name: &str, amount: Quantity) {
    if let Some(cur) = into.get_mut(name) {
        *cur = cur.add(&amount);
    }
}

/// The usage of every hard resource this controller can measure. A scoped quota only counts
/// pods (other objects match no scope, as upstream's evaluators). Resources nothing measures
/// (a `count/` of a resource `contents` lacks) are left out.
pub fn calculate(quota: &ResourceQuota, contents: &Contents, now: jiff::Timestamp) -> ResourceList {
    let hard = hard_names(quota);
    let scopes = scope_requirements(quota);
    let mut used = ResourceList::new();
    for name in &hard {
        let known = pods::is_pod_resource(name)
            || is_service_resource(name)
            || is_claim_resource(name)
            || count_name(name).is_some_and(|c| contents.counts.contains_key(&c));
        if known {
            used.insert(name.clone(), Quantity::ZERO);
        }
    }
    for pod in &contents.pods {
        if !scopes.iter().all(|s| pods::matches_scope(pod, s)) {
            continue;
        }
        for (name, amount) in pods::usage(pod, now) {
            add(&mut used, &name, amount);
        }
    }
    if !scopes.is_empty() {
        return used;
    }
    for service in &contents.services {
        for (name, amount) in service_usage(service) {
            add(&mut used, name, amount);
        }
    }
    for claim in &contents.claims {
        for (name, amount) in claim_usage(claim) {
            add(&mut used, &name, amount);
        }
    }
    for name in &hard {
        if let Some(count) = count_name(name).and_then(|c| contents.counts.get(&c))
            && let Ok(n) = i64::try_from(*count)
        {
            used.insert(name.clone(), Quantity::from_int(n));
        }
    }
    used
}

fn service_usage(service: &Service) -> Vec<(&'static str, Quantity)> {
    let one = Quantity::from_int(1);
    let mut usage = vec![("services", one), ("count/services", one)];
    let Some(spec) = service.spec.as_ref() else {
        return usage;
    };
    let ports = spec.ports.as_deref().unwrap_or_default();
    let node_ports = match spec.type_.as_deref() {
        Some("NodePort") => ports.len(),
        Some("LoadBalancer") => {
            usage.push(("services.loadbalancers", one));
            if spec.allocate_load_balancer_node_ports == Some(false) {
                ports
                    .iter()
                    .filter(|p| p.node_port.unwrap_or(0) != 0)
                    .count()
            } else {
                ports.len()
            }
        }
        _ => 0,
    };
    if let Ok(n) = i64::try_from(node_ports) {
        usage.push(("services.nodeports", Quantity::from_int(n)));
    }
    usage
}

fn claim_usage(claim: &PersistentVolumeClaim) -> Vec<(String, Quantity)> {
    let one = Quantity::from_int(1);
    let mut usage = vec![
        ("persistentvolumeclaims".to_string(), one),
        ("count/persistentvolumeclaims".to_string(), one),
    ];
    let requested = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| Quantity::parse(&q.0));
    // An expansion in progress is charged at the larger of asked and allocated.
    let allocated = claim
        .status
        .as_ref()
        .and_then(|s| s.allocated_resources.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| Quantity::parse(&q.0));
    let storage = requested.max(allocated);
    let class = claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.clone())
        .or_else(|| {
            claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class").cloned())
        })
        .filter(|c| !c.is_empty());
    if let Some(class) = &class {
        usage.push((format!("{class}{CLASS_SUFFIX}persistentvolumeclaims"), one));
    }
    if let Some(storage) = storage {
        usage.push(("requests.storage".into(), storage));
        if let Some(class) = &class {
            usage.push((format!("{class}{CLASS_SUFFIX}requests.storage"), storage));
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Arc<T> {
        Arc::new(serde_json::from_value(v).expect("object"))
    }

    fn canonical(list: &ResourceList) -> BTreeMap<String, String> {
        list.iter()
            .map(|(k, v)| (k.clone(), v.canonical()))
            .collect()
    }

    fn quota(hard: serde_json::Value, scopes: serde_json::Value) -> ResourceQuota {
        serde_json::from_value(
            json!({"metadata": {"name": "q"}, "spec": {"hard": hard, "scopes": scopes}}),
        )
        .expect("quota")
    }

    fn contents() -> Contents {
        Contents {
            pods: vec![
                from(
                    json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]}}),
                ),
                from(json!({"spec": {"containers": [{"name": "a"}]}})),
                from(
                    json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "2"}}}]},
                    "status": {"phase": "Failed"}}),
                ),
            ],
            services: vec![
                from(
                    json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}}),
                ),
                from(json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}})),
            ],
            claims: vec![from(json!({"spec": {"storageClassName": "gold",
                "resources": {"requests": {"storage": "1Gi"}}}}))],
            counts: BTreeMap::from([
                ("count/configmaps".to_string(), 3),
                ("count/widgets.example.com".to_string(), 2),
            ]),
        }
    }

    #[test]
    fn usage_of_each_kind_of_hard_resource() {
        let q = quota(
            json!({"pods": "10", "count/pods": "10", "requests.cpu": "4", "limits.memory": "1Gi",
                   "services": "5", "services.loadbalancers": "1", "services.nodeports": "9",
                   "persistentvolumeclaims": "3", "requests.storage": "10Gi",
                   "gold.storageclass.storage.k8s.io/requests.storage": "5Gi",
                   "configmaps": "10", "count/widgets.example.com": "4", "count/gadgets.example.com": "1"}),
            json!(null),
        );
        let want: BTreeMap<String, String> = [
            ("configmaps", "3"),
            ("count/pods", "3"),
            ("count/widgets.example.com", "2"),
            ("gold.storageclass.storage.k8s.io/requests.storage", "1Gi"),
            ("limits.memory", "0"),
            ("persistentvolumeclaims", "1"),
            ("pods", "2"),
            ("requests.cpu", "500m"),
            ("requests.storage", "1Gi"),
            ("services", "2"),
            ("services.loadbalancers", "1"),
            ("services.nodeports", "2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            canonical(&calculate(&q, &contents(), jiff::Timestamp::now())),
            want
        );
    }

    #[test]
    fn scoped_quota_counts_only_matching_pods() {
        let q = quota(
            json!({"pods": "10", "configmaps": "5"}),
            json!(["BestEffort"]),
        );
        let got = canonical(&calculate(&q, &contents(), jiff::Timestamp::now()));
        // Only the live pod without requests is best effort.
        assert_eq!(got.get("pods").map(String::as_str), Some("1"));
        assert_eq!(got.get("configmaps").map(String::as_str), Some("0"));
    }
}
