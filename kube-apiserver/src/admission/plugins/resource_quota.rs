//! `ResourceQuota`: a write that would take a namespace past the hard limits of its
//! ResourceQuota objects is refused, and an admitted one is charged to their `status.used`
//! right away, so concurrent writes see each other's usage before the quota controller
//! recounts, as upstream's `plugin/pkg/admission/resourcequota`.
//!
//! Only `status.hard` counts: a quota the controller has not processed yet limits nothing,
//! and one whose `status.used` lacks a tracked resource refuses writes that would use it
//! (`status unknown`), as upstream.

use super::quantity::{Quantity, ResourceList, resource_list, to_json};
use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::registry::{ObjectLookup, Part, RegistryError, meta};
use crate::rest::state::ApiState;
use api_types::registry::ResourceInfo;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub struct ResourceQuota;

/// Resources whose usage upstream never quotas.
const IGNORED: &[(&str, &str)] = &[("", "events")];

/// Core resources that also have a bare (pre-`count/`) quota name.
const LEGACY_COUNTED: &[&str] = &[
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Compute resources a quota can only count when every container states them.
const MUST_SPECIFY: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// How usage of one resource is measured, as upstream's quota evaluators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    Pods,
    Services,
    Claims,
    /// Any other resource: one object is one `count/<plural>[.<group>]` (and one of its
    /// legacy name, for the few core resources that have one).
    Count {
        name: String,
        legacy: Option<&'static str>,
    },
}

/// The quota name counting objects of `plural` in `group`.
pub fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

impl Evaluator {
    /// The evaluator of a resource; None for those quota ignores.
    pub fn for_resource(info: &ResourceInfo) -> Option<Self> {
        if IGNORED.contains(&(info.group, info.plural)) {
            return None;
        }
        Some(match (info.group, info.plural) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::Claims,
            (group, plural) => Evaluator::Count {
                name: count_name(group, plural),
                legacy: LEGACY_COUNTED
                    .iter()
                    .find(|l| group.is_empty() && **l == plural)
                    .copied(),
            },
        })
    }

    /// Whether a write can change usage: creates always; updates only where the spec can
    /// grow what is counted (service type and ports, claim size) or a pod moves between the
    /// Terminating and NotTerminating scopes.
    pub fn handles(&self, operation: Operation, object: &Value, old: Option<&Value>) -> bool {
        match (operation, self) {
            (Operation::Create, _) => true,
            (Operation::Update, Evaluator::Services | Evaluator::Claims) => true,
            (Operation::Update, Evaluator::Pods) => {
                old.is_some_and(|old| is_terminating(old) != is_terminating(object))
            }
            _ => false,
        }
    }

    /// Whether a quota resource name is one this evaluator measures.
    pub fn tracks(&self, resource: &str) -> bool {
        match self {
            Evaluator::Pods => {
                POD_RESOURCES.contains(&resource)
                    || resource.starts_with("hugepages-")
                    || resource.starts_with("requests.hugepages-")
                    // Extended resources cannot be overcommitted: only their requests count.
                    || resource.strip_prefix("requests.").is_some_and(is_extended)
            }
            Evaluator::Services => matches!(
                resource,
                "count/services" | "services" | "services.loadbalancers" | "services.nodeports"
            ),
            Evaluator::Claims => {
                matches!(
                    resource,
                    "count/persistentvolumeclaims" | "persistentvolumeclaims" | "requests.storage"
                ) || resource
                    .split_once(STORAGE_CLASS_SUFFIX)
                    .is_some_and(|(_, r)| r == "persistentvolumeclaims" || r == "requests.storage")
            }
            Evaluator::Count { name, legacy } => resource == name || Some(resource) == *legacy,
        }
    }

    /// The usage one object represents.
    pub fn usage(&self, object: &Value) -> ResourceList {
        let one = Quantity::from_int(1);
        let mut usage = ResourceList::new();
        match self {
            Evaluator::Pods => {
                usage.insert("count/pods".into(), one);
                // Pods that have finished hold no compute resources; only `count/pods`
                // counts every pod in storage.
                if !is_terminal(object) {
                    let mut requests = super::limit_ranger::pod_total(object, "requests");
                    let mut limits = super::limit_ranger::pod_total(object, "limits");
                    for (k, v) in resource_list(&object["spec"]["overhead"]) {
                        let r = requests.get(&k).map_or(v, |r| r.add(&v));
                        requests.insert(k.clone(), r);
                        if let Some(l) = limits.get(&k).map(|l| l.add(&v)) {
                            limits.insert(k, l);
                        }
                    }
                    add_all(&mut usage, &compute_usage(&requests, &limits));
                }
            }
            Evaluator::Services => {
                usage.insert("count/services".into(), one);
                usage.insert("services".into(), one);
                let spec = &object["spec"];
                let ports = spec["ports"].as_array().map_or(&[][..], Vec::as_slice);
                let (balancers, node_ports) = match spec["type"].as_str() {
                    Some("NodePort") => (0, ports.len()),
                    Some("LoadBalancer") => {
                        // Without node port allocation only the ports that name one count.
                        let node_ports = if spec["allocateLoadBalancerNodePorts"] == false {
                            ports
                                .iter()
                                .filter(|p| p["nodePort"].as_i64().unwrap_or(0) != 0)
                                .count()
                        } else {
                            ports.len()
                        };
                        (1, node_ports)
                    }
                    _ => (0, 0),
                };
                usage.insert(
                    "services.loadbalancers".into(),
                    Quantity::from_int(balancers),
                );
                usage.insert(
                    "services.nodeports".into(),
                    Quantity::from_int(node_ports as i64),
                );
            }
            Evaluator::Claims => {
                usage.insert("count/persistentvolumeclaims".into(), one);
                usage.insert("persistentvolumeclaims".into(), one);
                let requested =
                    Quantity::from_json(&object["spec"]["resources"]["requests"]["storage"]);
                let allocated =
                    Quantity::from_json(&object["status"]["allocatedResources"]["storage"]);
                // A claim being expanded holds the larger of what it asks and what it got.
                let storage = match (requested, allocated) {
                    (Some(r), Some(a)) => Some(r.max(a)),
                    (r, a) => r.or(a),
                };
                if let Some(storage) = storage {
                    usage.insert("requests.storage".into(), storage);
                }
                let class = object["spec"]["storageClassName"]
                    .as_str()
                    .or_else(|| {
                        object["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"]
                            .as_str()
                    })
                    .unwrap_or_default();
                if !class.is_empty() {
                    usage.insert(
                        format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                        one,
                    );
                    if let Some(storage) = storage {
                        usage.insert(
                            format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                            storage,
                        );
                    }
                }
            }
            Evaluator::Count { name, legacy } => {
                usage.insert(name.clone(), one);
                if let Some(legacy) = legacy {
                    usage.insert((*legacy).to_string(), one);
                }
            }
        }
        usage
    }

    /// Whether one scope requirement of a quota selects the object: only pods have scopes.
    fn scope_matches(&self, scope: &ScopeRequirement, object: &Value) -> bool {
        if *self != Evaluator::Pods {
            return false;
        }
        match scope.scope.as_str() {
            "Terminating" => is_terminating(object),
            "NotTerminating" => !is_terminating(object),
            "BestEffort" => is_best_effort(object),
            "NotBestEffort" => !is_best_effort(object),
            "PriorityClass" => {
                let class = object["spec"]["priorityClassName"]
                    .as_str()
                    .unwrap_or_default();
                // The class is matched as a label that a pod without one does not have.
                let listed = !class.is_empty() && scope.values.iter().any(|v| v == class);
                match scope.operator.as_str() {
                    "Exists" => !class.is_empty(),
                    "In" => listed,
                    "NotIn" => !listed,
                    "DoesNotExist" => class.is_empty(),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(object),
            _ => false,
        }
    }

    /// Upstream's backward-compatible rule: a quota on cpu or memory makes every container
    /// state that resource.
    pub fn constraints(&self, tracked: &[String], object: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: BTreeSet<&str> = tracked
            .iter()
            .map(String::as_str)
            .filter(|r| MUST_SPECIFY.contains(r))
            .collect();
        if required.is_empty() {
            return Ok(());
        }
        let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for field in ["containers", "initContainers"] {
            for c in object["spec"][field].as_array().into_iter().flatten() {
                let resources = &c["resources"];
                let stated = compute_usage(
                    &resource_list(&resources["requests"]),
                    &resource_list(&resources["limits"]),
                );
                let name = c["name"].as_str().unwrap_or_default();
                for r in &required {
                    if !stated.contains_key(*r) {
                        missing.entry(r).or_default().insert(name);
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| {
                let names: Vec<&str> = names.iter().copied().collect();
                format!("{r} for: {}", names.join(","))
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// A resource name outside the `kubernetes.io` domain that a vendor advertises (GPUs...).
fn is_extended(resource: &str) -> bool {
    resource.contains('/')
        && !resource.contains("kubernetes.io/")
        && !resource.starts_with("requests.")
}

/// The compute part of usage, from what is requested and limited.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("pods".into(), Quantity::from_int(1));
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(r) = requests.get(resource) {
            usage.insert(resource.into(), *r);
            usage.insert(format!("requests.{resource}"), *r);
        }
        if let Some(l) = limits.get(resource) {
            usage.insert(format!("limits.{resource}"), *l);
        }
    }
    for (k, v) in requests {
        if k.starts_with("hugepages-") {
            usage.insert(k.clone(), *v);
            usage.insert(format!("requests.{k}"), *v);
        }
        if is_extended(k) {
            usage.insert(format!("requests.{k}"), *v);
        }
    }
    usage
}

fn add_all(into: &mut ResourceList, list: &ResourceList) {
    for (k, v) in list {
        let sum = into.get(k).map_or(*v, |t| t.add(v));
        into.insert(k.clone(), sum);
    }
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

fn is_terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0)
}

fn is_best_effort(pod: &Value) -> bool {
    let asks = |c: &Value| {
        ["requests", "limits"].iter().any(|which| {
            let list = resource_list(&c["resources"][*which]);
            ["cpu", "memory"]
                .iter()
                .any(|r| list.get(*r).is_some_and(|q| q > &Quantity::ZERO))
        })
    };
    !["containers", "initContainers"]
        .iter()
        .flat_map(|f| pod["spec"][*f].as_array().into_iter().flatten())
        .any(asks)
}

fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let affinity = &pod["spec"]["affinity"];
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let a = &affinity[*kind];
        let required = a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten();
        let preferred = a["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| &w["podAffinityTerm"]);
        required.chain(preferred).any(|term| {
            term["namespaces"].as_array().is_some_and(|n| !n.is_empty())
                || !term["namespaceSelector"].is_null()
        })
    })
}

/// One scope a quota is restricted to (`spec.scopes` are `Exists` requirements).
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeRequirement {
    pub scope: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// What admission needs of a ResourceQuota object.
#[derive(Debug, Clone)]
pub struct QuotaView {
    pub name: String,
    pub hard: ResourceList,
    pub used: ResourceList,
    pub scopes: Vec<ScopeRequirement>,
}

impl QuotaView {
    pub fn from_json(quota: &Value) -> Self {
        let spec = &quota["spec"];
        let mut scopes: Vec<ScopeRequirement> = spec["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|s| ScopeRequirement {
                scope: s.to_string(),
                operator: "Exists".into(),
                values: Vec::new(),
            })
            .collect();
        for req in spec["scopeSelector"]["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            scopes.push(ScopeRequirement {
                scope: req["scopeName"].as_str().unwrap_or_default().into(),
                operator: req["operator"].as_str().unwrap_or_default().into(),
                values: req["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect(),
            });
        }
        QuotaView {
            name: meta::meta_str(quota, "name")
                .unwrap_or_default()
                .to_string(),
            hard: resource_list(&quota["status"]["hard"]),
            used: resource_list(&quota["status"]["used"]),
            scopes,
        }
    }

    /// The resources of the quota's hard limits the evaluator measures.
    fn tracked(&self, evaluator: &Evaluator) -> Vec<String> {
        self.hard
            .keys()
            .filter(|r| evaluator.tracks(r))
            .cloned()
            .collect()
    }

    /// Whether the quota applies to the object: it tracks something of its kind, and every
    /// scope selects it.
    fn matches(&self, evaluator: &Evaluator, object: &Value) -> bool {
        !self.tracked(evaluator).is_empty()
            && self
                .scopes
                .iter()
                .all(|s| evaluator.scope_matches(s, object))
    }

    /// The usage after adding `requested` (already limited to the quota's resources), or
    /// upstream's `exceeded quota` reason.
    pub fn charge(&self, requested: &ResourceList) -> Result<ResourceList, String> {
        let mut used = self.used.clone();
        for (k, v) in requested {
            let sum = used.get(k).map_or(*v, |u| u.add(v));
            used.insert(k.clone(), sum);
        }
        let exceeded: Vec<&String> = requested
            .keys()
            .filter(|k| self.hard.get(*k).is_some_and(|h| used[*k] > *h))
            .collect();
        if exceeded.is_empty() {
            return Ok(used);
        }
        let print = |list: &ResourceList| {
            exceeded
                .iter()
                .filter_map(|k| list.get(*k).map(|q| format!("{k}={q}")))
                .collect::<Vec<_>>()
                .join(",")
        };
        Err(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            self.name,
            print(requested),
            print(&self.used),
            print(&self.hard)
        ))
    }
}

/// What an admitted write costs each quota that applies, in the order the quotas were
/// given; or the reason the write is refused.
pub fn assess(
    evaluator: &Evaluator,
    quotas: &[QuotaView],
    object: &Value,
    old: Option<&Value>,
) -> Result<Vec<(usize, ResourceList)>, String> {
    let mut applicable = Vec::new();
    for (i, quota) in quotas.iter().enumerate() {
        if !quota.matches(evaluator, object) {
            continue;
        }
        let tracked = quota.tracked(evaluator);
        evaluator
            .constraints(&tracked, object)
            .map_err(|e| format!("failed quota: {}: {e}", quota.name))?;
        let unknown = tracked.iter().any(|r| !quota.used.contains_key(r));
        if unknown {
            return Err(format!(
                "status unknown for quota: {}, resources: {}",
                quota.name,
                tracked.join(",")
            ));
        }
        applicable.push(i);
    }
    if applicable.is_empty() {
        return Ok(Vec::new());
    }
    let mut delta = evaluator.usage(object);
    let negative: Vec<&str> = delta
        .iter()
        .filter(|(_, q)| q.is_negative())
        .map(|(k, _)| k.as_str())
        .collect();
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    // An update is charged only for what it adds; without a resourceVersion the old object
    // is not a stored one (create on update), so the whole usage is charged.
    if let Some(old) =
        old.filter(|o| meta::meta_str(o, "resourceVersion").is_some_and(|rv| !rv.is_empty()))
    {
        let before = evaluator.usage(old);
        for (k, v) in delta.iter_mut() {
            if let Some(b) = before.get(k) {
                *v = if *v > *b { v.sub(b) } else { Quantity::ZERO };
            }
        }
    }
    delta.retain(|_, q| !q.is_zero());
    if delta.is_empty() {
        return Ok(Vec::new());
    }
    let mut charges = Vec::new();
    for i in applicable {
        let quota = &quotas[i];
        let requested: ResourceList = delta
            .iter()
            .filter(|(k, _)| quota.hard.contains_key(*k))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        quota.charge(&requested)?;
        if !requested.is_empty() {
            charges.push((i, requested));
        }
    }
    Ok(charges)
}

/// The usage a quota gives back when `before` no longer exists as it was (`after`: what
/// replaced it, if anything), limited to what the quota tracks and never below zero.
pub fn released(
    evaluator: &Evaluator,
    quota: &QuotaView,
    before: &Value,
    after: Option<&Value>,
) -> ResourceList {
    if !quota.matches(evaluator, before) {
        return ResourceList::new();
    }
    let now = after.map(|a| evaluator.usage(a)).unwrap_or_default();
    evaluator
        .usage(before)
        .into_iter()
        .filter(|(k, _)| quota.hard.contains_key(k))
        .filter_map(|(k, v)| {
            let left = now.get(&k).copied().unwrap_or(Quantity::ZERO);
            (v > left).then(|| (k, v.sub(&left)))
        })
        .collect()
}

fn quotas_of(state: &ApiState, namespace: &str) -> Vec<QuotaView> {
    let mut quotas: Vec<QuotaView> = state
        .list("", "resourcequotas", Some(namespace), &|_| true)
        .iter()
        .map(|q| QuotaView::from_json(q))
        .collect();
    quotas.sort_by(|a, b| a.name.cmp(&b.name));
    quotas
}

/// Writes `status.used` of one quota: `change` maps the fresh quota to its new usage, or
/// refuses with a reason.
async fn write_usage(
    state: &ApiState,
    namespace: &str,
    name: &str,
    change: impl Fn(&QuotaView) -> Result<ResourceList, String>,
) -> Result<(), Result<String, RegistryError>> {
    let Some(store) = state.store("", "v1", "resourcequotas") else {
        return Ok(());
    };
    let mut refusal = None;
    let result = store
        .guaranteed_update(Some(namespace), name, Part::Status, |old| {
            let used = change(&QuotaView::from_json(old)).map_err(|reason| {
                refusal = Some(reason.clone());
                RegistryError::BadRequest(reason)
            })?;
            let mut new = old.clone();
            new["status"]["used"] = to_json(&used);
            Ok(new)
        })
        .await;
    match (result, refusal) {
        (Ok(_), _) => Ok(()),
        (Err(_), Some(reason)) => Err(Ok(reason)),
        // The quota went away meanwhile: nothing left to charge.
        (Err(RegistryError::NotFound { .. }), None) => Ok(()),
        (Err(e), None) => Err(Err(e)),
    }
}

/// Gives back usage with best effort: the quota controller recounts in any case.
async fn release(state: &ApiState, namespace: &str, name: &str, amount: &ResourceList) {
    let result = write_usage(state, namespace, name, |q| {
        let mut used = q.used.clone();
        for (k, v) in amount {
            if let Some(u) = used.get_mut(k) {
                *u = if *u > *v { u.sub(v) } else { Quantity::ZERO };
            }
        }
        Ok(used)
    })
    .await;
    if let Err(e) = result {
        tracing::warn!(
            quota = name,
            namespace,
            "releasing quota usage failed: {e:?}"
        );
    }
}

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.namespace.is_empty() {
            return Ok(());
        }
        let Some(evaluator) = Evaluator::for_resource(attrs.resource) else {
            return Ok(());
        };
        if !attrs.subresource.is_empty() || attrs.operation == Operation::Delete {
            // Upstream leaves giving back usage to the quota controller's recount; we give
            // back what a deleted object or a pod that reached its end held at once, so
            // quota frees up before that controller runs.
            return self
                .release_usage(attrs, &evaluator, object, old, state)
                .await;
        }
        let Some(object) = object else {
            return Ok(());
        };
        if !evaluator.handles(attrs.operation, object, old) {
            return Ok(());
        }
        let quotas = quotas_of(state, &attrs.namespace);
        if quotas.is_empty() {
            return Ok(());
        }
        let name = object_name(attrs, Some(object)).to_string();
        let refuse = |reason: &str| forbidden(attrs, &name, reason);
        let charges = assess(&evaluator, &quotas, object, old).map_err(|r| refuse(&r))?;
        if attrs.dry_run {
            return Ok(());
        }
        let mut charged: Vec<(&str, &ResourceList)> = Vec::new();
        for (i, requested) in &charges {
            let quota = quotas[*i].name.as_str();
            let outcome = write_usage(state, &attrs.namespace, quota, |fresh| {
                fresh.charge(requested)
            })
            .await;
            if let Err(err) = outcome {
                // Undo the charges already made, so a refused write costs nothing.
                for (done, amount) in &charged {
                    release(state, &attrs.namespace, done, amount).await;
                }
                return Err(match err {
                    Ok(reason) => refuse(&reason),
                    Err(e) => ApiError::from(e),
                });
            }
            charged.push((quota, requested));
        }
        Ok(())
    }
}

impl ResourceQuota {
    /// Frees the usage of a deleted object (the first delete: a graceful one leaves the
    /// object with a deletionTimestamp, and the later final delete must not free it twice)
    /// and of a pod whose status turns terminal.
    async fn release_usage(
        &self,
        attrs: &Attributes,
        evaluator: &Evaluator,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        let Some(old) = old else {
            return Ok(());
        };
        let after = match (attrs.operation, attrs.subresource.as_str()) {
            (Operation::Delete, "") if !meta::is_terminating(old) => None,
            (Operation::Update, "status")
                if *evaluator == Evaluator::Pods
                    && !is_terminal(old)
                    && object.is_some_and(is_terminal) =>
            {
                object
            }
            _ => return Ok(()),
        };
        if attrs.dry_run {
            return Ok(());
        }
        let deleting_quota = attrs
            .is("", "resourcequotas")
            .then_some(attrs.name.as_str());
        for quota in quotas_of(state, &attrs.namespace) {
            // A quota being deleted needs no usage, and writing it would make the delete
            // that is running this check lose its compare-and-swap.
            if deleting_quota == Some(quota.name.as_str()) {
                continue;
            }
            let amount = released(evaluator, &quota, old, after);
            if !amount.is_empty() {
                release(state, &attrs.namespace, &quota.name, &amount).await;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota(name: &str, hard: Value, used: Value) -> QuotaView {
        QuotaView::from_json(&json!({
            "metadata": {"name": name},
            "spec": {"hard": hard},
            "status": {"hard": hard, "used": used},
        }))
    }

    fn pod(resources: Value) -> Value {
        json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": resources}]},
        })
    }

    fn list(entries: &[(&str, &str)]) -> ResourceList {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn pod_usage_counts_compute_of_live_pods_only() {
        let mut p = pod(json!({
            "requests": {"cpu": "100m", "memory": "64Mi", "example.com/gpu": "1"},
            "limits": {"cpu": "1", "memory": "128Mi"},
        }));
        p["spec"]["overhead"] = json!({"cpu": "10m"});
        let usage = Evaluator::Pods.usage(&p);
        let shown: Vec<String> = usage.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            shown,
            [
                "count/pods=1",
                "cpu=110m",
                "limits.cpu=1010m",
                "limits.memory=128Mi",
                "memory=64Mi",
                "pods=1",
                "requests.cpu=110m",
                "requests.example.com/gpu=1",
                "requests.memory=64Mi",
            ]
        );
        p["status"] = json!({"phase": "Succeeded"});
        assert_eq!(Evaluator::Pods.usage(&p), list(&[("count/pods", "1")]));
    }

    #[test]
    fn which_quota_names_pods_answer_to() {
        for name in [
            "pods",
            "limits.memory",
            "hugepages-2Mi",
            "requests.hugepages-1Gi",
            "requests.example.com/gpu",
        ] {
            assert!(Evaluator::Pods.tracks(name), "{name}");
        }
        for name in [
            "example.com/gpu",
            "requests.kubernetes.io/x",
            "services",
            "requests.storage",
        ] {
            assert!(!Evaluator::Pods.tracks(name), "{name}");
        }
        assert!(Evaluator::Claims.tracks("gold.storageclass.storage.k8s.io/requests.storage"));
        assert!(!Evaluator::Claims.tracks("gold.storageclass.storage.k8s.io/pods"));
    }

    #[test]
    fn other_kinds_usage() {
        let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            Evaluator::Services.usage(&svc),
            list(&[
                ("count/services", "1"),
                ("services", "1"),
                ("services.loadbalancers", "1"),
                ("services.nodeports", "2"),
            ])
        );
        let pvc = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}});
        let usage = Evaluator::Claims.usage(&pvc);
        assert_eq!(usage["requests.storage"].canonical(), "1Gi");
        assert_eq!(
            usage["fast.storageclass.storage.k8s.io/requests.storage"].canonical(),
            "1Gi"
        );
        let info = api_types::registry::by_group_resource("", "configmaps").unwrap();
        let ev = Evaluator::for_resource(info).unwrap();
        assert_eq!(
            ev.usage(&json!({})),
            list(&[("configmaps", "1"), ("count/configmaps", "1")])
        );
        let info = api_types::registry::by_group_resource("apps", "deployments").unwrap();
        let ev = Evaluator::for_resource(info).unwrap();
        assert_eq!(
            ev.usage(&json!({})),
            list(&[("count/deployments.apps", "1")])
        );
        assert!(!ev.handles(Operation::Update, &json!({}), Some(&json!({}))));
        let deadline = json!({"spec": {"activeDeadlineSeconds": 30}});
        assert!(Evaluator::Pods.handles(Operation::Update, &deadline, Some(&json!({}))));
        assert!(!Evaluator::Pods.handles(Operation::Update, &deadline, Some(&deadline)));
        let events = api_types::registry::by_group_resource("", "events").unwrap();
        assert!(Evaluator::for_resource(events).is_none());
    }

    #[test]
    fn exceeding_a_quota_is_refused_with_upstream_message() {
        let q = quota(
            "compute",
            json!({"pods": "2", "requests.memory": "1Gi", "configmaps": "5"}),
            json!({"pods": "2", "requests.memory": "512Mi", "configmaps": "0"}),
        );
        let p = pod(json!({"requests": {"memory": "256Mi"}}));
        assert_eq!(
            assess(&Evaluator::Pods, std::slice::from_ref(&q), &p, None).unwrap_err(),
            "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
        );
        let p = pod(json!({"requests": {"memory": "1Gi"}}));
        let mut roomy = q.clone();
        roomy.used.insert("pods".into(), Quantity::ZERO);
        assert_eq!(
            assess(&Evaluator::Pods, &[roomy.clone()], &p, None).unwrap_err(),
            "exceeded quota: compute, requested: requests.memory=1Gi, used: requests.memory=512Mi, limited: requests.memory=1Gi"
        );
        let p = pod(json!({"requests": {"memory": "512Mi"}}));
        let charges = assess(&Evaluator::Pods, &[roomy.clone()], &p, None).unwrap();
        assert_eq!(
            charges,
            vec![(0, list(&[("pods", "1"), ("requests.memory", "512Mi")]))]
        );
        let used = roomy.charge(&charges[0].1).unwrap();
        assert_eq!(used["requests.memory"].canonical(), "1Gi");
        assert_eq!(used["configmaps"].canonical(), "0");
    }

    #[test]
    fn a_quota_the_object_adds_nothing_to_is_not_written() {
        let gpus = quota(
            "gpu",
            json!({"requests.example.com/gpu": "1"}),
            json!({"requests.example.com/gpu": "1"}),
        );
        let charges = assess(&Evaluator::Pods, &[gpus], &pod(json!({})), None).unwrap();
        assert!(charges.is_empty());
    }

    #[test]
    fn compute_quota_needs_every_container_to_state_it() {
        let q = quota(
            "q",
            json!({"limits.cpu": "2", "requests.memory": "1Gi"}),
            json!({"limits.cpu": "0", "requests.memory": "0"}),
        );
        let mut p = pod(json!({"requests": {"memory": "1Mi"}}));
        p["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "b"}));
        assert_eq!(
            assess(&Evaluator::Pods, &[q], &p, None).unwrap_err(),
            "failed quota: q: must specify limits.cpu for: b,c; requests.memory for: b"
        );
    }

    #[test]
    fn unprocessed_status_and_scopes() {
        let unknown = quota("q", json!({"pods": "3"}), json!({}));
        assert_eq!(
            assess(&Evaluator::Pods, &[unknown], &pod(json!({})), None).unwrap_err(),
            "status unknown for quota: q, resources: pods"
        );
        // No status.hard yet: the controller has not seen the quota, which limits nothing.
        let fresh = QuotaView::from_json(
            &json!({"metadata": {"name": "f"}, "spec": {"hard": {"pods": "0"}}}),
        );
        assert!(
            assess(&Evaluator::Pods, &[fresh], &pod(json!({})), None)
                .unwrap()
                .is_empty()
        );

        let mut scoped = quota("be", json!({"pods": "0"}), json!({"pods": "0"}));
        scoped.scopes.push(ScopeRequirement {
            scope: "BestEffort".into(),
            operator: "Exists".into(),
            values: vec![],
        });
        let guaranteed = pod(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}));
        assert!(
            assess(&Evaluator::Pods, &[scoped.clone()], &guaranteed, None)
                .unwrap()
                .is_empty()
        );
        assert!(assess(&Evaluator::Pods, &[scoped.clone()], &pod(json!({})), None).is_err());
        // A scoped quota never applies to other kinds.
        let svc = json!({"spec": {}});
        let mut svc_quota = quota("s", json!({"services": "0"}), json!({"services": "0"}));
        svc_quota.scopes = scoped.scopes.clone();
        assert!(
            assess(&Evaluator::Services, &[svc_quota], &svc, None)
                .unwrap()
                .is_empty()
        );

        let mut by_class = quota("pc", json!({"pods": "0"}), json!({"pods": "0"}));
        by_class.scopes.push(ScopeRequirement {
            scope: "PriorityClass".into(),
            operator: "In".into(),
            values: vec!["high".into()],
        });
        let mut high = pod(json!({}));
        high["spec"]["priorityClassName"] = json!("high");
        assert!(assess(&Evaluator::Pods, &[by_class.clone()], &high, None).is_err());
        let mut not_in = by_class.clone();
        not_in.scopes[0].operator = "NotIn".into();
        assert!(
            assess(&Evaluator::Pods, &[not_in.clone()], &high, None)
                .unwrap()
                .is_empty()
        );
        assert!(assess(&Evaluator::Pods, &[not_in], &pod(json!({})), None).is_err());
        assert!(
            assess(&Evaluator::Pods, &[by_class], &pod(json!({})), None)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn updates_pay_only_for_growth_and_deletes_give_back() {
        let q = quota(
            "q",
            json!({"services.nodeports": "3", "services": "10"}),
            json!({"services.nodeports": "2", "services": "1"}),
        );
        let old = json!({"metadata": {"resourceVersion": "5"}, "spec": {"type": "NodePort", "ports": [{"port": 1}]}});
        let new = json!({"metadata": {"resourceVersion": "5"}, "spec": {"type": "NodePort", "ports": [{"port": 1}, {"port": 2}]}});
        assert_eq!(
            assess(
                &Evaluator::Services,
                std::slice::from_ref(&q),
                &new,
                Some(&old)
            )
            .unwrap(),
            vec![(0, list(&[("services.nodeports", "1")]))]
        );
        let newer =
            json!({"spec": {"type": "NodePort", "ports": [{"port": 1}, {"port": 2}, {"port": 3}]}});
        assert_eq!(
            assess(
                &Evaluator::Services,
                std::slice::from_ref(&q),
                &newer,
                Some(&old)
            )
            .unwrap_err(),
            "exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=2, limited: services.nodeports=3"
        );
        assert_eq!(
            released(&Evaluator::Services, &q, &old, None),
            list(&[("services", "1"), ("services.nodeports", "1")])
        );
        let pq = quota(
            "p",
            json!({"pods": "5", "count/pods": "5"}),
            json!({"pods": "1", "count/pods": "1"}),
        );
        let running = pod(json!({}));
        let mut done = running.clone();
        done["status"] = json!({"phase": "Failed"});
        assert_eq!(
            released(&Evaluator::Pods, &pq, &running, Some(&done)),
            list(&[("pods", "1")])
        );
    }
}

#[cfg(test)]
pub(super) mod through_the_store {
    use super::*;
    use crate::admission::{Chain, RequestAdmission};
    use crate::registry::{DeleteOptions, ResourceStore};
    use crate::test_support::test_state;
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;

    fn pods_store(state: &Arc<ApiState>, operation: Operation, name: &str) -> ResourceStore {
        store_with(state, Box::new(ResourceQuota), "pods", operation, name)
    }

    /// The store of core `plural` running only `plugin` for a write of `name` in `ns`.
    pub(in crate::admission::plugins) fn store_with(
        state: &Arc<ApiState>,
        plugin: Box<dyn Plugin>,
        plural: &str,
        operation: Operation,
        name: &str,
    ) -> ResourceStore {
        let attrs = Attributes {
            operation,
            resource: api_types::registry::by_group_resource("", plural).expect("resource"),
            subresource: String::new(),
            namespace: "ns".into(),
            name: name.into(),
            user: Default::default(),
            dry_run: false,
            warnings: Default::default(),
        };
        let admission = RequestAdmission {
            chain: Arc::new(Chain::of(vec![plugin])),
            attrs,
            state: state.clone(),
        };
        state
            .store("", "v1", plural)
            .expect("store")
            .with_admission(Arc::new(admission))
    }

    async fn used_pods(state: &ApiState) -> Value {
        let quota = state
            .store("", "v1", "resourcequotas")
            .unwrap()
            .get(Some("ns"), "q")
            .await
            .unwrap();
        quota["status"]["used"]["pods"].clone()
    }

    /// Waits until the watch cache shows the quota with `used` pods.
    async fn cached(state: &ApiState, used: &str) {
        for _ in 0..500 {
            let quotas = state.list("", "resourcequotas", Some("ns"), &|_| true);
            if quotas.iter().any(|q| q["status"]["used"]["pods"] == used) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the cache never showed pods={used}");
    }

    #[tokio::test]
    async fn pods_are_charged_refused_and_released() {
        let test = test_state().await;
        let state = test.state.clone();

        let quotas = state.store("", "v1", "resourcequotas").unwrap();
        quotas
            .create(
                Some("ns"),
                json!({"apiVersion": "v1", "kind": "ResourceQuota",
                       "metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}}),
            )
            .await
            .expect("quota");
        quotas
            .guaranteed_update(Some("ns"), "q", Part::Status, |old| {
                let mut new = old.clone();
                new["status"] = json!({"hard": {"pods": "1"}, "used": {"pods": "0"}});
                Ok(new)
            })
            .await
            .expect("quota status");
        cached(&state, "0").await;

        let pod = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        };
        pods_store(&state, Operation::Create, "a")
            .create(Some("ns"), pod("a"))
            .await
            .expect("the first pod fits");
        assert_eq!(used_pods(&state).await, "1");
        cached(&state, "1").await;

        let refused = pods_store(&state, Operation::Create, "b")
            .create(Some("ns"), pod("b"))
            .await
            .expect_err("the second pod exceeds the quota");
        let refused = ApiError::from(refused);
        assert_eq!(refused.code(), 403);
        assert_eq!(
            refused.message(),
            "pods \"b\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
        );
        assert_eq!(used_pods(&state).await, "1");

        pods_store(&state, Operation::Delete, "a")
            .delete(Some("ns"), "a", &DeleteOptions::default())
            .await
            .expect("delete");
        assert_eq!(used_pods(&state).await, "0");
    }
}
