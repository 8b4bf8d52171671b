//! The runtime manager: the kubelet's pods driven through CRI (upstream's `kuberuntime`).
//! Owner: the runtime engineer. Other modules use only the API below.

use crate::container::{
    ContainerId, PodRuntimeStatus, ProbeResult, RunContainerOptions, RuntimePod,
};
use anyhow::bail;
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use std::path::PathBuf;
use std::time::Duration;

/// How to reach and use the runtime.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// `--container-runtime-endpoint`, e.g. `unix:///run/containerd/containerd.sock`.
    pub endpoint: String,
    /// `--image-service-endpoint`; the runtime endpoint when empty.
    pub image_endpoint: String,
    /// `runtimeRequestTimeout` (2 min upstream).
    pub request_timeout: Duration,
    /// Where container logs live: `/var/log/pods` upstream.
    pub pod_logs_dir: PathBuf,
    /// `serializeImagePulls` (true upstream).
    pub serialize_image_pulls: bool,
    /// `containerLogMaxSize` in bytes and `containerLogMaxFiles`.
    pub container_log_max_size: u64,
    pub container_log_max_files: u32,
}

/// The runtime's name and versions, for `nodeInfo.containerRuntimeVersion` and `/version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeVersion {
    pub runtime_name: String,
    pub runtime_version: String,
    pub runtime_api_version: String,
}

/// What the runtime needs from the rest of the kubelet while it syncs a pod.
#[async_trait::async_trait]
pub trait RuntimeHelper: Send + Sync {
    /// Env, mounts and hostname of one container (volumes are set up before the sync).
    async fn run_container_options(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
    ) -> anyhow::Result<RunContainerOptions>;
    /// The sandbox's cgroup parent (`/kubepods/burstable/pod<uid>` with cgroupfs).
    fn pod_cgroup_parent(&self, pod: &Pod) -> String;
    /// The sandbox's DNS config: (servers, searches, options); None = the host's resolv.conf.
    fn dns_config(&self, pod: &Pod) -> anyhow::Result<Option<DnsConfig>>;
}

/// CRI `DNSConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsConfig {
    pub servers: Vec<String>,
    pub searches: Vec<String>,
    pub options: Vec<String>,
}

/// Inputs of one `sync_pod` besides the pod and its runtime status.
pub struct SyncContext<'a> {
    pub pull_secrets: &'a [Secret],
    pub helper: &'a dyn RuntimeHelper,
    /// Liveness and startup verdicts per container id: a `Failure` restarts the container.
    pub liveness: &'a (dyn Fn(&ContainerId) -> Option<ProbeResult> + Send + Sync),
    pub startup: &'a (dyn Fn(&ContainerId) -> Option<ProbeResult> + Send + Sync),
}

/// One failed step of a sync, with the reason the API shows as a waiting reason
/// (`ErrImagePull`, `ImagePullBackOff`, `CrashLoopBackOff`, `CreateContainerConfigError`,
/// `CreateContainerError`, `RunContainerError`, `InvalidImageName`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncError {
    /// The container's name, or empty for pod-level steps (sandbox, kill).
    pub container: String,
    pub reason: String,
    pub message: String,
}

/// What one sync did and what failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSyncResult {
    pub errors: Vec<SyncError>,
}

/// Output of an `ExecSync` (probes and hooks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

/// The kubelet's handle on the container runtime.
pub struct RuntimeManager {
    options: RuntimeOptions,
}

impl RuntimeManager {
    /// Connects to the runtime and image services and checks the CRI version.
    pub async fn connect(options: RuntimeOptions) -> anyhow::Result<Self> {
        bail!(
            "CRI runtime at {} is not wired up yet",
            options.endpoint
        )
    }

    pub fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    pub async fn version(&self) -> anyhow::Result<RuntimeVersion> {
        bail!("not wired up yet")
    }

    /// Ok when the runtime reports RuntimeReady and NetworkReady.
    pub async fn status(&self) -> anyhow::Result<()> {
        bail!("not wired up yet")
    }

    /// Pods with running sandboxes or containers; `all` includes exited ones.
    pub async fn get_pods(&self, _all: bool) -> anyhow::Result<Vec<RuntimePod>> {
        bail!("not wired up yet")
    }

    pub async fn get_pod_status(
        &self,
        _uid: &str,
        _name: &str,
        _namespace: &str,
    ) -> anyhow::Result<PodRuntimeStatus> {
        bail!("not wired up yet")
    }

    /// Brings the runtime in line with the pod's spec: sandbox, init containers in order,
    /// sidecars, containers; restarts per restartPolicy with CrashLoopBackOff backoff.
    pub async fn sync_pod(
        &self,
        _pod: &Pod,
        _status: &PodRuntimeStatus,
        _ctx: SyncContext<'_>,
    ) -> PodSyncResult {
        PodSyncResult::default()
    }

    /// Stops every container (preStop hooks, grace period, then SIGKILL) and the sandboxes.
    pub async fn kill_pod(
        &self,
        _pod: Option<&Pod>,
        _running: &RuntimePod,
        _grace_period_override: Option<i64>,
    ) -> anyhow::Result<()> {
        bail!("not wired up yet")
    }

    /// Removes exited containers and sandboxes of pods that are gone (container GC).
    pub async fn remove_pod(&self, _uid: &str) -> anyhow::Result<()> {
        bail!("not wired up yet")
    }

    pub async fn exec_sync(
        &self,
        _id: &ContainerId,
        _cmd: &[String],
        _timeout: Duration,
    ) -> anyhow::Result<ExecResult> {
        bail!("not wired up yet")
    }

    /// A streaming URL (the runtime's streaming server) for exec.
    pub async fn get_exec(
        &self,
        _id: &ContainerId,
        _cmd: &[String],
        _stdin: bool,
        _stdout: bool,
        _stderr: bool,
        _tty: bool,
    ) -> anyhow::Result<String> {
        bail!("not wired up yet")
    }

    pub async fn get_attach(
        &self,
        _id: &ContainerId,
        _stdin: bool,
        _stdout: bool,
        _stderr: bool,
        _tty: bool,
    ) -> anyhow::Result<String> {
        bail!("not wired up yet")
    }

    pub async fn get_port_forward(
        &self,
        _sandbox_id: &str,
        _ports: &[i32],
    ) -> anyhow::Result<String> {
        bail!("not wired up yet")
    }
}
