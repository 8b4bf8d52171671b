//! The command line of kube-controller-manager, with upstream's flag names and sections.

use super::config::Config;
use clap::{Args, Parser};
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::client_flags::KubeconfigOptions;
use component_base::duration::GoDuration;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;
use std::path::PathBuf;

/// The port upstream's controller manager serves HTTPS on.
pub const DEFAULT_SECURE_PORT: u16 = 10257;

/// kube-controller-manager's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-controller-manager",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The Kubernetes controller manager is a daemon that embeds the core control loops \
shipped with Kubernetes."
)]
pub struct Options {
    #[command(flatten)]
    pub generic: GenericOptions,
    #[command(flatten)]
    pub client: KubeconfigOptions,
    #[command(flatten)]
    pub controllers: ControllerFlags,
    #[command(flatten)]
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    #[command(flatten)]
    pub leader_election: LeaderElectionOptions,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Upstream's "Generic flags" section.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Generic flags")]
pub struct GenericOptions {
    /// A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables
    /// the controller named 'foo', '-foo' disables the controller named 'foo'. Disabled-by-default
    /// controllers: bootstrap-signer-controller, selinux-warning-controller,
    /// token-cleaner-controller.
    #[arg(
        long,
        value_name = "strings",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub controllers: Vec<String>,
    /// QPS to use while talking with kubernetes apiserver.
    #[arg(long, value_name = "float32", default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Burst to use while talking with kubernetes apiserver.
    #[arg(long, value_name = "int32", default_value_t = 30)]
    pub kube_api_burst: u32,
    /// The resync period in reflectors will be random between MinResyncPeriod and
    /// 2*MinResyncPeriod.
    #[arg(long, value_name = "duration", default_value = "12h0m0s")]
    pub min_resync_period: GoDuration,
    /// Interval between starting controller managers.
    #[arg(long, value_name = "duration", default_value = "0s")]
    pub controller_start_interval: GoDuration,
}

/// The per-controller flags of upstream's sections ("Deployment controller flags", ...).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Controller flags")]
pub struct ControllerFlags {
    /// If true, use individual service account credentials for each controller.
    #[arg(long, value_name = "bool", num_args = 0..=1, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub use_service_account_credentials: bool,
    /// Filename containing a PEM-encoded private RSA or ECDSA key used to sign service account
    /// tokens.
    #[arg(long, value_name = "string")]
    pub service_account_private_key_file: Option<PathBuf>,
    /// If set, this root certificate authority will be included in service account's token
    /// secret. This must be a valid PEM-encoded CA bundle.
    #[arg(long, value_name = "string")]
    pub root_ca_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded X509 CA certificate used to issue cluster-scoped
    /// certificates.
    #[arg(long, value_name = "string")]
    pub cluster_signing_cert_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign cluster-scoped
    /// certificates.
    #[arg(long, value_name = "string")]
    pub cluster_signing_key_file: Option<PathBuf>,
    /// The max length of duration signed certificates will be given.
    #[arg(long, value_name = "duration", default_value = "8760h0m0s")]
    pub cluster_signing_duration: GoDuration,
    /// The number of deployment objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_deployment_syncs: usize,
    /// The number of replica sets that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_replicaset_syncs: usize,
    /// The number of replication controllers that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_rc_syncs: usize,
    /// The number of statefulset objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_statefulset_syncs: usize,
    /// The number of daemonset objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 2)]
    pub concurrent_daemonset_syncs: usize,
    /// The number of job objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_job_syncs: usize,
    /// The number of cron job objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_cron_job_syncs: usize,
    /// The number of garbage collector workers that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 20)]
    pub concurrent_gc_syncs: usize,
    /// Enables the generic garbage collector.
    #[arg(long, value_name = "bool", num_args = 0..=1, default_missing_value = "true", default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_garbage_collector: bool,
    /// The number of namespace objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 10)]
    pub concurrent_namespace_syncs: usize,
    /// The period for syncing namespace life-cycle updates.
    #[arg(long, value_name = "duration", default_value = "5m0s")]
    pub namespace_sync_period: GoDuration,
    /// The number of endpoint syncing operations that will be done concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_endpoint_syncs: usize,
    /// The number of service endpoint syncing operations that will be done concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_service_endpoint_syncs: usize,
    /// The number of service endpoint syncing operations that will be done concurrently by the
    /// endpointslice-mirroring-controller.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub mirroring_concurrent_service_endpoint_syncs: usize,
    /// The number of service account token objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_serviceaccount_token_syncs: usize,
    /// The number of resource quotas that are allowed to sync concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_resource_quota_syncs: usize,
    /// The number of ttl-after-finished-controller workers that are allowed to sync
    /// concurrently.
    #[arg(long, value_name = "int32", default_value_t = 5)]
    pub concurrent_ttl_after_finished_syncs: usize,
    /// The number of horizontal pod autoscaler objects that are allowed to sync concurrently.
    #[arg(long, value_name = "int", default_value_t = 5)]
    pub concurrent_horizontal_pod_autoscaler_syncs: usize,
    /// The period for syncing the number of pods in horizontal pod autoscaler.
    #[arg(long, value_name = "duration", default_value = "15s")]
    pub horizontal_pod_autoscaler_sync_period: GoDuration,
    /// The period for syncing NodeStatus in cloud-node-lifecycle-controller.
    #[arg(long, value_name = "duration", default_value = "5s")]
    pub node_monitor_period: GoDuration,
    /// Amount of time which we allow running Node to be unresponsive before marking it
    /// unhealthy.
    #[arg(long, value_name = "duration", default_value = "50s")]
    pub node_monitor_grace_period: GoDuration,
    /// Amount of time which we allow starting Node to be unresponsive before marking it
    /// unhealthy.
    #[arg(long, value_name = "duration", default_value = "1m0s")]
    pub node_startup_grace_period: GoDuration,
    /// Number of nodes per second on which pods are deleted in case of node failure when a
    /// zone is healthy.
    #[arg(long, value_name = "float32", default_value_t = 0.1)]
    pub node_eviction_rate: f32,
    /// Number of nodes per second on which pods are deleted in case of node failure when a
    /// zone is unhealthy.
    #[arg(long, value_name = "float32", default_value_t = 0.01)]
    pub secondary_node_eviction_rate: f32,
    /// Number of nodes from which node-lifecycle-controller treats the cluster as large for
    /// the eviction logic purposes.
    #[arg(long, value_name = "int32", default_value_t = 50)]
    pub large_cluster_size_threshold: u32,
    /// Fraction of Nodes in a zone which needs to be not Ready (minimum 3) for zone to be
    /// treated as unhealthy.
    #[arg(long, value_name = "float32", default_value_t = 0.55)]
    pub unhealthy_zone_threshold: f32,
    /// Number of terminated pods that can exist before the terminated pod garbage collector
    /// starts deleting terminated pods. If <= 0, the terminated pod garbage collector is
    /// disabled.
    #[arg(long, value_name = "int32", default_value_t = 12500)]
    pub terminated_pod_gc_threshold: i32,
    /// Should CIDRs for Pods be allocated and set on the cloud provider.
    #[arg(long, value_name = "bool", num_args = 0..=1, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub allocate_node_cidrs: bool,
    /// CIDR Range for Pods in cluster. Requires --allocate-node-cidrs to be true.
    #[arg(long, value_name = "string")]
    pub cluster_cidr: Option<String>,
    /// Mask size for node cidr in cluster. Default is 24 for IPv4 and 64 for IPv6.
    #[arg(long, value_name = "int32")]
    pub node_cidr_mask_size: Option<u8>,
    /// CIDR Range for Services in cluster.
    #[arg(long, value_name = "string")]
    pub service_cluster_ip_range: Option<String>,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}
