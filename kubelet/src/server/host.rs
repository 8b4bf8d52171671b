//! What the server needs from the rest of the kubelet: its pods, their statuses, the runtime,
//! and where pods keep their logs, volumes and cgroups. The core implements [`HostInterface`];
//! tests use stubs.

use crate::container::ContainerId;
use crate::kuberuntime::{ExecResult, RuntimeManager};
use crate::pleg::PodLister;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The runtime calls the server makes beyond PLEG's listing; [`RuntimeManager`] implements it.
#[async_trait::async_trait]
pub trait RuntimeApi: PodLister {
    async fn exec_sync(
        &self,
        id: &ContainerId,
        cmd: &[String],
        timeout: Duration,
    ) -> anyhow::Result<ExecResult>;
    /// Streaming URLs of the runtime's streaming server.
    async fn get_exec(
        &self,
        id: &ContainerId,
        cmd: &[String],
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String>;
    async fn get_attach(
        &self,
        id: &ContainerId,
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String>;
    async fn get_port_forward(&self, sandbox_id: &str, ports: &[i32]) -> anyhow::Result<String>;
}

#[async_trait::async_trait]
impl RuntimeApi for RuntimeManager {
    async fn exec_sync(
        &self,
        id: &ContainerId,
        cmd: &[String],
        timeout: Duration,
    ) -> anyhow::Result<ExecResult> {
        RuntimeManager::exec_sync(self, id, cmd, timeout).await
    }
    async fn get_exec(
        &self,
        id: &ContainerId,
        cmd: &[String],
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String> {
        RuntimeManager::get_exec(self, id, cmd, stdin, stdout, stderr, tty).await
    }
    async fn get_attach(
        &self,
        id: &ContainerId,
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String> {
        RuntimeManager::get_attach(self, id, stdin, stdout, stderr, tty).await
    }
    async fn get_port_forward(&self, sandbox_id: &str, ports: &[i32]) -> anyhow::Result<String> {
        RuntimeManager::get_port_forward(self, sandbox_id, ports).await
    }
}

/// The kubelet as the server sees it (upstream's `server.HostInterface`).
pub trait HostInterface: Send + Sync + 'static {
    /// The node's name: authorization names it, and the summary reports it.
    fn node_name(&self) -> String;
    /// The pods the kubelet runs (the pod manager's, static ones with the status the kubelet
    /// computed for them; mirror pods not included): upstream's `GetPods`.
    fn pods(&self) -> Vec<Arc<Pod>>;
    /// A pod by namespace and name, from the same set as [`pods`](Self::pods).
    fn pod_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods().into_iter().find(|p| {
            p.metadata.namespace.as_deref().unwrap_or("default") == namespace
                && p.metadata.name.as_deref() == Some(name)
        })
    }
    /// The status the kubelet last computed for the pod (the status manager's), if any; the
    /// pod's own `status` is used otherwise.
    fn pod_status(&self, _uid: &str) -> Option<PodStatus> {
        None
    }
    fn runtime(&self) -> Arc<dyn RuntimeApi>;
    /// Where container logs live (`podLogsDir`, `/var/log/pods` upstream).
    fn pod_logs_dir(&self) -> PathBuf;
    /// `--root-dir`: pods' directories (volumes, etc-hosts) are under `pods/<uid>`.
    fn root_dir(&self) -> PathBuf;
    /// The pod's cgroup below each v1 controller's mount (`/<cgroupRoot>/kubepods/<qos>/pod<uid>`
    /// with cgroupfs); containers are `<that>/<container id>`. None when unknown.
    fn pod_cgroup(&self, _pod: &Pod) -> Option<String> {
        None
    }
    /// The cgroup holding every pod (`/<cgroupRoot>/kubepods`), for node-level pod totals.
    fn pods_cgroup(&self) -> Option<String> {
        None
    }
}
