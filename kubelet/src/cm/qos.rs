//! A pod's QoS class and the cgroup limits that follow from its containers' resources
//! (upstream's `GetPodQOS` and `ResourceConfigForPod`).

use api_types::resource::Quantity;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::BTreeMap;

/// The pod's QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

fn quantities(
    list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> BTreeMap<&'static str, Quantity> {
    let mut out = BTreeMap::new();
    for name in QOS_RESOURCES {
        if let Some(q) = list
            .and_then(|l| l.get(name))
            .and_then(|q| Quantity::parse(&q.0))
            && !q.is_zero()
        {
            out.insert(name, q);
        }
    }
    out
}

fn all_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    let spec = pod.spec.as_ref();
    let init = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    let app = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    init.iter().chain(app)
}

/// The pod's QoS class: `status.qosClass` when the apiserver set it, else computed as upstream
/// (only cpu and memory count; zero amounts are ignored).
pub fn qos_class(pod: &Pod) -> QosClass {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some("Guaranteed") => return QosClass::Guaranteed,
        Some("Burstable") => return QosClass::Burstable,
        Some("BestEffort") => return QosClass::BestEffort,
        _ => {}
    }
    compute_qos_class(pod)
}

/// Upstream's rules, ignoring `status.qosClass`.
pub fn compute_qos_class(pod: &Pod) -> QosClass {
    let mut requests: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut limits: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut guaranteed = true;
    for c in all_containers(pod) {
        let res = c.resources.as_ref();
        for (name, q) in quantities(res.and_then(|r| r.requests.as_ref())) {
            let sum = requests.entry(name).or_insert(Quantity::ZERO);
            *sum = sum.add(&q);
        }
        let container_limits = quantities(res.and_then(|r| r.limits.as_ref()));
        if container_limits.len() != QOS_RESOURCES.len() {
            guaranteed = false;
        }
        for (name, q) in container_limits {
            let sum = limits.entry(name).or_insert(Quantity::ZERO);
            *sum = sum.add(&q);
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return QosClass::BestEffort;
    }
    if guaranteed
        && limits.len() == QOS_RESOURCES.len()
        && requests
            .iter()
            .all(|(name, req)| limits.get(name) == Some(req))
    {
        return QosClass::Guaranteed;
    }
    QosClass::Burstable
}

/// The limits of a pod's cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodResources {
    pub cpu_shares: u64,
    /// `cpu.cfs_quota_us`; None leaves it unlimited.
    pub cpu_quota: Option<i64>,
    pub cpu_period: u64,
    pub memory_limit: Option<i64>,
    pub pids_limit: Option<i64>,
}

pub const MIN_SHARES: u64 = 2;
const MAX_SHARES: u64 = 262144;
const MIN_QUOTA_US: i64 = 1000;

/// `cpu.shares` for a cpu request in millicores.
pub fn milli_cpu_to_shares(milli: i128) -> u64 {
    if milli <= 0 {
        return MIN_SHARES;
    }
    ((milli * 1024 / 1000) as u64).clamp(MIN_SHARES, MAX_SHARES)
}

/// The effective amount of one resource: the larger of the app containers' (and sidecars')
/// sum and any single init container, as the scheduler counts it. `None` when some
/// container lacks it (then a limit is not set).
fn effective(pod: &Pod, resource: &str, limits: bool) -> (Quantity, bool) {
    let spec = pod.spec.as_ref();
    let amount = |c: &Container| {
        let res = c.resources.as_ref();
        let list = if limits {
            res.and_then(|r| r.limits.as_ref())
        } else {
            res.and_then(|r| r.requests.as_ref())
                .or(res.and_then(|r| r.limits.as_ref()))
        };
        list.and_then(|l| l.get(resource))
            .and_then(|q| Quantity::parse(&q.0))
    };
    let mut all_set = true;
    let mut sum = Quantity::ZERO;
    let mut init_max = Quantity::ZERO;
    for c in spec.map(|s| s.containers.as_slice()).unwrap_or_default() {
        match amount(c) {
            Some(q) => sum = sum.add(&q),
            None => all_set = false,
        }
    }
    for c in spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
    {
        let q = amount(c);
        all_set &= q.is_some();
        let q = q.unwrap_or(Quantity::ZERO);
        if c.restart_policy.as_deref() == Some("Always") {
            sum = sum.add(&q);
        } else if q > init_max {
            init_max = q;
        }
    }
    (sum.max(init_max), all_set)
}

/// The pod cgroup's limits: shares from cpu requests, a CFS quota when every container has a
/// cpu limit, a memory limit when every container has one, and `podPidsLimit`.
pub fn pod_resources(pod: &Pod, cfs_quota: bool, period_us: u64, pids_limit: i64) -> PodResources {
    let qos = qos_class(pod);
    let (cpu_request, _) = effective(pod, "cpu", false);
    let (cpu_limit, cpu_limited) = effective(pod, "cpu", true);
    let (memory_limit, memory_limited) = effective(pod, "memory", true);
    let mut out = PodResources {
        cpu_shares: MIN_SHARES,
        cpu_quota: None,
        cpu_period: period_us,
        memory_limit: None,
        pids_limit: (pids_limit > 0).then_some(pids_limit),
    };
    if qos == QosClass::BestEffort {
        return out;
    }
    out.cpu_shares = milli_cpu_to_shares(cpu_request.milli_value());
    if cfs_quota && cpu_limited && !cpu_limit.is_zero() {
        let quota = (cpu_limit.milli_value() * period_us as i128 / 1000) as i64;
        out.cpu_quota = Some(quota.max(MIN_QUOTA_US));
    }
    if memory_limited && !memory_limit.is_zero() {
        out.memory_limit = Some(i64::try_from(memory_limit.value()).unwrap_or(i64::MAX));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(containers: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "uid": "u1"},
            "spec": {"containers": containers}
        }))
        .unwrap()
    }

    fn c(requests: serde_json::Value, limits: serde_json::Value) -> serde_json::Value {
        json!({"name": "c", "image": "i", "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn qos_classes() {
        let cases = [
            (json!([{"name": "c", "image": "i"}]), QosClass::BestEffort),
            (
                json!([c(json!({"cpu": "0"}), json!({}))]),
                QosClass::BestEffort,
            ),
            (
                json!([c(
                    json!({"cpu": "1", "memory": "1Gi"}),
                    json!({"cpu": "1", "memory": "1Gi"})
                )]),
                QosClass::Guaranteed,
            ),
            (
                json!([c(json!({}), json!({"cpu": "1", "memory": "1Gi"}))]),
                QosClass::Guaranteed,
            ),
            (
                json!([c(
                    json!({"cpu": "500m"}),
                    json!({"cpu": "1", "memory": "1Gi"})
                )]),
                QosClass::Burstable,
            ),
            (
                json!([c(json!({"cpu": "1"}), json!({"cpu": "1"}))]),
                QosClass::Burstable,
            ),
            (
                json!([
                    c(json!({}), json!({"cpu": "1", "memory": "1Gi"})),
                    {"name": "d", "image": "i"}
                ]),
                QosClass::Burstable,
            ),
        ];
        for (containers, want) in cases {
            let p = pod(containers.clone());
            assert_eq!(compute_qos_class(&p), want, "{containers}");
        }
        let mut p = pod(json!([{"name": "c", "image": "i"}]));
        p.status = Some(serde_json::from_value(json!({"qosClass": "Burstable"})).unwrap());
        assert_eq!(qos_class(&p), QosClass::Burstable);
    }

    #[test]
    fn pod_limits() {
        let guaranteed = pod(json!([c(
            json!({"cpu": "250m", "memory": "64Mi"}),
            json!({"cpu": "250m", "memory": "64Mi"})
        )]));
        let r = pod_resources(&guaranteed, true, 100_000, 1024);
        assert_eq!(r.cpu_shares, 256);
        assert_eq!(r.cpu_quota, Some(25_000));
        assert_eq!(r.memory_limit, Some(64 * 1024 * 1024));
        assert_eq!(r.pids_limit, Some(1024));
        assert_eq!(
            pod_resources(&guaranteed, false, 100_000, -1).cpu_quota,
            None
        );

        let burstable = pod(json!([
            c(json!({"cpu": "100m"}), json!({"memory": "10Mi"})),
            {"name": "d", "image": "i"}
        ]));
        let r = pod_resources(&burstable, true, 100_000, -1);
        assert_eq!(r.cpu_shares, 102);
        assert_eq!(
            (r.cpu_quota, r.memory_limit, r.pids_limit),
            (None, None, None)
        );

        let best_effort = pod(json!([{"name": "c", "image": "i"}]));
        assert_eq!(
            pod_resources(&best_effort, true, 100_000, -1).cpu_shares,
            MIN_SHARES
        );
        assert_eq!(milli_cpu_to_shares(1), MIN_SHARES);
    }
}
