//! The validated, completed configuration kube-controller-manager runs with.

use super::controllers;
use super::options::{ControllerFlags, DEFAULT_SECURE_PORT, GenericOptions, Options};
use crate::controller::settings::ControllerSettings;
use anyhow::anyhow;
use component_base::client_flags::KubeconfigOptions;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The name used for the lease and the serving certificate.
pub const COMPONENT: &str = "kube-controller-manager";

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    /// The controllers `--controllers` resolves to, by upstream name.
    pub controllers: BTreeSet<&'static str>,
    pub client: KubeconfigOptions,
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    pub leader_election: LeaderElectionOptions,
    pub kube_api_qps: f32,
    pub kube_api_burst: u32,
    pub controller_start_interval: std::time::Duration,
    pub settings: ControllerSettings,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Validates the options and fills in derived defaults.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        let controllers = controllers::resolve(&options.generic.controllers)
            .map_err(|e| anyhow!("invalid --controllers: {e}"))?;
        options.client.validate().map_err(|e| anyhow!(e))?;
        // Bad TLS flags are flag errors, not a failure when serving starts.
        options.secure_serving.tls_settings()?;
        let leader_election = options
            .leader_election
            .complete(COMPONENT)
            .map_err(|e| anyhow!(e))?;
        let settings = settings(&options.controllers, &options.generic)?;
        Ok(Self {
            controllers,
            client: options.client,
            secure_serving: options.secure_serving,
            leader_election,
            kube_api_qps: options.generic.kube_api_qps,
            kube_api_burst: options.generic.kube_api_burst,
            controller_start_interval: options.generic.controller_start_interval.0,
            settings,
        })
    }
}

/// Checks the controller flags and turns them into the settings controllers read.
fn settings(f: &ControllerFlags, g: &GenericOptions) -> anyhow::Result<ControllerSettings> {
    for (flag, path) in [
        (
            "--service-account-private-key-file",
            &f.service_account_private_key_file,
        ),
        ("--root-ca-file", &f.root_ca_file),
        ("--cluster-signing-cert-file", &f.cluster_signing_cert_file),
        ("--cluster-signing-key-file", &f.cluster_signing_key_file),
    ] {
        if let Some(path) = path
            && !path.is_file()
        {
            anyhow::bail!("{flag}: {} does not exist or is not a file", path.display());
        }
    }
    if f.cluster_signing_cert_file.is_some() != f.cluster_signing_key_file.is_some() {
        anyhow::bail!(
            "--cluster-signing-cert-file and --cluster-signing-key-file must be given together"
        );
    }
    if f.allocate_node_cidrs && f.cluster_cidr.is_none() {
        anyhow::bail!("--cluster-cidr is required when --allocate-node-cidrs is true");
    }
    if !(0.0..=1.0).contains(&f.unhealthy_zone_threshold) {
        anyhow::bail!("--unhealthy-zone-threshold must be between 0 and 1");
    }
    Ok(ControllerSettings {
        use_service_account_credentials: f.use_service_account_credentials,
        concurrent_deployment_syncs: f.concurrent_deployment_syncs,
        concurrent_replicaset_syncs: f.concurrent_replicaset_syncs,
        concurrent_rc_syncs: f.concurrent_rc_syncs,
        concurrent_statefulset_syncs: f.concurrent_statefulset_syncs,
        concurrent_daemonset_syncs: f.concurrent_daemonset_syncs,
        concurrent_job_syncs: f.concurrent_job_syncs,
        concurrent_cron_job_syncs: f.concurrent_cron_job_syncs,
        concurrent_gc_syncs: f.concurrent_gc_syncs,
        concurrent_namespace_syncs: f.concurrent_namespace_syncs,
        concurrent_endpoint_syncs: f.concurrent_endpoint_syncs,
        concurrent_service_endpoint_syncs: f.concurrent_service_endpoint_syncs,
        mirroring_concurrent_service_endpoint_syncs: f.mirroring_concurrent_service_endpoint_syncs,
        concurrent_serviceaccount_token_syncs: f.concurrent_serviceaccount_token_syncs,
        concurrent_resource_quota_syncs: f.concurrent_resource_quota_syncs,
        concurrent_ttl_after_finished_syncs: f.concurrent_ttl_after_finished_syncs,
        concurrent_horizontal_pod_autoscaler_syncs: f.concurrent_horizontal_pod_autoscaler_syncs,
        enable_garbage_collector: f.enable_garbage_collector,
        service_account_private_key_file: f.service_account_private_key_file.clone(),
        root_ca_file: f.root_ca_file.clone(),
        cluster_signing_cert_file: f.cluster_signing_cert_file.clone(),
        cluster_signing_key_file: f.cluster_signing_key_file.clone(),
        cluster_signing_duration: f.cluster_signing_duration.0,
        node_monitor_period: f.node_monitor_period.0,
        node_monitor_grace_period: f.node_monitor_grace_period.0,
        node_startup_grace_period: f.node_startup_grace_period.0,
        node_eviction_rate: f.node_eviction_rate,
        secondary_node_eviction_rate: f.secondary_node_eviction_rate,
        large_cluster_size_threshold: f.large_cluster_size_threshold,
        unhealthy_zone_threshold: f.unhealthy_zone_threshold,
        terminated_pod_gc_threshold: f.terminated_pod_gc_threshold,
        allocate_node_cidrs: f.allocate_node_cidrs,
        cluster_cidr: f.cluster_cidr.clone(),
        node_cidr_mask_size: f.node_cidr_mask_size,
        service_cluster_ip_range: f.service_cluster_ip_range.clone(),
        horizontal_pod_autoscaler_sync_period: f.horizontal_pod_autoscaler_sync_period.0,
        namespace_sync_period: f.namespace_sync_period.0,
        min_resync_period: g.min_resync_period.0,
    })
}

impl Config {
    /// The configuration as `/configz` publishes it, in KubeControllerManagerConfiguration's shape.
    pub fn configz(&self) -> Value {
        let le = &self.leader_election;
        json!({
            "Generic": {
                "Controllers": self.controllers,
                "ClientConnection": {
                    "Kubeconfig": self.client.kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                },
                "LeaderElection": {
                    "LeaderElect": le.leader_elect,
                    "LeaseDuration": le.leader_elect_lease_duration.to_string(),
                    "RenewDeadline": le.leader_elect_renew_deadline.to_string(),
                    "RetryPeriod": le.leader_elect_retry_period.to_string(),
                    "ResourceLock": le.leader_elect_resource_lock,
                    "ResourceName": le.leader_elect_resource_name,
                    "ResourceNamespace": le.leader_elect_resource_namespace,
                },
            },
            "KubeCloudShared": {
                "AllocateNodeCIDRs": self.settings.allocate_node_cidrs,
                "ClusterCIDR": self.settings.cluster_cidr.clone().unwrap_or_default(),
            },
            "NodeLifecycleController": {
                "NodeMonitorGracePeriod": component_base::duration::GoDuration(self.settings.node_monitor_grace_period).to_string(),
                "NodeEvictionRate": self.settings.node_eviction_rate,
                "SecondaryNodeEvictionRate": self.settings.secondary_node_eviction_rate,
                "LargeClusterSizeThreshold": self.settings.large_cluster_size_threshold,
                "UnhealthyZoneThreshold": self.settings.unhealthy_zone_threshold,
            },
            "DeploymentController": {"ConcurrentDeploymentSyncs": self.settings.concurrent_deployment_syncs},
            "ReplicaSetController": {"ConcurrentRSSyncs": self.settings.concurrent_replicaset_syncs},
            "GarbageCollectorController": {
                "EnableGarbageCollector": self.settings.enable_garbage_collector,
                "ConcurrentGCSyncs": self.settings.concurrent_gc_syncs,
            },
            "PodGCController": {"TerminatedPodGCThreshold": self.settings.terminated_pod_gc_threshold},
            "SAController": {
                "ServiceAccountKeyFile": self.settings.service_account_private_key_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                "RootCAFile": self.settings.root_ca_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            },
        })
    }
}
