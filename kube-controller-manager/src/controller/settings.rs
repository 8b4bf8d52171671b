//! The completed settings controllers read: upstream's KubeControllerManagerConfiguration,
//! flattened to what this controller manager implements. Built by `app::config` from flags.

use std::path::PathBuf;
use std::time::Duration;

/// Per-controller knobs, with upstream's defaults (see `Default`).
#[derive(Debug, Clone)]
pub struct ControllerSettings {
    pub use_service_account_credentials: bool,
    /// Workers per controller (`--concurrent-*-syncs`).
    pub concurrent_deployment_syncs: usize,
    pub concurrent_replicaset_syncs: usize,
    pub concurrent_rc_syncs: usize,
    pub concurrent_statefulset_syncs: usize,
    pub concurrent_daemonset_syncs: usize,
    pub concurrent_job_syncs: usize,
    pub concurrent_cron_job_syncs: usize,
    pub concurrent_gc_syncs: usize,
    pub concurrent_namespace_syncs: usize,
    pub concurrent_endpoint_syncs: usize,
    pub concurrent_service_endpoint_syncs: usize,
    pub mirroring_concurrent_service_endpoint_syncs: usize,
    pub concurrent_serviceaccount_token_syncs: usize,
    pub concurrent_resource_quota_syncs: usize,
    pub concurrent_ttl_after_finished_syncs: usize,
    pub concurrent_horizontal_pod_autoscaler_syncs: usize,
    pub enable_garbage_collector: bool,
    /// PEM key that signs legacy service account token secrets.
    pub service_account_private_key_file: Option<PathBuf>,
    /// CA bundle published as `kube-root-ca.crt` and put in token secrets.
    pub root_ca_file: Option<PathBuf>,
    pub cluster_signing_cert_file: Option<PathBuf>,
    pub cluster_signing_key_file: Option<PathBuf>,
    pub cluster_signing_duration: Duration,
    pub node_monitor_period: Duration,
    pub node_monitor_grace_period: Duration,
    pub node_startup_grace_period: Duration,
    pub node_eviction_rate: f32,
    pub secondary_node_eviction_rate: f32,
    pub large_cluster_size_threshold: u32,
    pub unhealthy_zone_threshold: f32,
    pub terminated_pod_gc_threshold: i32,
    pub allocate_node_cidrs: bool,
    pub cluster_cidr: Option<String>,
    pub node_cidr_mask_size: Option<u8>,
    pub service_cluster_ip_range: Option<String>,
    pub horizontal_pod_autoscaler_sync_period: Duration,
    pub namespace_sync_period: Duration,
    pub min_resync_period: Duration,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        Self {
            use_service_account_credentials: false,
            concurrent_deployment_syncs: 5,
            concurrent_replicaset_syncs: 5,
            concurrent_rc_syncs: 5,
            concurrent_statefulset_syncs: 5,
            concurrent_daemonset_syncs: 2,
            concurrent_job_syncs: 5,
            concurrent_cron_job_syncs: 5,
            concurrent_gc_syncs: 20,
            concurrent_namespace_syncs: 10,
            concurrent_endpoint_syncs: 5,
            concurrent_service_endpoint_syncs: 5,
            mirroring_concurrent_service_endpoint_syncs: 5,
            concurrent_serviceaccount_token_syncs: 5,
            concurrent_resource_quota_syncs: 5,
            concurrent_ttl_after_finished_syncs: 5,
            concurrent_horizontal_pod_autoscaler_syncs: 5,
            enable_garbage_collector: true,
            service_account_private_key_file: None,
            root_ca_file: None,
            cluster_signing_cert_file: None,
            cluster_signing_key_file: None,
            cluster_signing_duration: Duration::from_secs(365 * 24 * 3600),
            node_monitor_period: Duration::from_secs(5),
            node_monitor_grace_period: Duration::from_secs(50),
            node_startup_grace_period: Duration::from_secs(60),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            large_cluster_size_threshold: 50,
            unhealthy_zone_threshold: 0.55,
            terminated_pod_gc_threshold: 12500,
            allocate_node_cidrs: false,
            cluster_cidr: None,
            node_cidr_mask_size: None,
            service_cluster_ip_range: None,
            horizontal_pod_autoscaler_sync_period: Duration::from_secs(15),
            namespace_sync_period: Duration::from_secs(300),
            min_resync_period: Duration::from_secs(12 * 3600),
        }
    }
}
