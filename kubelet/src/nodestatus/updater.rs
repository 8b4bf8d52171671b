//! The status loop: every `nodeStatusUpdateFrequency` compute the node's status and post it
//! (a strategic merge patch of `nodes/status`) when it changed or `nodeStatusReportFrequency`
//! passed since the last post, as upstream's `syncNodeStatus`.

use super::conditions::{self, Health};
use super::lease::LeaseController;
use super::machine::{self, MachineInfo};
use super::{KUBELET_VERSION, NodeHandle, NodeOptions, NodeRuntime, register, resources};
use crate::eviction::signals::Condition;
use anyhow::Context;
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeDaemonEndpoints, NodeStatus, NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Upstream's limit on `status.images`.
const MAX_IMAGES: usize = 50;
/// A runtime that does not answer within this is reported down.
const RUNTIME_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Updater {
    client: kube::Client,
    api: Api<Node>,
    options: NodeOptions,
    machine: MachineInfo,
    runtime: Arc<dyn NodeRuntime>,
    handle: NodeHandle,
    runtime_version: Option<String>,
    last_posted: Option<(NodeStatus, Instant)>,
}

impl Updater {
    pub fn new(
        client: kube::Client,
        options: NodeOptions,
        machine: MachineInfo,
        runtime: Arc<dyn NodeRuntime>,
        handle: NodeHandle,
    ) -> Self {
        Self {
            api: Api::all(client.clone()),
            client,
            options,
            machine,
            runtime,
            handle,
            runtime_version: None,
            last_posted: None,
        }
    }

    /// Registers (retrying with backoff), starts the lease, then posts the status until
    /// `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        if !self.register_until_done(&shutdown).await {
            return;
        }
        let lease = LeaseController::new(
            self.client.clone(),
            self.handle.clone(),
            self.options.lease_duration_seconds,
        );
        tokio::spawn(lease.run(shutdown.clone()));
        loop {
            if let Err(err) = self.sync().await {
                tracing::warn!(node = %self.options.node_name, "unable to update node status: {err:#}");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.options.update_frequency) => {}
                // A pressure change is posted at once: admission reads it from the Node.
                _ = self.handle.pressure_changed.notified() => {}
            }
        }
    }

    /// False when shut down first.
    async fn register_until_done(&mut self, shutdown: &CancellationToken) -> bool {
        let mut backoff = Duration::from_millis(100);
        loop {
            let attempt = if self.options.register_node {
                register::register(&self.api, &self.options).await
            } else {
                self.api
                    .get(&self.options.node_name)
                    .await
                    .map_err(Into::into)
            };
            match attempt {
                Ok(node) => {
                    self.handle.set_node(node);
                    return true;
                }
                Err(err) => tracing::warn!(node = %self.options.node_name, "{err:#}"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return false,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(7));
        }
    }

    /// One tick: compute the status; post it if it changed or is due.
    pub async fn sync(&mut self) -> anyhow::Result<()> {
        let status = self.compute().await?;
        let due = match &self.last_posted {
            None => true,
            Some((last, at)) => {
                changed(last, &status) || at.elapsed() >= self.options.report_frequency
            }
        };
        if !due {
            return Ok(());
        }
        let mut patch = serde_json::to_value(&status).context("encoding the node status")?;
        // Addresses merge by type, which would fold a dual-stack pair: replace the list.
        if let Some(list) = patch.get_mut("addresses").and_then(|a| a.as_array_mut()) {
            list.push(serde_json::json!({"$patch": "replace"}));
        }
        let result = self
            .api
            .patch_status(
                &self.options.node_name,
                &PatchParams::default(),
                &Patch::Strategic(serde_json::json!({ "status": patch })),
            )
            .await;
        let node = match result {
            Ok(node) => node,
            Err(kube::Error::Api(s)) if s.is_not_found() && self.options.register_node => {
                // Deleted under us: register again, the next tick posts the status.
                let node = register::register(&self.api, &self.options).await?;
                self.handle.set_node(node);
                self.last_posted = None;
                return Ok(());
            }
            Err(err) => return Err(err).context("patching the node status"),
        };
        self.handle.set_node(node);
        self.last_posted = Some((status, Instant::now()));
        Ok(())
    }

    async fn compute(&mut self) -> anyhow::Result<NodeStatus> {
        let now = Time(jiff::Timestamp::now());
        let usage = machine::usage(&self.options.root_dir)?;
        let capacity = resources::capacity(&self.machine, usage.fs_capacity, self.options.max_pods);
        let allocatable = resources::allocatable(
            &capacity,
            &self.options.kube_reserved,
            &self.options.system_reserved,
            &self.options.eviction_hard,
        );
        let mut not_ready = Vec::new();
        match tokio::time::timeout(RUNTIME_CHECK_TIMEOUT, self.runtime.status()).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => not_ready.push(format!("container runtime is down: {err:#}")),
            Err(_) => not_ready.push("container runtime is down: status check timed out".into()),
        }
        not_ready.extend(self.handle.ready_errors());
        if self.runtime_version.is_none() {
            match tokio::time::timeout(RUNTIME_CHECK_TIMEOUT, self.runtime.version()).await {
                Ok(Ok(v)) => self.runtime_version = Some(v),
                Ok(Err(err)) => tracing::debug!("runtime version unavailable: {err:#}"),
                Err(_) => tracing::debug!("runtime version timed out"),
            }
        }
        let pressure = self.handle.pressure();
        let health = Health {
            not_ready,
            memory_pressure: pressure.contains(&Condition::MemoryPressure),
            disk_pressure: pressure.contains(&Condition::DiskPressure),
            pid_pressure: pressure.contains(&Condition::PidPressure),
        };
        let previous = self
            .last_posted
            .as_ref()
            .and_then(|(s, _)| s.conditions.clone())
            .or_else(|| self.handle.node().and_then(|n| n.status?.conditions))
            .unwrap_or_default();
        let images = match self.runtime.images().await {
            Ok(mut images) if !images.is_empty() => {
                images.sort_by_key(|i| std::cmp::Reverse(i.size_bytes.unwrap_or(0)));
                images.truncate(MAX_IMAGES);
                Some(images)
            }
            _ => None,
        };
        let mut addresses: Vec<NodeAddress> = self
            .handle
            .node_ips()
            .iter()
            .map(|ip| NodeAddress {
                type_: "InternalIP".into(),
                address: ip.to_string(),
            })
            .collect();
        addresses.push(NodeAddress {
            type_: "Hostname".into(),
            address: self.options.node_name.clone(),
        });
        Ok(NodeStatus {
            capacity: Some(resources::to_api(&capacity)),
            allocatable: Some(resources::to_api(&allocatable)),
            conditions: Some(conditions::conditions(&previous, &health, now)),
            addresses: Some(addresses),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint {
                    port: self.options.port,
                }),
            }),
            node_info: Some(self.node_info()),
            images,
            ..NodeStatus::default()
        })
    }

    fn node_info(&self) -> NodeSystemInfo {
        NodeSystemInfo {
            machine_id: self.machine.machine_id.clone(),
            system_uuid: self.machine.system_uuid.clone(),
            boot_id: self.machine.boot_id.clone(),
            kernel_version: self.machine.kernel_version.clone(),
            os_image: self.machine.os_image.clone(),
            container_runtime_version: self.runtime_version.clone().unwrap_or_default(),
            kubelet_version: KUBELET_VERSION.into(),
            kube_proxy_version: String::new(),
            operating_system: "linux".into(),
            architecture: register::go_arch().into(),
            swap: None,
        }
    }
}

/// Whether a status differs from the last posted one in more than heartbeat times.
fn changed(last: &NodeStatus, new: &NodeStatus) -> bool {
    let without_conditions = |s: &NodeStatus| NodeStatus {
        conditions: None,
        ..s.clone()
    };
    without_conditions(last) != without_conditions(new)
        || conditions::changed(
            last.conditions.as_deref().unwrap_or_default(),
            new.conditions.as_deref().unwrap_or_default(),
        )
}
