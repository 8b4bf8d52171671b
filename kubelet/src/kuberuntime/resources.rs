//! A container's requests and limits as CRI Linux resources (cgroup v1 cpu shares, CFS quota,
//! memory limit) and its OOM score adjustment by QoS class, as upstream's
//! `generateLinuxContainerResources` and `GetContainerOOMScoreAdjust`.

use api_types::resource::Quantity;
use k8s_cri::v1::LinuxContainerResources;
use k8s_openapi::api::core::v1::{Container, Pod};

const MIN_SHARES: i64 = 2;
const MAX_SHARES: i64 = 262_144;
const SHARES_PER_CPU: i64 = 1024;
/// CFS period in microseconds (100 ms) and the smallest quota the kernel accepts (1 ms).
pub const QUOTA_PERIOD: i64 = 100_000;
const MIN_QUOTA: i64 = 1000;

const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// Upstream's `SystemCriticalPriority`: pods at or above it are never OOM-killed first.
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

fn quantity(
    container: &Container,
    which: fn(
        &k8s_openapi::api::core::v1::ResourceRequirements,
    ) -> Option<
        &std::collections::BTreeMap<
            String,
            k8s_openapi::apimachinery::pkg::api::resource::Quantity,
        >,
    >,
    name: &str,
) -> Option<Quantity> {
    let q = container
        .resources
        .as_ref()
        .and_then(which)
        .and_then(|m| m.get(name))?;
    Quantity::parse(&q.0).filter(|q| !q.is_zero())
}

fn request(c: &Container, name: &str) -> Option<Quantity> {
    quantity(c, |r| r.requests.as_ref(), name)
}

fn limit(c: &Container, name: &str) -> Option<Quantity> {
    quantity(c, |r| r.limits.as_ref(), name)
}

/// Upstream's `GetPodQOS` over every container, init containers included.
pub fn qos_class(pod: &Pod) -> QosClass {
    let Some(spec) = &pod.spec else {
        return QosClass::BestEffort;
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        for name in ["cpu", "memory"] {
            let (req, lim) = (request(c, name), limit(c, name));
            any |= req.is_some() || lim.is_some();
            match (req, lim) {
                // An unset request defaults to the limit.
                (None, Some(_)) => {}
                (Some(r), Some(l)) if r == l => {}
                _ => guaranteed = false,
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => QosClass::BestEffort,
        (true, true) => QosClass::Guaranteed,
        (true, false) => QosClass::Burstable,
    }
}

/// Upstream's `MilliCPUToShares`.
pub fn milli_cpu_to_shares(milli: i64) -> i64 {
    if milli <= 0 {
        return MIN_SHARES;
    }
    (milli * SHARES_PER_CPU / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// Upstream's `milliCPUToQuota`: 0 (no limit) for no cpu limit.
pub fn milli_cpu_to_quota(milli: i64, period: i64) -> i64 {
    if milli <= 0 {
        return 0;
    }
    (milli * period / 1000).max(MIN_QUOTA)
}

fn as_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn is_critical(pod: &Pod) -> bool {
    let spec_priority = pod.spec.as_ref().and_then(|s| s.priority);
    let static_pod = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/config.source"))
        .is_some_and(|s| s != "api");
    static_pod || spec_priority.is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
}

/// Upstream's `GetContainerOOMScoreAdjust`.
pub fn oom_score_adj(pod: &Pod, container: &Container, memory_capacity: i64) -> i64 {
    if is_critical(pod) {
        return GUARANTEED_OOM_SCORE_ADJ;
    }
    match qos_class(pod) {
        QosClass::Guaranteed => GUARANTEED_OOM_SCORE_ADJ,
        QosClass::BestEffort => BEST_EFFORT_OOM_SCORE_ADJ,
        QosClass::Burstable => {
            let memory_request = request(container, "memory").map_or(0, |q| as_i64(q.value()));
            if memory_capacity <= 0 {
                return BEST_EFFORT_OOM_SCORE_ADJ - 1;
            }
            let adj =
                1000 - (1000 * i128::from(memory_request) / i128::from(memory_capacity)) as i64;
            // Burstable always ranks above guaranteed and below best-effort.
            if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ {
                1000 + GUARANTEED_OOM_SCORE_ADJ
            } else if adj >= BEST_EFFORT_OOM_SCORE_ADJ {
                BEST_EFFORT_OOM_SCORE_ADJ - 1
            } else {
                adj
            }
        }
    }
}

/// The container's cgroup settings from its requests and limits.
pub fn linux_resources(
    pod: &Pod,
    container: &Container,
    memory_capacity: i64,
) -> LinuxContainerResources {
    let cpu_limit = limit(container, "cpu").map_or(0, |q| as_i64(q.milli_value()));
    // An unset cpu request defaults to the limit (the apiserver does it for new pods; older
    // objects may still lack it).
    let cpu_request = request(container, "cpu")
        .map(|q| as_i64(q.milli_value()))
        .unwrap_or(cpu_limit);
    let memory_limit = limit(container, "memory").map_or(0, |q| as_i64(q.value()));
    LinuxContainerResources {
        cpu_shares: milli_cpu_to_shares(cpu_request),
        cpu_period: QUOTA_PERIOD,
        cpu_quota: milli_cpu_to_quota(cpu_limit, QUOTA_PERIOD),
        memory_limit_in_bytes: memory_limit,
        oom_score_adj: oom_score_adj(pod, container, memory_capacity),
        ..Default::default()
    }
}

/// The host's memory in bytes (`MemTotal`), 0 when unreadable.
pub fn host_memory_capacity() -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;

    fn container(req: &[(&str, &str)], lim: &[(&str, &str)]) -> Container {
        let map = |v: &[(&str, &str)]| {
            (!v.is_empty()).then(|| {
                v.iter()
                    .map(|(k, q)| (k.to_string(), Q(q.to_string())))
                    .collect()
            })
        };
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: map(req),
                limits: map(lim),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(c: &Container) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![c.clone()],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    const GI: i64 = 1 << 30;

    #[test]
    fn resources_map_to_cgroup_settings() {
        // (requests, limits, shares, quota, memory limit, oom adj, qos) with 4 GiB of memory.
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            &'a [(&'a str, &'a str)],
            i64,
            i64,
            i64,
            i64,
            QosClass,
        );
        let cases: [Case; 7] = [
            (&[], &[], 2, 0, 0, 1000, QosClass::BestEffort),
            (&[("cpu", "100m")], &[], 102, 0, 0, 999, QosClass::Burstable),
            (&[("cpu", "1m")], &[], 2, 0, 0, 999, QosClass::Burstable),
            (
                &[("memory", "1Gi")],
                &[("memory", "2Gi")],
                2,
                0,
                2 * GI,
                750,
                QosClass::Burstable,
            ),
            (
                &[],
                &[("cpu", "500m"), ("memory", "64Mi")],
                512,
                50_000,
                64 << 20,
                -997,
                QosClass::Guaranteed,
            ),
            (
                &[("cpu", "2"), ("memory", "4Gi")],
                &[("cpu", "2"), ("memory", "8Gi")],
                2048,
                200_000,
                8 * GI,
                3,
                QosClass::Burstable,
            ),
            (
                &[("cpu", "1")],
                &[("cpu", "1m")],
                1024,
                1000,
                0,
                999,
                QosClass::Burstable,
            ),
        ];
        for (req, lim, shares, quota, mem, oom, qos) in cases {
            let c = container(req, lim);
            let p = pod(&c);
            assert_eq!(qos_class(&p), qos, "{req:?} {lim:?}");
            let r = linux_resources(&p, &c, 4 * GI);
            assert_eq!(
                (
                    r.cpu_shares,
                    r.cpu_quota,
                    r.cpu_period,
                    r.memory_limit_in_bytes,
                    r.oom_score_adj
                ),
                (shares, quota, QUOTA_PERIOD, mem, oom),
                "{req:?} {lim:?}"
            );
        }
    }

    #[test]
    fn critical_pods_are_protected_from_the_oom_killer() {
        let c = container(&[], &[]);
        let mut p = pod(&c);
        p.spec.as_mut().unwrap().priority = Some(SYSTEM_CRITICAL_PRIORITY);
        assert_eq!(oom_score_adj(&p, &c, GI), -997);
        let mut s = pod(&c);
        s.metadata.annotations = Some(
            [(
                "kubernetes.io/config.source".to_string(),
                "file".to_string(),
            )]
            .into(),
        );
        assert_eq!(oom_score_adj(&s, &c, GI), -997);
        assert_eq!(milli_cpu_to_shares(1_000_000), MAX_SHARES);
        assert!(host_memory_capacity() > 0);
    }
}
