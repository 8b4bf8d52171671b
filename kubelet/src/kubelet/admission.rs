//! Admission of a pod on first sight, as upstream kubelet's admit handlers: the eviction
//! manager's (no BestEffort pod under MemoryPressure, no pod but critical ones under any other
//! pressure), then the predicates: the node's allocatable against the requests of the pods
//! already admitted, the node selector and required node affinity, and NoExecute taints the
//! pod does not tolerate.

use api_types::resource::Quantity;
use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why a pod was rejected: the pod's `status.reason` and `status.message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
}

fn quantity(q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> i128 {
    q.and_then(|q| Quantity::parse(&q.0))
        .map(|q| q.milli_value())
        .unwrap_or(0)
}

fn container_request(c: &Container, name: &str) -> i128 {
    let res = c.resources.as_ref();
    let req = res
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(name));
    // An unset request defaults to the limit, as the apiserver defaults it.
    let lim = res
        .and_then(|r| r.limits.as_ref())
        .and_then(|r| r.get(name));
    quantity(req.or(lim))
}

/// The pod's effective request of `name` in milli-units: the larger of the containers' sum
/// (with sidecars) and any init container's, plus the overhead.
pub fn pod_request(pod: &Pod, name: &str) -> i128 {
    let Some(spec) = &pod.spec else { return 0 };
    let mut sum: i128 = spec
        .containers
        .iter()
        .map(|c| container_request(c, name))
        .sum();
    let mut sidecars = 0;
    let mut init_max = 0;
    for c in spec.init_containers.iter().flatten() {
        let r = container_request(c, name);
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars += r;
            sum += r;
        } else {
            init_max = init_max.max(sidecars + r);
        }
    }
    let overhead = quantity(spec.overhead.as_ref().and_then(|o| o.get(name)));
    sum.max(init_max) + overhead
}

fn label_matches(req: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(&req.key);
    let values = req.values.as_deref().unwrap_or_default();
    let int = |s: &str| s.parse::<i64>().ok();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), Some(want)) = (
                value.and_then(|v| int(v)),
                values.first().and_then(|v| int(v)),
            ) else {
                return false;
            };
            if req.operator == "Gt" {
                have > want
            } else {
                have < want
            }
        }
        _ => false,
    }
}

fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let name: BTreeMap<String, String> = node
        .metadata
        .name
        .iter()
        .map(|n| ("metadata.name".to_string(), n.clone()))
        .collect();
    exprs.iter().all(|r| label_matches(r, labels)) && fields.iter().all(|r| label_matches(r, &name))
}

/// The pod's nodeSelector and required node affinity match the node.
pub fn node_matches(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = &pod.spec else { return true };
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    if let Some(sel) = &spec.node_selector
        && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        Some(r) => r.node_selector_terms.iter().any(|t| term_matches(t, node)),
        None => true,
    }
}

fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if t.effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    if t.key
        .as_deref()
        .is_some_and(|k| !k.is_empty() && k != taint.key)
    {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        _ => {
            t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
                && t.key.as_deref().is_some_and(|k| !k.is_empty())
        }
    }
}

/// The pressure conditions True in the node's status, in upstream's order.
fn pressure_conditions(node: &Node) -> Vec<&str> {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    ["MemoryPressure", "DiskPressure", "PIDPressure"]
        .into_iter()
        .filter(|kind| {
            conditions
                .iter()
                .any(|c| c.type_ == *kind && c.status == "True")
        })
        .collect()
}

/// The eviction manager's admission: under MemoryPressure alone, only BestEffort pods that do
/// not tolerate the memory-pressure taint are refused; under any other pressure every pod
/// but critical ones.
pub fn admit_under_pressure(pod: &Pod, node: &Node) -> Result<(), Rejection> {
    let conditions = pressure_conditions(node);
    if conditions.is_empty() || crate::eviction::rank::is_critical(pod) {
        return Ok(());
    }
    if conditions == ["MemoryPressure"] {
        if crate::cm::qos_class(pod) != crate::cm::QosClass::BestEffort {
            return Ok(());
        }
        let taint = Taint {
            key: "node.kubernetes.io/memory-pressure".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        if tolerations.iter().any(|t| tolerates(t, &taint)) {
            return Ok(());
        }
    }
    Err(Rejection {
        reason: crate::eviction::message::REASON.into(),
        message: format!("The node had condition: [{}]. ", conditions.join(" ")),
    })
}

/// Admits `pod` onto `node` beside the already admitted `others`.
pub fn admit(pod: &Pod, node: &Node, others: &[Arc<Pod>]) -> Result<(), Rejection> {
    admit_under_pressure(pod, node)?;
    if !node_matches(pod, node) {
        return Err(Rejection {
            reason: "NodeAffinity".into(),
            message:
                "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
                    .into(),
        });
    }
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let untolerated = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|t| t.effect == "NoExecute" && !tolerations.iter().any(|tol| tolerates(tol, t)));
    if let Some(t) = untolerated {
        return Err(Rejection {
            reason: "Taint".into(),
            message: format!(
                "Predicate TaintToleration failed: node(s) had untolerated taint {{{}: {}}}",
                t.key,
                t.value.as_deref().unwrap_or_default()
            ),
        });
    }
    let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    let Some(allocatable) = allocatable else {
        return Ok(());
    };
    if let Some(max) = allocatable.get("pods") {
        let max = quantity(Some(max)) / 1000;
        if others.len() as i128 + 1 > max {
            return Err(Rejection {
                reason: "OutOfpods".into(),
                message: format!(
                    "Node didn't have enough resource: pods, requested: 1, used: {}, capacity: {max}",
                    others.len()
                ),
            });
        }
    }
    for name in ["cpu", "memory", "ephemeral-storage"] {
        let Some(cap) = allocatable.get(name) else {
            continue;
        };
        let cap = quantity(Some(cap));
        let want = pod_request(pod, name);
        if want == 0 {
            continue;
        }
        let used: i128 = others.iter().map(|p| pod_request(p, name)).sum();
        if used + want > cap {
            let show = |m: i128| if name == "cpu" { m } else { m / 1000 };
            return Err(Rejection {
                reason: format!("OutOf{name}"),
                message: format!(
                    "Node didn't have enough resource: {name}, requested: {}, used: {}, capacity: {}",
                    show(want),
                    show(used),
                    show(cap)
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
