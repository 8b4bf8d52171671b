//! Resource amounts as the scheduler adds them: CPU in millicores, everything else in whole
//! units, and a pod's effective request computed as upstream (init containers, sidecars and
//! overhead counted).

use api_types::resource::Quantity;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use std::collections::BTreeMap;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// What scoring assumes a container without a CPU request uses (upstream's 100m).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// What scoring assumes a container without a memory request uses (upstream's 200 MB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// An amount of each resource; extended resources and hugepages are `scalar`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    pub scalar: BTreeMap<String, i64>,
}

fn units(q: &ApiQuantity, milli: bool) -> i64 {
    let Some(q) = Quantity::parse(&q.0) else {
        return 0;
    };
    let v = if milli { q.milli_value() } else { q.value() };
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Whether a resource name is counted by NodeResourcesFit beyond cpu/memory/storage/pods:
/// extended resources (a domain prefix outside `kubernetes.io/`), hugepages, attachable volumes.
pub fn is_scalar_resource_name(name: &str) -> bool {
    name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
        || is_extended_resource_name(name)
}

/// Upstream's `IsExtendedResourceName`: fully qualified, not in the `kubernetes.io` namespaces,
/// not a `requests.` quota name.
pub fn is_extended_resource_name(name: &str) -> bool {
    if name.starts_with("requests.") || !name.contains('/') {
        return false;
    }
    let domain = name.split('/').next().unwrap_or_default();
    !(domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"))
}

impl Resource {
    /// The amounts of a resource list (`requests`, `allocatable`, `overhead`).
    pub fn from_list(list: Option<&BTreeMap<String, ApiQuantity>>) -> Self {
        let mut r = Resource::default();
        if let Some(list) = list {
            for (name, q) in list {
                r.add_named(name, q);
            }
        }
        r
    }

    fn add_named(&mut self, name: &str, q: &ApiQuantity) {
        match name {
            CPU => self.milli_cpu += units(q, true),
            MEMORY => self.memory += units(q, false),
            EPHEMERAL_STORAGE => self.ephemeral_storage += units(q, false),
            PODS => self.allowed_pod_number += units(q, false),
            other if is_scalar_resource_name(other) => {
                *self.scalar.entry(other.to_string()).or_default() += units(q, false)
            }
            _ => {}
        }
    }

    pub fn add(&mut self, other: &Resource) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.allowed_pod_number += other.allowed_pod_number;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() += v;
        }
    }

    pub fn sub(&mut self, other: &Resource) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.allowed_pod_number -= other.allowed_pod_number;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() -= v;
        }
    }

    /// Each amount raised to at least `other`'s.
    pub fn set_max(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pod_number = self.allowed_pod_number.max(other.allowed_pod_number);
        for (k, v) in &other.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }

    /// The amount of one resource by its API name (0 when absent).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.allowed_pod_number,
            other => self.scalar.get(other).copied().unwrap_or(0),
        }
    }
}

fn container_requests(c: &Container) -> Resource {
    Resource::from_list(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
}

fn is_restartable_init(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// A pod's effective request, as upstream's `PodRequests`: the regular containers and running
/// sidecars summed, raised to what any init container needs while the sidecars before it run,
/// plus the pod overhead. `non_zero` substitutes scoring's defaults for unset CPU and memory.
pub fn pod_requests(pod: &Pod, non_zero: bool) -> Resource {
    let Some(spec) = pod.spec.as_ref() else {
        return Resource::default();
    };
    let per_container = |c: &Container| {
        let mut r = container_requests(c);
        if non_zero {
            let has = |n: &str| {
                c.resources
                    .as_ref()
                    .and_then(|r| r.requests.as_ref())
                    .is_some_and(|m| m.contains_key(n))
            };
            if !has(CPU) {
                r.milli_cpu = DEFAULT_MILLI_CPU_REQUEST;
            }
            if !has(MEMORY) {
                r.memory = DEFAULT_MEMORY_REQUEST;
            }
        }
        r
    };
    let mut total = Resource::default();
    for c in &spec.containers {
        total.add(&per_container(c));
    }
    let mut sidecars = Resource::default();
    let mut init_max = Resource::default();
    for c in spec.init_containers.iter().flatten() {
        let r = per_container(c);
        if is_restartable_init(c) {
            sidecars.add(&r);
            init_max.set_max(&sidecars);
        } else {
            let mut during = sidecars.clone();
            during.add(&r);
            init_max.set_max(&during);
        }
    }
    total.add(&sidecars);
    total.set_max(&init_max);
    if let Some(overhead) = spec.overhead.as_ref() {
        total.add(&Resource::from_list(Some(overhead)));
    }
    total
}
