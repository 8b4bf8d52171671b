//! Raw CRI steps and host checks shared by the kubelet_env tests.

use e2e::containerd::BUSYBOX_IMAGE;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::*;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

pub type Cri = RuntimeServiceClient<Channel>;

/// A hang guard for polls, not a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub async fn poll<T>(what: &str, mut check: impl AsyncFnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => panic!("timed out on {what}: {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

pub struct Pod {
    pub config: PodSandboxConfig,
    pub id: String,
}

/// A sandbox named `name` under the cgroup parent `cgroup_root`/kubepods/besteffort/pod<uid>.
pub async fn run_sandbox(
    cri: &mut Cri,
    logs: &Path,
    cgroup_root: &str,
    name: &str,
    host: bool,
) -> Pod {
    let uid = format!("uid-{name}-{}", std::process::id());
    let log_directory = logs.join(format!("default_{name}_{uid}"));
    std::fs::create_dir_all(&log_directory).unwrap();
    let network = if host {
        NamespaceMode::Node
    } else {
        NamespaceMode::Pod
    };
    let config = PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.into(),
            uid: uid.clone(),
            namespace: "default".into(),
            attempt: 0,
        }),
        // containerd refuses a hostname for a host-network sandbox.
        hostname: if host { String::new() } else { name.into() },
        log_directory: log_directory.display().to_string(),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: format!("{cgroup_root}/kubepods/besteffort/pod{uid}"),
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(NamespaceOption {
                    network: network as i32,
                    pid: NamespaceMode::Container as i32,
                    ipc: NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = cri
        .run_pod_sandbox(RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .unwrap_or_else(|e| panic!("RunPodSandbox {name}: {e}"))
        .into_inner()
        .pod_sandbox_id;
    Pod { config, id }
}

pub async fn sandbox_ip(cri: &mut Cri, pod: &Pod) -> String {
    let status = cri
        .pod_sandbox_status(PodSandboxStatusRequest {
            pod_sandbox_id: pod.id.clone(),
            verbose: false,
        })
        .await
        .expect("PodSandboxStatus")
        .into_inner()
        .status
        .expect("a status");
    assert_eq!(status.state, PodSandboxState::SandboxReady as i32);
    status.network.map(|n| n.ip).unwrap_or_default()
}

/// Creates and starts a busybox container running `script`, returning its id.
pub async fn run_busybox(cri: &mut Cri, pod: &Pod, name: &str, script: &str) -> String {
    let config = ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        image: Some(ImageSpec {
            image: BUSYBOX_IMAGE.into(),
            ..Default::default()
        }),
        command: vec!["sh".into(), "-c".into(), script.into()],
        log_path: format!("{name}/0.log"),
        ..Default::default()
    };
    let id = cri
        .create_container(CreateContainerRequest {
            pod_sandbox_id: pod.id.clone(),
            config: Some(config),
            sandbox_config: Some(pod.config.clone()),
        })
        .await
        .unwrap_or_else(|e| panic!("CreateContainer {name}: {e}"))
        .into_inner()
        .container_id;
    cri.start_container(StartContainerRequest {
        container_id: id.clone(),
    })
    .await
    .unwrap_or_else(|e| panic!("StartContainer {name}: {e}"));
    id
}

/// Waits for `line` on stdout in the CRI log file, checking each line's format.
pub async fn wait_for_log_line(pod: &Pod, container: &str, line: &str) {
    let path = Path::new(&pod.config.log_directory).join(format!("{container}/0.log"));
    poll(&format!("{line:?} in {}", path.display()), async || {
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        for entry in text.lines() {
            let mut parts = entry.splitn(4, ' ');
            let (time, stream, tag, msg) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            assert!(
                time.parse::<jiff::Timestamp>().is_ok() && ["stdout", "stderr"].contains(&stream),
                "not a CRI log line: {entry:?}"
            );
            if stream == "stdout" && tag == "F" && msg == line {
                return Ok(());
            }
        }
        Err(text)
    })
    .await;
}

/// The container's host pid (from containerd's verbose status).
pub async fn container_pid(cri: &mut Cri, id: &str) -> u32 {
    let resp = cri
        .container_status(ContainerStatusRequest {
            container_id: id.into(),
            verbose: true,
        })
        .await
        .expect("ContainerStatus")
        .into_inner();
    let status = resp.status.expect("a status");
    assert_eq!(status.state, ContainerState::ContainerRunning as i32);
    let info: serde_json::Value =
        serde_json::from_str(resp.info.get("info").expect("verbose info")).expect("json");
    info["pid"].as_u64().expect("a pid") as u32
}

pub async fn stop_and_remove(cri: &mut Cri, pod: &Pod, containers: &[String]) {
    for id in containers {
        cri.stop_container(StopContainerRequest {
            container_id: id.clone(),
            timeout: 1,
        })
        .await
        .expect("StopContainer");
        cri.remove_container(RemoveContainerRequest {
            container_id: id.clone(),
        })
        .await
        .expect("RemoveContainer");
    }
    cri.stop_pod_sandbox(StopPodSandboxRequest {
        pod_sandbox_id: pod.id.clone(),
    })
    .await
    .expect("StopPodSandbox");
    cri.remove_pod_sandbox(RemovePodSandboxRequest {
        pod_sandbox_id: pod.id.clone(),
    })
    .await
    .expect("RemovePodSandbox");
}

pub fn in_subnet(ip: &str, subnet: &str) -> bool {
    let (net, bits) = subnet.split_once('/').expect("a CIDR");
    let (Ok(ip), Ok(net), Ok(bits)) = (
        ip.parse::<Ipv4Addr>(),
        net.parse::<Ipv4Addr>(),
        bits.parse::<u32>(),
    ) else {
        return false;
    };
    let mask = u32::MAX << (32 - bits);
    u32::from(ip) & mask == u32::from(net) & mask
}

/// A cgroup root of the test's own, removed (deepest first, every hierarchy) on drop.
pub struct CgroupRoot(pub String);

impl CgroupRoot {
    pub fn new() -> Self {
        Self(format!("/kt-env-{}-{}", std::process::id(), rand_suffix()))
    }
}

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        e2e::kubelet::remove_cgroup_tree(&self.0);
    }
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default()
}

pub fn mounts_under(dir: &Path) -> Vec<String> {
    let prefix = format!("{}/", dir.display());
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

pub fn is_zombie_or_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}
