//! The container manager: the host's capacity, node allocatable, and the QoS cgroup hierarchy
//! (`/kubepods`, `/kubepods/burstable`, `/kubepods/besteffort`, per-pod cgroups) with the
//! cgroupfs driver on cgroup v1. Owner: the node engineer.
//!
//! The core builds one [`ContainerManager`] at start ([`ContainerManager::start`] creates the
//! QoS hierarchy), calls [`ContainerManager::ensure_pod_cgroup`] before a pod's sandbox is
//! created, passes [`ContainerManager::pod_cgroup_parent`] to CRI, and calls
//! [`ContainerManager::remove_pod_cgroup`] once the pod's containers are gone.

pub mod cgroupfs;
pub mod qos;

pub use qos::{PodResources, QosClass, compute_qos_class, pod_resources, qos_class};

use crate::app::config::Config;
use cgroupfs::CgroupFs;
use k8s_openapi::api::core::v1::Pod;
use std::path::Path;

/// The prefix of a pod cgroup's name (`pod<uid>`).
pub const POD_CGROUP_PREFIX: &str = "pod";

/// Settings of the cgroup hierarchy, from the KubeletConfiguration.
#[derive(Debug, Clone)]
pub struct CgroupOptions {
    /// `cgroupRoot` ("/" by default): everything the kubelet creates is below it.
    pub cgroup_root: String,
    /// `cgroupsPerQOS`: without it pods get no cgroups of their own.
    pub cgroups_per_qos: bool,
    /// `podPidsLimit` (-1 or 0: none).
    pub pod_pids_limit: i64,
    /// `cpuCFSQuota` and `cpuCFSQuotaPeriod` in microseconds.
    pub cpu_cfs_quota: bool,
    pub cpu_cfs_quota_period_us: u64,
}

impl CgroupOptions {
    pub fn from_config(config: &Config) -> Self {
        let k = &config.kubelet;
        Self {
            cgroup_root: config.cgroup_root(),
            cgroups_per_qos: k.cgroups_per_qos,
            pod_pids_limit: k.pod_pids_limit,
            cpu_cfs_quota: k.cpu_cfs_quota,
            cpu_cfs_quota_period_us: k.cpu_cfs_quota_period.as_micros() as u64,
        }
    }
}

/// The QoS cgroup hierarchy and the pods' cgroups.
#[derive(Debug, Clone)]
pub struct ContainerManager {
    fs: CgroupFs,
    options: CgroupOptions,
}

impl ContainerManager {
    /// Checks for cgroup v1 under `/sys/fs/cgroup` and creates `<root>/kubepods` with its
    /// `burstable` and `besteffort` children.
    pub fn start(options: CgroupOptions) -> anyhow::Result<Self> {
        Self::start_at(Path::new("/sys/fs/cgroup"), options)
    }

    /// [`Self::start`] with another cgroup mount point (tests use a plain directory).
    pub fn start_at(mount: &Path, options: CgroupOptions) -> anyhow::Result<Self> {
        let cm = Self {
            fs: CgroupFs::new(mount)?,
            options,
        };
        if cm.options.cgroups_per_qos {
            cm.fs.create(&cm.kubepods())?;
            for qos in [QosClass::Burstable, QosClass::BestEffort] {
                cm.fs.create(&cm.qos_cgroup(qos))?;
            }
            // Best-effort pods get the least CPU time when the node is busy.
            cm.fs.write(
                "cpu",
                &cm.qos_cgroup(QosClass::BestEffort),
                "cpu.shares",
                &qos::MIN_SHARES.to_string(),
            )?;
        }
        Ok(cm)
    }

    fn join(&self, child: &str) -> String {
        let root = self.options.cgroup_root.trim_end_matches('/');
        format!("{root}/{child}")
    }

    /// `<root>/kubepods`.
    pub fn kubepods(&self) -> String {
        self.join("kubepods")
    }

    /// The cgroup holding the pods of a QoS class (kubepods itself for Guaranteed).
    pub fn qos_cgroup(&self, qos: QosClass) -> String {
        match qos {
            QosClass::Guaranteed => self.kubepods(),
            QosClass::Burstable => format!("{}/burstable", self.kubepods()),
            QosClass::BestEffort => format!("{}/besteffort", self.kubepods()),
        }
    }

    /// The pod's cgroup, the `cgroup_parent` CRI wants: `<root>/kubepods/burstable/pod<uid>`.
    /// Empty without `cgroupsPerQOS` (the runtime's default).
    pub fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        if !self.options.cgroups_per_qos {
            return String::new();
        }
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        format!(
            "{}/{POD_CGROUP_PREFIX}{uid}",
            self.qos_cgroup(qos_class(pod))
        )
    }

    /// Creates the pod's cgroup (if missing) and sets its limits from the pod's resources.
    pub fn ensure_pod_cgroup(&self, pod: &Pod) -> anyhow::Result<()> {
        if !self.options.cgroups_per_qos {
            return Ok(());
        }
        let cgroup = self.pod_cgroup_parent(pod);
        self.fs.create(&cgroup)?;
        let o = &self.options;
        let r = pod_resources(
            pod,
            o.cpu_cfs_quota,
            o.cpu_cfs_quota_period_us,
            o.pod_pids_limit,
        );
        self.fs
            .write("cpu", &cgroup, "cpu.shares", &r.cpu_shares.to_string())?;
        if let Some(quota) = r.cpu_quota {
            self.fs.write(
                "cpu",
                &cgroup,
                "cpu.cfs_period_us",
                &r.cpu_period.to_string(),
            )?;
            self.fs
                .write("cpu", &cgroup, "cpu.cfs_quota_us", &quota.to_string())?;
        }
        if let Some(limit) = r.memory_limit {
            self.fs.write(
                "memory",
                &cgroup,
                "memory.limit_in_bytes",
                &limit.to_string(),
            )?;
        }
        if let Some(pids) = r.pids_limit
            && self.fs.path("pids", &cgroup).is_dir()
        {
            self.fs
                .write("pids", &cgroup, "pids.max", &pids.to_string())?;
        }
        Ok(())
    }

    /// Whether the pod's cgroup exists.
    pub fn pod_cgroup_exists(&self, pod: &Pod) -> bool {
        self.options.cgroups_per_qos && self.fs.exists(&self.pod_cgroup_parent(pod))
    }

    /// The pods that have a cgroup: (uid, cgroup), across the QoS classes.
    pub fn pod_cgroups(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for qos in [
            QosClass::Guaranteed,
            QosClass::Burstable,
            QosClass::BestEffort,
        ] {
            let parent = self.qos_cgroup(qos);
            for child in self.fs.children(&parent) {
                if let Some(uid) = child.strip_prefix(POD_CGROUP_PREFIX) {
                    out.push((uid.to_string(), format!("{parent}/{child}")));
                }
            }
        }
        out
    }

    /// Removes the cgroup of pod `uid` (whatever its QoS class was), killing anything left in
    /// it. Blocking (it waits for killed processes): call it from `spawn_blocking`.
    pub fn remove_pod_cgroup(&self, uid: &str) -> anyhow::Result<()> {
        for (pod_uid, cgroup) in self.pod_cgroups() {
            if pod_uid == uid {
                self.fs.remove(&cgroup)?;
            }
        }
        Ok(())
    }

    /// The underlying hierarchy (reads for stats and tests).
    pub fn cgroupfs(&self) -> &CgroupFs {
        &self.fs
    }
}

#[cfg(test)]
mod tests;
