//! The eviction manager (upstream's `pkg/kubelet/eviction`): every monitoring period it
//! observes the signals, raises MemoryPressure, DiskPressure and PIDPressure while a threshold
//! is crossed (held for `evictionPressureTransitionPeriod` after), evicts pods over their local
//! storage limits, and for a threshold met (hard at once, soft after its grace period, until
//! its minimum reclaim is available) first reclaims node-level resources for disk signals,
//! then evicts one pod ranked as upstream and waits for it to be cleaned up.
//!
//! The kubelet's core implements [`EvictionHost`] (`kubelet/evict.rs`); the node status takes
//! its pressure conditions through [`PressureSink`]; admission reads them from the Node.

pub mod config;
pub mod local_storage;
pub mod manager;
pub mod message;
pub mod observe;
pub mod rank;
pub mod signals;

pub use manager::EvictionManager;

use crate::app::config::Config;
use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use signals::{Condition, Threshold};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Upstream's `evictionMonitoringPeriod` (the housekeeping interval).
pub const MONITORING_PERIOD: Duration = Duration::from_secs(10);
/// How long an evicted pod's resources are waited for before looking again.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

/// What the manager needs from the kubelet's core.
#[async_trait::async_trait]
pub trait EvictionHost: Send + Sync + 'static {
    /// The pods admitted and not yet terminating: the candidates.
    fn active_pods(&self) -> Vec<Arc<Pod>>;
    /// The pod's containers the runtime knows: (name, id).
    fn containers(&self, uid: &str) -> Vec<(String, String)>;
    /// Kills the pod with `grace` seconds after recording `message` as its eviction status
    /// (with a `DisruptionTarget` condition for evictions under node pressure).
    async fn evict(
        &self,
        pod: &Arc<Pod>,
        message: &str,
        disruption_condition: bool,
        grace: i64,
    ) -> anyhow::Result<()>;
    /// Whether the pod's containers are stopped and its volumes and cgroup released.
    fn pod_cleaned_up(&self, uid: &str) -> bool;
    /// The runtime's image filesystem (CRI ImageFsInfo), None when it does not say.
    async fn image_fs(&self) -> Option<PathBuf>;
}

/// Frees node-level disk before pods are evicted; the image garbage collector implements it.
#[async_trait::async_trait]
pub trait ImageReclaimer: Send + Sync {
    /// Deletes every image no container uses; the bytes freed.
    async fn delete_unused_images(&self) -> anyhow::Result<u64>;
}

/// Where the pressure conditions in force go (the node status).
pub trait PressureSink: Send + Sync {
    fn set_pressure(&self, conditions: &BTreeSet<Condition>);
}

/// The manager's settings.
#[derive(Debug, Clone)]
pub struct EvictionOptions {
    pub thresholds: Vec<Threshold>,
    /// `evictionMaxPodGracePeriod`: the longest grace a pod gets when a soft threshold
    /// evicts it (hard thresholds kill at once).
    pub max_pod_grace_period: i64,
    pub transition_period: Duration,
    pub monitoring_period: Duration,
    pub cleanup_timeout: Duration,
    pub sources: observe::Sources,
}

impl EvictionOptions {
    /// From the kubelet's configuration and the machine's memory.
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let machine = crate::nodestatus::machine::MachineInfo::read()
            .context("reading the machine's memory for the eviction manager")?;
        let reserved: i128 = [&config.kube_reserved, &config.system_reserved]
            .iter()
            .filter_map(|l| l.get("memory"))
            .map(|q| q.value())
            .sum();
        let pods_memory = (i128::from(machine.memory_bytes) - reserved).max(0);
        Ok(Self {
            thresholds: self::config::thresholds(config)?,
            max_pod_grace_period: i64::from(config.kubelet.eviction_max_pod_grace_period),
            transition_period: config.kubelet.eviction_pressure_transition_period,
            monitoring_period: MONITORING_PERIOD,
            cleanup_timeout: CLEANUP_TIMEOUT,
            sources: observe::Sources {
                cgroup_mount: PathBuf::from("/sys/fs/cgroup"),
                kubepods: format!("{}/kubepods", config.cgroup_root().trim_end_matches('/')),
                root_dir: config.root_dir.clone(),
                pod_logs_dir: config.pod_logs_dir(),
                memory_capacity: machine.memory_bytes,
                pods_memory: u64::try_from(pods_memory).unwrap_or(0),
            },
        })
    }
}
