//! The narrow calls the kubelet core makes into the volume manager and the container
//! manager, so the core runs (with no volumes, cgroups left to the runtime) until those
//! modules are wired, and tests can stand them in.

use crate::container::Mount;
use k8s_openapi::api::core::v1::{Container, Pod};

/// Pod volumes on the host.
#[async_trait::async_trait]
pub trait VolumeHost: Send + Sync {
    /// Sets up (or refreshes) every volume of the pod; called before each sync.
    async fn mount_pod(&self, pod: &Pod) -> anyhow::Result<()>;
    /// Tears the pod's volumes down.
    async fn unmount_pod(&self, uid: &str) -> anyhow::Result<()>;
    /// The bind mounts of one container (volumeMounts, /etc/hosts, termination log).
    async fn container_mounts(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
        envs: &[(String, String)],
    ) -> anyhow::Result<Vec<Mount>>;
}

/// The pod cgroups (QoS hierarchy).
#[async_trait::async_trait]
pub trait CgroupHost: Send + Sync {
    /// Creates the pod's cgroup (and its QoS parent) with its limits.
    async fn ensure_pod_cgroup(&self, pod: &Pod) -> anyhow::Result<()>;
    /// The sandbox's cgroup parent (cgroupfs path).
    fn pod_cgroup_parent(&self, pod: &Pod) -> String;
    /// Removes the cgroup of a pod that is gone.
    async fn remove_pod_cgroup(&self, uid: &str) -> anyhow::Result<()>;
    /// Removes pod cgroups whose uid is not in `keep`.
    async fn cleanup(&self, keep: &std::collections::HashSet<String>) -> anyhow::Result<()>;
}

/// No volumes: containers get no extra mounts.
pub struct NoVolumes;

#[async_trait::async_trait]
impl VolumeHost for NoVolumes {
    async fn mount_pod(&self, _pod: &Pod) -> anyhow::Result<()> {
        Ok(())
    }

    async fn unmount_pod(&self, _uid: &str) -> anyhow::Result<()> {
        Ok(())
    }

    async fn container_mounts(
        &self,
        _pod: &Pod,
        _c: &Container,
        _ips: &[String],
        _envs: &[(String, String)],
    ) -> anyhow::Result<Vec<Mount>> {
        Ok(Vec::new())
    }
}

/// Pod cgroups named as upstream's cgroupfs driver names them under `cgroup_root`; the
/// runtime (runc) creates them with the sandbox.
pub struct RuntimeCgroups {
    pub cgroup_root: String,
}

impl RuntimeCgroups {
    fn qos_dir(pod: &Pod) -> &'static str {
        match crate::status::qos::qos_class(pod) {
            "Guaranteed" => "",
            "Burstable" => "/burstable",
            _ => "/besteffort",
        }
    }
}

#[async_trait::async_trait]
impl CgroupHost for RuntimeCgroups {
    async fn ensure_pod_cgroup(&self, _pod: &Pod) -> anyhow::Result<()> {
        Ok(())
    }

    fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        let root = self.cgroup_root.trim_end_matches('/');
        format!(
            "{root}/kubepods{}/pod{}",
            Self::qos_dir(pod),
            pod.metadata.uid.as_deref().unwrap_or_default()
        )
    }

    async fn remove_pod_cgroup(&self, _uid: &str) -> anyhow::Result<()> {
        Ok(())
    }

    async fn cleanup(&self, _keep: &std::collections::HashSet<String>) -> anyhow::Result<()> {
        Ok(())
    }
}

#[async_trait::async_trait]
impl VolumeHost for crate::volumemanager::VolumeManager {
    async fn mount_pod(&self, pod: &Pod) -> anyhow::Result<()> {
        self.mount_pod_volumes(pod).await
    }

    async fn unmount_pod(&self, uid: &str) -> anyhow::Result<()> {
        self.unmount_pod_volumes(uid).await
    }

    async fn container_mounts(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
        envs: &[(String, String)],
    ) -> anyhow::Result<Vec<Mount>> {
        crate::volumemanager::VolumeManager::container_mounts(self, pod, container, pod_ips, envs)
    }
}

#[async_trait::async_trait]
impl CgroupHost for crate::cm::ContainerManager {
    async fn ensure_pod_cgroup(&self, pod: &Pod) -> anyhow::Result<()> {
        crate::cm::ContainerManager::ensure_pod_cgroup(self, pod)
    }

    fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        crate::cm::ContainerManager::pod_cgroup_parent(self, pod)
    }

    async fn remove_pod_cgroup(&self, uid: &str) -> anyhow::Result<()> {
        let cm = self.clone();
        let uid = uid.to_string();
        tokio::task::spawn_blocking(move || cm.remove_pod_cgroup(&uid)).await?
    }

    async fn cleanup(&self, keep: &std::collections::HashSet<String>) -> anyhow::Result<()> {
        for (uid, _) in self.pod_cgroups() {
            if !keep.contains(&uid) {
                CgroupHost::remove_pod_cgroup(self, &uid).await?;
            }
        }
        Ok(())
    }
}
