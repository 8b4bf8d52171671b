//! The Node object: registration, status (capacity, allocatable, addresses, nodeInfo,
//! conditions) and the heartbeat Lease in `kube-node-lease`. Owner: the node engineer.
//!
//! The core starts it with [`NodeStatusManager::start`] once it has a client and a runtime,
//! and reads the node through the returned [`NodeHandle`] (admission: allocatable, labels,
//! taints; the node's IPs for pod status and env).

pub mod conditions;
pub mod lease;
pub mod machine;
pub mod register;
pub mod resources;
pub mod updater;

use crate::app::config::{Config, EvictionThreshold};
use crate::eviction::signals::Condition;
use api_types::resource::ResourceList;
use k8s_openapi::api::core::v1::{ContainerImage, Node, Taint};
use parking_lot::RwLock;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The kubelet's version as nodeInfo reports it.
pub const KUBELET_VERSION: &str = "v1.33.0";

/// What node status needs from the container runtime. Implemented for
/// [`crate::kuberuntime::RuntimeManager`]; tests use fakes.
#[async_trait::async_trait]
pub trait NodeRuntime: Send + Sync {
    /// `<runtime name>://<version>`, e.g. `containerd://1.6.20`.
    async fn version(&self) -> anyhow::Result<String>;
    /// Ok when the runtime is ready (runtime and network); the error is Ready's message.
    async fn status(&self) -> anyhow::Result<()>;
    /// The images on the node, for `status.images`.
    async fn images(&self) -> anyhow::Result<Vec<ContainerImage>> {
        Ok(Vec::new())
    }
}

#[async_trait::async_trait]
impl NodeRuntime for crate::kuberuntime::RuntimeManager {
    async fn version(&self) -> anyhow::Result<String> {
        let v = crate::kuberuntime::RuntimeManager::version(self).await?;
        Ok(format!("{}://{}", v.runtime_name, v.runtime_version))
    }

    async fn status(&self) -> anyhow::Result<()> {
        crate::kuberuntime::RuntimeManager::status(self).await
    }

    async fn images(&self) -> anyhow::Result<Vec<ContainerImage>> {
        let images = crate::kuberuntime::RuntimeManager::list_images(self).await?;
        Ok(images
            .into_iter()
            .filter(|(_, tags, _)| !tags.is_empty())
            .map(|(_, tags, size)| ContainerImage {
                names: Some(tags),
                size_bytes: i64::try_from(size).ok(),
            })
            .collect())
    }
}

/// The node-related settings, taken from [`Config`].
#[derive(Debug, Clone)]
pub struct NodeOptions {
    pub node_name: String,
    /// `--node-labels`, added to the default labels at registration.
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub provider_id: String,
    pub register_node: bool,
    /// `--node-ip`; empty: the host's address.
    pub node_ips: Vec<IpAddr>,
    pub max_pods: i32,
    pub kube_reserved: ResourceList,
    pub system_reserved: ResourceList,
    pub eviction_hard: Vec<EvictionThreshold>,
    /// Whose filesystem is `ephemeral-storage` and nodefs.
    pub root_dir: PathBuf,
    /// The kubelet's HTTPS port (`daemonEndpoints.kubeletEndpoint.Port`).
    pub port: i32,
    pub update_frequency: Duration,
    pub report_frequency: Duration,
    pub lease_duration_seconds: i32,
}

impl NodeOptions {
    pub fn from_config(config: &Config) -> Self {
        let k = &config.kubelet;
        Self {
            node_name: config.node_name.clone(),
            labels: config.node_labels.clone(),
            taints: config.register_with_taints(),
            provider_id: k.provider_id.clone(),
            register_node: k.register_node,
            node_ips: config.node_ips.clone(),
            max_pods: k.max_pods,
            kube_reserved: config.kube_reserved.clone(),
            system_reserved: config.system_reserved.clone(),
            eviction_hard: config.eviction_hard.clone(),
            root_dir: config.root_dir.clone(),
            port: k.port,
            update_frequency: k.node_status_update_frequency,
            report_frequency: k.node_status_report_frequency,
            lease_duration_seconds: k.node_lease_duration_seconds,
        }
    }
}

/// A cheap, cloneable view of the node for the rest of the kubelet.
#[derive(Clone)]
pub struct NodeHandle {
    node: Arc<RwLock<Option<Node>>>,
    ips: Arc<Vec<IpAddr>>,
    name: Arc<str>,
    ready_errors: Arc<RwLock<BTreeMap<String, String>>>,
    /// The pressure conditions in force, from the eviction manager.
    pressure: Arc<RwLock<BTreeSet<Condition>>>,
    /// Wakes the status loop when they change, so they are posted at once.
    pressure_changed: Arc<Notify>,
}

impl NodeHandle {
    fn new(name: &str, ips: Vec<IpAddr>) -> Self {
        Self {
            node: Arc::default(),
            ips: Arc::new(ips),
            name: name.into(),
            ready_errors: Arc::default(),
            pressure: Arc::default(),
            pressure_changed: Arc::default(),
        }
    }

    /// The pressure conditions in force (none until the eviction manager reports).
    pub fn pressure(&self) -> BTreeSet<Condition> {
        self.pressure.read().clone()
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Node as last read from or written to the apiserver (None before registration).
    pub fn node(&self) -> Option<Node> {
        self.node.read().clone()
    }

    /// The node's IPs (`--node-ip` or the host's), primary first.
    pub fn node_ips(&self) -> Vec<IpAddr> {
        self.ips.as_ref().clone()
    }

    /// Marks the node not ready because of `source` (e.g. "PLEG"), or clears it with None.
    /// The message joins Ready's message when the status is next posted.
    pub fn set_ready_error(&self, source: &str, message: Option<String>) {
        let mut errors = self.ready_errors.write();
        match message {
            Some(m) => errors.insert(source.to_string(), m),
            None => errors.remove(source),
        };
    }

    fn ready_errors(&self) -> Vec<String> {
        self.ready_errors.read().values().cloned().collect()
    }

    fn set_node(&self, node: Node) {
        *self.node.write() = Some(node);
    }
}

impl crate::eviction::PressureSink for NodeHandle {
    fn set_pressure(&self, conditions: &BTreeSet<Condition>) {
        let mut current = self.pressure.write();
        if *current != *conditions {
            *current = conditions.clone();
            drop(current);
            self.pressure_changed.notify_one();
        }
    }
}

/// Registers the node and keeps its status and lease current.
pub struct NodeStatusManager;

impl NodeStatusManager {
    /// Reads the machine's facts and spawns the registration, status and lease loops; they stop
    /// when `shutdown` is cancelled. The handle is usable at once (its node is None until the
    /// registration succeeded).
    pub fn start(
        client: kube::Client,
        options: NodeOptions,
        runtime: Arc<dyn NodeRuntime>,
        shutdown: CancellationToken,
    ) -> anyhow::Result<NodeHandle> {
        let machine = machine::MachineInfo::read()?;
        let ips = if options.node_ips.is_empty() {
            vec![machine::host_ip(&options.node_name)]
        } else {
            options.node_ips.clone()
        };
        let handle = NodeHandle::new(&options.node_name, ips);
        let updater = updater::Updater::new(client, options, machine, runtime, handle.clone());
        tokio::spawn(updater.run(shutdown));
        Ok(handle)
    }
}

#[cfg(test)]
mod tests;
