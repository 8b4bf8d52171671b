//! Measuring the signals and the pods, as upstream reads them from cAdvisor and CRI:
//! `memory.available` is the node's memory capacity minus the root memory cgroup's working
//! set (usage minus inactive file pages), `allocatableMemory.available` the same on the
//! kubelet's `kubepods` cgroup against capacity minus reservations, the filesystem signals
//! statvfs of the kubelet's root dir (nodefs) and of the runtime's image filesystem (imagefs),
//! `pid.available` pid_max minus the processes running. A pod's memory is its cgroup's working
//! set, its ephemeral storage its logs plus its disk-backed emptyDir volumes.

use super::rank::{ContainerUsage, PodUsage};
use super::signals::{Observation, Observations, Signal};
use crate::server::stats::proc;
use k8s_openapi::api::core::v1::Pod;
use std::path::{Path, PathBuf};

/// Where the figures are read.
#[derive(Debug, Clone)]
pub struct Sources {
    /// Where the cgroup v1 hierarchies are mounted (`/sys/fs/cgroup`).
    pub cgroup_mount: PathBuf,
    /// The kubelet's `<cgroupRoot>/kubepods` cgroup.
    pub kubepods: String,
    pub root_dir: PathBuf,
    pub pod_logs_dir: PathBuf,
    /// MemTotal, bytes.
    pub memory_capacity: u64,
    /// Memory capacity minus kubeReserved and systemReserved: what `kubepods` may use.
    pub pods_memory: u64,
}

/// A memory cgroup's working set: usage minus `total_inactive_file` (never negative).
pub fn working_set(usage: u64, memory_stat: &str) -> u64 {
    usage.saturating_sub(crate::server::stats::cgroup::stat_field(
        memory_stat,
        "total_inactive_file",
    ))
}

fn cgroup_dir(mount: &Path, controller: &str, cgroup: &str) -> PathBuf {
    mount.join(controller).join(cgroup.trim_start_matches('/'))
}

/// The working set of a cgroup, None when it does not exist.
pub fn cgroup_working_set(mount: &Path, cgroup: &str) -> Option<u64> {
    let dir = cgroup_dir(mount, "memory", cgroup);
    let usage: u64 = std::fs::read_to_string(dir.join("memory.usage_in_bytes"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
    Some(working_set(usage, &stat))
}

/// An amount available out of a capacity, never below zero.
pub fn available(capacity: u64, used: u64) -> Observation {
    Observation {
        available: i128::from(capacity.saturating_sub(used)),
        capacity: i128::from(capacity),
    }
}

fn filesystem(path: &Path) -> Option<(Observation, Observation)> {
    let mut probe = path;
    while !probe.exists() {
        probe = probe.parent()?;
    }
    let fs = proc::statvfs(probe).ok()?;
    Some((
        Observation {
            available: i128::from(fs.available),
            capacity: i128::from(fs.capacity),
        },
        Observation {
            available: i128::from(fs.inodes_free),
            capacity: i128::from(fs.inodes),
        },
    ))
}

/// Observes every signal it can; a signal that cannot be read is left out (its threshold is
/// then never met), as upstream skips signals without stats.
pub fn observe(src: &Sources, image_fs: Option<&Path>) -> Observations {
    let mut out = Observations::new();
    if let Some(ws) = cgroup_working_set(&src.cgroup_mount, "/") {
        out.insert(Signal::MemoryAvailable, available(src.memory_capacity, ws));
    }
    if let Some(ws) = cgroup_working_set(&src.cgroup_mount, &src.kubepods) {
        out.insert(
            Signal::AllocatableMemoryAvailable,
            available(src.pods_memory, ws),
        );
    }
    if let Some((bytes, inodes)) = filesystem(&src.root_dir) {
        out.insert(Signal::NodeFsAvailable, bytes);
        out.insert(Signal::NodeFsInodesFree, inodes);
    }
    // Without a separate image filesystem, imagefs and containerfs are the nodefs.
    let image = image_fs
        .and_then(filesystem)
        .or_else(|| filesystem(&src.root_dir));
    if let Some((bytes, inodes)) = image {
        out.insert(Signal::ImageFsAvailable, bytes);
        out.insert(Signal::ImageFsInodesFree, inodes);
        out.insert(Signal::ContainerFsAvailable, bytes);
        out.insert(Signal::ContainerFsInodesFree, inodes);
    }
    let (pid_max, running) = proc::rlimit();
    if pid_max > 0 {
        out.insert(Signal::PidAvailable, available(pid_max, running));
    }
    out
}

/// The pod's cgroup under `kubepods`, whatever its QoS class.
pub fn pod_cgroup(src: &Sources, uid: &str) -> Option<String> {
    ["", "/burstable", "/besteffort"]
        .iter()
        .map(|qos| format!("{}{qos}/pod{uid}", src.kubepods.trim_end_matches('/')))
        .find(|cg| cgroup_dir(&src.cgroup_mount, "memory", cg).is_dir())
}

fn du(path: &Path) -> (u64, u64) {
    if path.exists() {
        proc::disk_usage(path)
    } else {
        (0, 0)
    }
}

/// The pod's usage: memory and processes from its cgroup (and each container's from the
/// runtime's child cgroups, `containers` being (name, id)), logs and disk-backed emptyDirs.
pub fn pod_usage(src: &Sources, pod: &Pod, containers: &[(String, String)]) -> PodUsage {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let cgroup = pod_cgroup(src, uid);
    let memory = cgroup
        .as_deref()
        .and_then(|cg| cgroup_working_set(&src.cgroup_mount, cg));
    let processes = cgroup.as_deref().and_then(|cg| {
        std::fs::read_to_string(cgroup_dir(&src.cgroup_mount, "pids", cg).join("pids.current"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    // Upstream's BuildPodLogsDirectory.
    let logs = src.pod_logs_dir.join(format!(
        "{}_{}_{uid}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    ));
    let (log_bytes, log_inodes) = du(&logs);
    let memory_backed: Vec<&str> = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter(|v| {
            v.empty_dir
                .as_ref()
                .is_some_and(|e| e.medium.as_deref() == Some("Memory"))
        })
        .map(|v| v.name.as_str())
        .collect();
    let empty_dirs = src
        .root_dir
        .join("pods")
        .join(uid)
        .join("volumes")
        .join(crate::volumemanager::EMPTY_DIR);
    let (mut volume_bytes, mut volume_inodes) = (0, 0);
    let mut volumes = Vec::new();
    for entry in std::fs::read_dir(&empty_dirs)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let (b, i) = du(&entry.path());
        volumes.push((name.clone(), b));
        // Memory-backed volumes are memory, not ephemeral storage.
        if !memory_backed.contains(&name.as_str()) {
            volume_bytes += b;
            volume_inodes += i;
        }
    }
    let containers = containers
        .iter()
        .map(|(name, id)| ContainerUsage {
            name: name.clone(),
            memory: cgroup
                .as_deref()
                .and_then(|cg| cgroup_working_set(&src.cgroup_mount, &format!("{cg}/{id}"))),
            ephemeral: Some(du(&logs.join(name)).0),
        })
        .collect();
    PodUsage {
        memory,
        ephemeral: Some(log_bytes + volume_bytes),
        inodes: Some(log_inodes + volume_inodes),
        processes,
        containers,
        empty_dirs: volumes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_sets() {
        let stat = "cache 100\ntotal_inactive_file 300\ninactive_file 7\n";
        let cases = [(1000, stat, 700), (200, stat, 0), (1000, "", 1000)];
        for (usage, stat, want) in cases {
            assert_eq!(working_set(usage, stat), want, "{usage} {stat:?}");
        }
        assert_eq!(
            available(100, 30),
            Observation {
                available: 70,
                capacity: 100
            }
        );
        assert_eq!(available(100, 300).available, 0);
    }

    #[test]
    fn a_fake_hierarchy() {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("cgroup");
        let pod_cg = "/kt/kubepods/besteffort/poduid1";
        for cg in ["", "/kt/kubepods", pod_cg, &format!("{pod_cg}/cid")] {
            let d = cgroup_dir(&mount, "memory", cg);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("memory.usage_in_bytes"), "1000\n").unwrap();
            std::fs::write(d.join("memory.stat"), "total_inactive_file 100\n").unwrap();
        }
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(logs.join("ns_p_uid1/main")).unwrap();
        std::fs::write(logs.join("ns_p_uid1/main/0.log"), vec![b'x'; 8192]).unwrap();
        let src = Sources {
            cgroup_mount: mount,
            kubepods: "/kt/kubepods".into(),
            root_dir: dir.path().join("root"),
            pod_logs_dir: logs,
            memory_capacity: 10_000,
            pods_memory: 2_000,
        };
        let obs = observe(&src, None);
        assert_eq!(obs[&Signal::MemoryAvailable].available, 9_100);
        assert_eq!(obs[&Signal::AllocatableMemoryAvailable].available, 1_100);
        assert!(obs[&Signal::NodeFsAvailable].capacity > 0);
        assert_eq!(
            obs[&Signal::ImageFsAvailable].capacity,
            obs[&Signal::NodeFsAvailable].capacity
        );
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "uid1"},
        }))
        .unwrap();
        assert_eq!(pod_cgroup(&src, "uid1").as_deref(), Some(pod_cg));
        let u = pod_usage(&src, &pod, &[("main".into(), "cid".into())]);
        assert_eq!(u.memory, Some(900));
        assert_eq!(u.containers[0].memory, Some(900));
        assert!(u.ephemeral.unwrap() >= 8192, "{u:?}");
        assert!(u.containers[0].ephemeral.unwrap() >= 8192);
        assert!(u.empty_dirs.is_empty());
        let other = pod_usage(&src, &Pod::default(), &[]);
        assert_eq!(other.memory, None);
    }
}
