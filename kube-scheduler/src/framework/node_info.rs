//! What the scheduler knows about one node: the node, its pods (bound and assumed), and the
//! sums that Filter and Score read, kept up to date as pods come and go.

use super::pod_info::PodInfo;
use super::resource::Resource;
use k8s_openapi::api::core::v1::{Node, Pod};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One host port in use: protocol and port on an IP (`0.0.0.0` meaning every IP).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProtocolPort {
    pub protocol: String,
    pub port: i32,
}

/// Host ports in use on a node, per IP.
#[derive(Debug, Clone, Default)]
pub struct HostPortInfo(pub HashMap<String, HashSet<ProtocolPort>>);

pub const DEFAULT_BIND_ALL_HOST_IP: &str = "0.0.0.0";

fn sanitize(ip: &str, protocol: &str) -> (String, String) {
    let ip = if ip.is_empty() {
        DEFAULT_BIND_ALL_HOST_IP
    } else {
        ip
    };
    let protocol = if protocol.is_empty() { "TCP" } else { protocol };
    (ip.to_string(), protocol.to_string())
}

impl HostPortInfo {
    pub fn add(&mut self, ip: &str, protocol: &str, port: i32) {
        if port <= 0 {
            return;
        }
        let (ip, protocol) = sanitize(ip, protocol);
        self.0
            .entry(ip)
            .or_default()
            .insert(ProtocolPort { protocol, port });
    }

    pub fn remove(&mut self, ip: &str, protocol: &str, port: i32) {
        if port <= 0 {
            return;
        }
        let (ip, protocol) = sanitize(ip, protocol);
        if let Some(set) = self.0.get_mut(&ip) {
            set.remove(&ProtocolPort { protocol, port });
            if set.is_empty() {
                self.0.remove(&ip);
            }
        }
    }

    /// Whether `ip:protocol/port` collides with a port in use (a wildcard IP collides with
    /// every IP, either way round).
    pub fn check_conflict(&self, ip: &str, protocol: &str, port: i32) -> bool {
        if port <= 0 {
            return false;
        }
        let (ip, protocol) = sanitize(ip, protocol);
        let pp = ProtocolPort { protocol, port };
        if ip == DEFAULT_BIND_ALL_HOST_IP {
            return self.0.values().any(|set| set.contains(&pp));
        }
        [ip.as_str(), DEFAULT_BIND_ALL_HOST_IP]
            .iter()
            .any(|k| self.0.get(*k).is_some_and(|set| set.contains(&pp)))
    }

    pub fn len(&self) -> usize {
        self.0.values().map(HashSet::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An image on a node, with how many nodes have it (for ImageLocality's spread factor).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageStateSummary {
    pub size: i64,
    pub num_nodes: usize,
}

/// The scheduler's view of one node.
#[derive(Debug, Clone, Default)]
pub struct NodeInfo {
    pub node: Option<Arc<Node>>,
    /// The node's name, shared (score lists carry it for every node of every cycle).
    pub name: Arc<str>,
    pub pods: Vec<Arc<PodInfo>>,
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    pub used_ports: HostPortInfo,
    /// Sum of the pods' effective requests.
    pub requested: Resource,
    /// Sum of the pods' requests with scoring's defaults for unset CPU and memory.
    pub non_zero_requested: Resource,
    pub allocatable: Resource,
    /// Image name (every name the node reports for it) to its size and spread.
    pub image_states: HashMap<String, ImageStateSummary>,
    /// `namespace/claim` of the PVCs the node's pods use, with how many pods use each.
    pub pvc_ref_counts: HashMap<String, usize>,
    /// Raised on every change; the snapshot copies only nodes whose generation moved.
    pub generation: i64,
}

/// Every host port a pod holds while it runs (regular and sidecar containers), as
/// (ip, protocol, port).
pub fn pod_host_ports(pod: &Pod) -> impl Iterator<Item = (&str, &str, i32)> {
    let spec = pod.spec.as_ref();
    let init = spec.and_then(|s| s.init_containers.as_ref());
    spec.map(|s| &s.containers)
        .into_iter()
        .flatten()
        // Ordinary init containers have exited before the pod runs; sidecars keep theirs.
        .chain(
            init.into_iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always")),
        )
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let host_port = p.host_port.unwrap_or(0);
            (host_port > 0).then(|| {
                (
                    p.host_ip.as_deref().unwrap_or_default(),
                    p.protocol.as_deref().unwrap_or("TCP"),
                    host_port,
                )
            })
        })
}

fn pvc_keys(pod: &Pod) -> impl Iterator<Item = String> + '_ {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(move |v| {
            let claim = v
                .persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.clone())
                .or_else(|| {
                    // A generic ephemeral volume's claim is named `<pod>-<volume>`.
                    v.ephemeral.as_ref().map(|_| {
                        format!(
                            "{}-{}",
                            pod.metadata.name.as_deref().unwrap_or_default(),
                            v.name
                        )
                    })
                })?;
            Some(format!("{ns}/{claim}"))
        })
}

impl NodeInfo {
    pub fn new(node: Option<Arc<Node>>) -> Self {
        let mut info = NodeInfo::default();
        if let Some(node) = node {
            info.set_node(node);
        }
        info
    }

    pub fn node_name(&self) -> &str {
        &self.name
    }

    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable =
            Resource::from_list(node.status.as_ref().and_then(|s| s.allocatable.as_ref()));
        if *self.name != *node.metadata.name.as_deref().unwrap_or_default() {
            self.name = Arc::from(node.metadata.name.as_deref().unwrap_or_default());
        }
        self.node = Some(node);
        self.generation += 1;
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.non_zero_requests);
        for (ip, proto, port) in pod_host_ports(&pod.pod) {
            self.used_ports.add(ip, proto, port);
        }
        for key in pvc_keys(&pod.pod) {
            *self.pvc_ref_counts.entry(key).or_default() += 1;
        }
        if pod.has_affinity() {
            self.pods_with_affinity.push(pod.clone());
        }
        if pod.has_required_anti_affinity() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
        self.generation += 1;
    }

    /// Removes the pod with `uid`; false when it is not on this node.
    pub fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(i) = self.pods.iter().position(|p| p.uid() == uid) else {
            return false;
        };
        let pod = self.pods.swap_remove(i);
        self.pods_with_affinity.retain(|p| p.uid() != uid);
        self.pods_with_required_anti_affinity
            .retain(|p| p.uid() != uid);
        self.requested.sub(&pod.requests);
        self.non_zero_requested.sub(&pod.non_zero_requests);
        for (ip, proto, port) in pod_host_ports(&pod.pod) {
            self.used_ports.remove(ip, proto, port);
        }
        for key in pvc_keys(&pod.pod) {
            if let Some(n) = self.pvc_ref_counts.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.pvc_ref_counts.remove(&key);
                }
            }
        }
        self.generation += 1;
        true
    }
}
