//! The runtime manager: the kubelet's pods driven through CRI (upstream's `kuberuntime`).
//! Owner: the runtime engineer. Other modules use only the API below.

mod actions;
mod backoff;
mod container_config;
mod credentials;
pub(crate) mod cri;
mod events;
mod gc;
mod hooks;
mod image_list;
mod images;
mod kill;
mod labels;
mod logs;
mod pull;
mod resources;
mod sandbox;
mod security;
mod start;
mod status;
mod sync;

pub use actions::{ContainerToKill, KillReason, PodActions, compute_pod_actions};
pub use events::{EventRecorder, RuntimeEvent, api_recorder, field_path, pod_reference};
pub use gc::GcPolicy;
pub use image_list::RuntimeImage;
pub use images::{ImageRef, parse_image};
pub use labels::hash_container;
pub use resources::{QosClass, qos_class};

use crate::container::{
    ContainerId, PodRuntimeStatus, ProbeResult, RunContainerOptions, RuntimePod,
};
use anyhow::Context;
use backoff::Backoff;
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use parking_lot::Mutex;
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
    client: cri::CriClient,
    /// The runtime's type name, the scheme of container ids (`containerd`).
    runtime_name: String,
    /// The host's memory, for the OOM score of burstable containers.
    memory_capacity: i64,
    /// Where `Localhost` seccomp profiles live (`<root-dir>/seccomp`).
    seccomp_profile_root: String,
    /// CrashLoopBackOff per pod and container.
    crash_backoff: Mutex<Backoff>,
    /// ImagePullBackOff per pod and image.
    image_backoff: Mutex<Backoff>,
    pull_lock: tokio::sync::Mutex<()>,
    events: parking_lot::RwLock<Option<EventRecorder>>,
    /// Container GC's period and last run.
    container_gc: Mutex<gc::GcSchedule>,
}

impl RuntimeManager {
    /// Connects to the runtime and image services and checks the CRI version.
    pub async fn connect(options: RuntimeOptions) -> anyhow::Result<Self> {
        let client = cri::CriClient::new(
            &options.endpoint,
            &options.image_endpoint,
            options.request_timeout,
        )?;
        let version = client
            .version()
            .await
            .map_err(|e| anyhow::anyhow!("{}", pull::grpc_error_string(&e)))
            .with_context(|| format!("CRI v1 Version at {}", options.endpoint))?;
        if version.runtime_api_version != cri::CRI_VERSION {
            anyhow::bail!(
                "runtime {} {} speaks CRI {}, the kubelet needs {}",
                version.runtime_name,
                version.runtime_version,
                version.runtime_api_version,
                cri::CRI_VERSION
            );
        }
        Ok(Self {
            options,
            client,
            runtime_name: version.runtime_name,
            memory_capacity: resources::host_memory_capacity(),
            seccomp_profile_root: "/var/lib/kubelet/seccomp".into(),
            crash_backoff: Mutex::new(Backoff::kubelet_default()),
            image_backoff: Mutex::new(Backoff::kubelet_default()),
            pull_lock: tokio::sync::Mutex::new(()),
            events: parking_lot::RwLock::new(None),
            container_gc: Mutex::new(gc::GcSchedule::default()),
        })
    }

    /// `<root-dir>/seccomp`, where `Localhost` seccomp profiles are looked up.
    pub fn set_seccomp_profile_root(&mut self, root: PathBuf) {
        self.seccomp_profile_root = root.to_string_lossy().into_owned();
    }

    pub fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    /// The runtime's type name (`containerd`), the scheme of its container ids.
    pub fn runtime_name(&self) -> &str {
        &self.runtime_name
    }

    pub async fn version(&self) -> anyhow::Result<RuntimeVersion> {
        let v = self.client.version().await.map_err(cri_error)?;
        Ok(RuntimeVersion {
            runtime_name: v.runtime_name,
            runtime_version: v.runtime_version,
            runtime_api_version: v.runtime_api_version,
        })
    }

    /// Ok when the runtime reports RuntimeReady and NetworkReady.
    pub async fn status(&self) -> anyhow::Result<()> {
        let resp = self.client.status().await.map_err(cri_error)?;
        let conditions = resp.status.map(|s| s.conditions).unwrap_or_default();
        for wanted in ["RuntimeReady", "NetworkReady"] {
            match conditions.iter().find(|c| c.r#type == wanted) {
                Some(c) if c.status => {}
                Some(c) => anyhow::bail!(
                    "container runtime is not ready: {wanted}=false reason:{} message:{}",
                    c.reason,
                    c.message
                ),
                None => anyhow::bail!("container runtime status has no {wanted} condition"),
            }
        }
        Ok(())
    }

    /// Pods with running sandboxes or containers; `all` includes exited ones.
    pub async fn get_pods(&self, all: bool) -> anyhow::Result<Vec<RuntimePod>> {
        self.list_pods(all).await
    }

    pub async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> anyhow::Result<PodRuntimeStatus> {
        self.pod_status(uid, name, namespace).await
    }

    /// Brings the runtime in line with the pod's spec: sandbox, init containers in order,
    /// sidecars, containers; restarts per restartPolicy with CrashLoopBackOff backoff.
    pub async fn sync_pod(
        &self,
        pod: &Pod,
        status: &PodRuntimeStatus,
        ctx: SyncContext<'_>,
    ) -> PodSyncResult {
        self.sync_pod_inner(pod, status, ctx).await
    }

    /// Stops every container (preStop hooks, grace period, then SIGKILL) and the sandboxes.
    pub async fn kill_pod(
        &self,
        pod: Option<&Pod>,
        running: &RuntimePod,
        grace_period_override: Option<i64>,
    ) -> anyhow::Result<()> {
        let pod_ip = pod
            .and_then(|p| p.status.as_ref())
            .and_then(|s| s.pod_ip.clone());
        self.kill_pod_inner(pod, running, grace_period_override, pod_ip.as_deref())
            .await
    }

    /// Removes exited containers and sandboxes of pods that are gone (container GC).
    pub async fn remove_pod(&self, uid: &str) -> anyhow::Result<()> {
        self.remove_pod_inner(uid).await
    }

    /// Removes one container (and nothing else), e.g. an old attempt.
    pub async fn remove_container(&self, id: &ContainerId) -> anyhow::Result<()> {
        self.client
            .remove_container(&id.id)
            .await
            .map_err(cri_error)
    }

    pub async fn exec_sync(
        &self,
        id: &ContainerId,
        cmd: &[String],
        timeout: Duration,
    ) -> anyhow::Result<ExecResult> {
        let r = self
            .client
            .exec_sync(&id.id, cmd.to_vec(), timeout)
            .await
            .map_err(cri_error)
            .with_context(|| format!("exec in {id}"))?;
        Ok(ExecResult {
            stdout: r.stdout,
            stderr: r.stderr,
            exit_code: r.exit_code,
        })
    }

    /// A streaming URL (the runtime's streaming server) for exec.
    pub async fn get_exec(
        &self,
        id: &ContainerId,
        cmd: &[String],
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String> {
        self.client
            .exec(k8s_cri::v1::ExecRequest {
                container_id: id.id.clone(),
                cmd: cmd.to_vec(),
                tty,
                stdin,
                stdout,
                stderr,
            })
            .await
            .map_err(cri_error)
    }

    pub async fn get_attach(
        &self,
        id: &ContainerId,
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String> {
        self.client
            .attach(k8s_cri::v1::AttachRequest {
                container_id: id.id.clone(),
                stdin,
                tty,
                stdout,
                stderr,
            })
            .await
            .map_err(cri_error)
    }

    pub async fn get_port_forward(
        &self,
        sandbox_id: &str,
        ports: &[i32],
    ) -> anyhow::Result<String> {
        self.client
            .port_forward(k8s_cri::v1::PortForwardRequest {
                pod_sandbox_id: sandbox_id.to_string(),
                port: ports.to_vec(),
            })
            .await
            .map_err(cri_error)
    }

    /// Images the runtime stores: (id, repo tags, size in bytes), for node status and GC.
    pub async fn list_images(&self) -> anyhow::Result<Vec<(String, Vec<String>, u64)>> {
        let images = self.client.list_images().await.map_err(cri_error)?;
        Ok(images
            .into_iter()
            .map(|i| (i.id, i.repo_tags, i.size))
            .collect())
    }

    /// The image filesystems' (mountpoint, used bytes), for node stats and image GC.
    pub async fn image_fs_usage(&self) -> anyhow::Result<Vec<(String, u64)>> {
        let info = self.client.image_fs_info().await.map_err(cri_error)?;
        Ok(info
            .image_filesystems
            .into_iter()
            .map(|fs| {
                let mountpoint = fs.fs_id.map(|id| id.mountpoint).unwrap_or_default();
                (mountpoint, fs.used_bytes.map_or(0, |b| b.value))
            })
            .collect())
    }

    pub async fn remove_image(&self, image: &str) -> anyhow::Result<()> {
        self.client.remove_image(image).await.map_err(cri_error)
    }
}

fn cri_error(e: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{}", pull::grpc_error_string(&e))
}
