//! Building the summary: the serde shape of `stats/v1alpha1` and the readers behind it.

use super::cgroup::{self, CgroupStats};
use super::proc;
use crate::container::ContainerState;
use crate::server::host::HostInterface;
use jiff::Timestamp;
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub node: NodeStats,
    pub pods: Vec<PodStats>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    pub node_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    pub cpu: Option<CpuStats>,
    pub memory: Option<MemoryStats>,
    pub network: Option<NetworkStats>,
    pub fs: Option<FsStats>,
    pub runtime: Option<RuntimeStats>,
    pub rlimit: Option<RlimitStats>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    pub time: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_nano_cores: Option<u64>,
    pub usage_core_nano_seconds: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    pub time: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    pub usage_bytes: u64,
    pub working_set_bytes: u64,
    pub rss_bytes: u64,
    pub page_faults: u64,
    pub major_page_faults: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceStats {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_errors: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStats {
    pub time: Timestamp,
    #[serde(flatten)]
    pub default: InterfaceStats,
    pub interfaces: Vec<InterfaceStats>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FsStats {
    pub time: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    pub used_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_free: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes: Option<u64>,
    pub inodes_used: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    pub image_fs: Option<FsStats>,
    pub container_fs: Option<FsStats>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RlimitStats {
    pub time: Timestamp,
    pub maxpid: u64,
    pub curproc: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReference {
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    pub cpu: Option<CpuStats>,
    pub memory: Option<MemoryStats>,
    pub logs: Option<FsStats>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessStats {
    pub process_count: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    pub pod_ref: PodReference,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    pub containers: Vec<ContainerStats>,
    pub cpu: Option<CpuStats>,
    pub memory: Option<MemoryStats>,
    pub network: Option<NetworkStats>,
    #[serde(rename = "ephemeral-storage")]
    pub ephemeral_storage: Option<FsStats>,
    pub process_stats: Option<ProcessStats>,
}

/// CPU rates need two readings: the last reading of each cgroup, kept between requests.
#[derive(Default)]
pub struct CpuSampler {
    last: Mutex<HashMap<String, (Instant, u64)>>,
}

/// A rate over a window shorter than this is too noisy to report.
const MIN_WINDOW: Duration = Duration::from_millis(50);
/// Readings older than this are forgotten (their cgroups are likely gone).
const FORGET_AFTER: Duration = Duration::from_secs(600);

impl CpuSampler {
    /// Records `usage` of `cgroup` now and returns the rate since the previous reading.
    fn rate(&self, cgroup: &str, usage: u64) -> Option<u64> {
        let now = Instant::now();
        let mut last = self.last.lock();
        let prev = last.get(cgroup).copied();
        match prev {
            Some((at, _)) if now.duration_since(at) < MIN_WINDOW => {
                // Keep the older reading so the next request gets a longer window.
                return None;
            }
            _ => {}
        }
        last.insert(cgroup.to_string(), (now, usage));
        let (at, before) = prev?;
        let ns = now.duration_since(at).as_nanos();
        let delta = u128::from(usage.checked_sub(before)?);
        u64::try_from(delta * 1_000_000_000 / ns.max(1)).ok()
    }

    fn knows(&self, cgroup: &str) -> bool {
        self.last.lock().contains_key(cgroup)
    }

    fn forget_old(&self) {
        let now = Instant::now();
        self.last
            .lock()
            .retain(|_, (at, _)| now.duration_since(*at) < FORGET_AFTER);
    }
}

fn cpu(now: Timestamp, sampler: &CpuSampler, cgroup: &str, s: &CgroupStats) -> CpuStats {
    CpuStats {
        time: now,
        usage_nano_cores: sampler.rate(cgroup, s.cpu_usage_ns),
        usage_core_nano_seconds: s.cpu_usage_ns,
    }
}

fn memory(now: Timestamp, s: &CgroupStats, limit: Option<u64>) -> MemoryStats {
    MemoryStats {
        time: now,
        available_bytes: limit.map(|l| l.saturating_sub(s.working_set)),
        usage_bytes: s.memory_usage,
        working_set_bytes: s.working_set,
        rss_bytes: s.rss,
        page_faults: s.page_faults,
        major_page_faults: s.major_page_faults,
    }
}

fn fs(now: Timestamp, s: proc::FsStats) -> FsStats {
    FsStats {
        time: now,
        available_bytes: Some(s.available),
        capacity_bytes: Some(s.capacity),
        used_bytes: s.used,
        inodes_free: Some(s.inodes_free),
        inodes: Some(s.inodes),
        inodes_used: s.inodes.saturating_sub(s.inodes_free),
    }
}

/// Usage of a directory on the file system `on`: used from a walk, capacity from statvfs.
fn dir_usage(now: Timestamp, dir: &Path, on: Option<proc::FsStats>) -> FsStats {
    let (used, inodes_used) = proc::disk_usage(dir);
    FsStats {
        time: now,
        available_bytes: on.map(|f| f.available),
        capacity_bytes: on.map(|f| f.capacity),
        used_bytes: used,
        inodes_free: on.map(|f| f.inodes_free),
        inodes: on.map(|f| f.inodes),
        inodes_used,
    }
}

fn network(now: Timestamp, interfaces: Vec<proc::Interface>) -> Option<NetworkStats> {
    let to = |i: &proc::Interface| InterfaceStats {
        name: i.name.clone(),
        rx_bytes: i.rx_bytes,
        rx_errors: i.rx_errors,
        tx_bytes: i.tx_bytes,
        tx_errors: i.tx_errors,
    };
    // cAdvisor's default interface is eth0 when there is one.
    let default = interfaces
        .iter()
        .find(|i| i.name == "eth0")
        .or(interfaces.first())?;
    Some(NetworkStats {
        time: now,
        default: to(default),
        interfaces: interfaces.iter().map(to).collect(),
    })
}

fn parse_time(
    t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<Timestamp> {
    t.map(|t| t.0)
}

/// The cgroups of the node, each pod and each running container, with their CPU readings
/// taken so that every one has a rate: cgroups seen for the first time are read twice.
async fn warm_up(sampler: &CpuSampler, cgroups: &[String]) {
    let fresh: Vec<&String> = cgroups.iter().filter(|c| !sampler.knows(c)).collect();
    if fresh.is_empty() {
        return;
    }
    for c in &fresh {
        if let Some(s) = cgroup::read(c) {
            sampler.rate(c, s.cpu_usage_ns);
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

struct PodPlan {
    pod: Arc<k8s_openapi::api::core::v1::Pod>,
    cgroup: Option<String>,
    /// (name, cgroup, start time) of each running container.
    containers: Vec<(String, String, Option<Timestamp>)>,
}

pub async fn summarize(host: &Arc<dyn HostInterface>, sampler: &Arc<CpuSampler>) -> Summary {
    sampler.forget_old();
    let runtime = host.runtime();
    let mut plans = Vec::new();
    for pod in host.pods() {
        let cgroup = host.pod_cgroup(&pod);
        let meta = &pod.metadata;
        let (uid, name, ns) = (
            meta.uid.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
            meta.namespace.clone().unwrap_or_else(|| "default".into()),
        );
        let mut containers = Vec::new();
        if let (Some(parent), Ok(status)) =
            (&cgroup, runtime.get_pod_status(&uid, &name, &ns).await)
        {
            let mut seen = std::collections::HashSet::new();
            for c in &status.containers {
                if c.state == ContainerState::Running && seen.insert(c.name.clone()) {
                    let started = (c.started_at > 0)
                        .then(|| Timestamp::from_nanosecond(i128::from(c.started_at)).ok())
                        .flatten();
                    containers.push((
                        c.name.clone(),
                        format!("{}/{}", parent.trim_end_matches('/'), c.id.id),
                        started,
                    ));
                }
            }
        }
        plans.push(PodPlan {
            pod,
            cgroup,
            containers,
        });
    }
    let mut all: Vec<String> = vec!["/".to_string()];
    for p in &plans {
        all.extend(p.cgroup.clone());
        all.extend(p.containers.iter().map(|(_, c, _)| c.clone()));
    }
    warm_up(sampler, &all).await;

    let sampler = sampler.clone();
    let host = host.clone();
    let read = move || build(host.as_ref(), &sampler, plans);
    tokio::task::spawn_blocking(read)
        .await
        .unwrap_or_else(|_| Summary {
            node: empty_node(String::new()),
            pods: Vec::new(),
        })
}

fn empty_node(name: String) -> NodeStats {
    NodeStats {
        node_name: name,
        start_time: None,
        cpu: None,
        memory: None,
        network: None,
        fs: None,
        runtime: None,
        rlimit: None,
    }
}

fn build(host: &dyn HostInterface, sampler: &CpuSampler, plans: Vec<PodPlan>) -> Summary {
    let now = Timestamp::now();
    let mut node = empty_node(host.node_name());
    node.start_time = proc::boot_time();
    let mem_total = proc::meminfo().ok().map(|m| m.total);
    if let Some(root) = cgroup::read("/") {
        node.cpu = Some(cpu(now, sampler, "/", &root));
        node.memory = Some(memory(now, &root, mem_total));
    }
    node.network = network(now, proc::interfaces());
    let root_fs = proc::statvfs(&host.root_dir()).ok();
    node.fs = root_fs.map(|f| fs(now, f));
    let image_dir = Path::new("/var/lib/containerd");
    let image_fs = proc::statvfs(image_dir).ok().or(root_fs);
    node.runtime = Some(RuntimeStats {
        image_fs: image_fs.map(|f| fs(now, f)),
        container_fs: image_fs.map(|f| fs(now, f)),
    });
    let (maxpid, curproc) = proc::rlimit();
    node.rlimit = Some(RlimitStats {
        time: now,
        maxpid,
        curproc,
    });

    let logs_dir = host.pod_logs_dir();
    let logs_fs = proc::statvfs(&logs_dir).ok().or(root_fs);
    let pods = plans
        .into_iter()
        .map(|plan| {
            let meta = &plan.pod.metadata;
            let pod_ref = PodReference {
                name: meta.name.clone().unwrap_or_default(),
                namespace: meta.namespace.clone().unwrap_or_else(|| "default".into()),
                uid: meta.uid.clone().unwrap_or_default(),
            };
            let pod_logs = logs_dir.join(format!(
                "{}_{}_{}",
                pod_ref.namespace, pod_ref.name, pod_ref.uid
            ));
            let containers = plan
                .containers
                .iter()
                .map(|(name, cg, started)| {
                    let stats = cgroup::read(cg);
                    ContainerStats {
                        name: name.clone(),
                        start_time: *started,
                        cpu: stats.as_ref().map(|s| cpu(now, sampler, cg, s)),
                        memory: stats.as_ref().map(|s| memory(now, s, s.memory_limit)),
                        logs: Some(dir_usage(now, &pod_logs.join(name), logs_fs)),
                    }
                })
                .collect();
            let stats = plan.cgroup.as_deref().and_then(cgroup::read);
            let pids = plan
                .cgroup
                .as_deref()
                .map(cgroup::procs)
                .unwrap_or_default();
            let pod_dir = host.root_dir().join("pods").join(&pod_ref.uid);
            let mut ephemeral = dir_usage(now, &pod_dir, root_fs);
            let logs = dir_usage(now, &pod_logs, logs_fs);
            ephemeral.used_bytes += logs.used_bytes;
            ephemeral.inodes_used += logs.inodes_used;
            // The sandbox's network namespace is that of any process in the pod.
            let net = pids
                .first()
                .and_then(|pid| network(now, proc::interfaces_of(*pid)));
            PodStats {
                start_time: parse_time(
                    plan.pod.status.as_ref().and_then(|s| s.start_time.as_ref()),
                ),
                pod_ref,
                containers,
                cpu: stats
                    .as_ref()
                    .map(|s| cpu(now, sampler, plan.cgroup.as_deref().unwrap_or("/"), s)),
                memory: stats.as_ref().map(|s| memory(now, s, s.memory_limit)),
                network: net,
                ephemeral_storage: Some(ephemeral),
                process_stats: stats.map(|_| ProcessStats {
                    process_count: pids.len() as u64,
                }),
            }
        })
        .collect();
    Summary { node, pods }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_need_two_readings_far_enough_apart() {
        let s = CpuSampler::default();
        assert_eq!(s.rate("/a", 1_000), None);
        // Too soon: no rate, and the first reading is kept.
        assert_eq!(s.rate("/a", 2_000), None);
        std::thread::sleep(Duration::from_millis(120));
        let r = s.rate("/a", 1_000 + 60_000_000).expect("a rate");
        // 60 ms of CPU over ~120 ms: about half a core.
        assert!((300_000_000..=520_000_000).contains(&r), "{r}");
        // A counter going backwards (a recreated cgroup) gives no rate.
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(s.rate("/a", 5), None);
    }
}
