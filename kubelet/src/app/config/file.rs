//! `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1): the `--config` file's schema with
//! upstream's defaults. After the flags are applied on top it is the effective configuration
//! (what `/configz` publishes).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
pub const KIND: &str = "KubeletConfiguration";

/// The file's fields. Fields upstream has but this kubelet does not act on are still accepted
/// (`Option<Value>`, echoed by `/configz`) so upstream's files load; anything else is an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct KubeletConfiguration {
    pub api_version: String,
    pub kind: String,
    pub enable_server: bool,
    pub static_pod_path: String,
    #[serde(rename = "staticPodURL")]
    pub static_pod_url: String,
    #[serde(rename = "staticPodURLHeader")]
    pub static_pod_url_header: BTreeMap<String, Vec<String>>,
    #[serde(with = "go_duration")]
    pub sync_frequency: Duration,
    #[serde(with = "go_duration")]
    pub file_check_frequency: Duration,
    #[serde(with = "go_duration")]
    pub http_check_frequency: Duration,
    pub address: String,
    pub port: i32,
    pub read_only_port: i32,
    pub tls_cert_file: String,
    pub tls_private_key_file: String,
    pub tls_cipher_suites: Vec<String>,
    pub tls_min_version: String,
    pub rotate_certificates: bool,
    #[serde(rename = "serverTLSBootstrap")]
    pub server_tls_bootstrap: bool,
    pub authentication: Authentication,
    pub authorization: Authorization,
    #[serde(rename = "registryPullQPS")]
    pub registry_pull_qps: i32,
    pub registry_burst: i32,
    #[serde(rename = "eventRecordQPS")]
    pub event_record_qps: i32,
    pub event_burst: i32,
    pub enable_debugging_handlers: bool,
    pub healthz_port: i32,
    pub healthz_bind_address: String,
    #[serde(rename = "clusterDNS")]
    pub cluster_dns: Vec<String>,
    pub cluster_domain: String,
    #[serde(with = "go_duration")]
    pub node_status_update_frequency: Duration,
    #[serde(with = "go_duration")]
    pub node_status_report_frequency: Duration,
    pub node_lease_duration_seconds: i32,
    #[serde(rename = "imageMinimumGCAge", with = "go_duration")]
    pub image_minimum_gc_age: Duration,
    #[serde(rename = "imageMaximumGCAge", with = "go_duration")]
    pub image_maximum_gc_age: Duration,
    #[serde(rename = "imageGCHighThresholdPercent")]
    pub image_gc_high_threshold_percent: i32,
    #[serde(rename = "imageGCLowThresholdPercent")]
    pub image_gc_low_threshold_percent: i32,
    #[serde(with = "go_duration")]
    pub volume_stats_agg_period: Duration,
    pub cgroups_per_qos: bool,
    pub cgroup_root: String,
    pub cgroup_driver: String,
    #[serde(with = "go_duration")]
    pub runtime_request_timeout: Duration,
    pub max_pods: i32,
    #[serde(rename = "podCIDR")]
    pub pod_cidr: String,
    pub pod_pids_limit: i64,
    pub resolv_conf: String,
    #[serde(rename = "cpuCFSQuota")]
    pub cpu_cfs_quota: bool,
    #[serde(rename = "cpuCFSQuotaPeriod", with = "go_duration")]
    pub cpu_cfs_quota_period: Duration,
    pub max_open_files: i64,
    #[serde(rename = "kubeAPIQPS")]
    pub kube_api_qps: i32,
    #[serde(rename = "kubeAPIBurst")]
    pub kube_api_burst: i32,
    pub serialize_image_pulls: bool,
    pub max_parallel_image_pulls: Option<i32>,
    pub eviction_hard: BTreeMap<String, String>,
    pub eviction_soft: BTreeMap<String, String>,
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    #[serde(with = "go_duration")]
    pub eviction_pressure_transition_period: Duration,
    pub eviction_max_pod_grace_period: i32,
    pub system_reserved: BTreeMap<String, String>,
    pub kube_reserved: BTreeMap<String, String>,
    pub enforce_node_allocatable: Vec<String>,
    pub fail_swap_on: bool,
    pub container_log_max_size: String,
    pub container_log_max_files: i32,
    pub container_runtime_endpoint: String,
    pub image_service_endpoint: String,
    pub register_node: bool,
    pub register_with_taints: Vec<TaintSpec>,
    #[serde(with = "go_duration")]
    pub shutdown_grace_period: Duration,
    #[serde(with = "go_duration")]
    pub shutdown_grace_period_critical_pods: Duration,
    #[serde(rename = "providerID")]
    pub provider_id: String,
    pub pod_logs_dir: String,
    pub feature_gates: BTreeMap<String, bool>,
    // Accepted for compatibility with upstream's files; this kubelet has no such machinery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_manager_policy: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_manager_policy: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hairpin_mode: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_reserved_cgroup: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_reserved_cgroup: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_cgroups: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_cgroups: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_cgroups: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protect_kernel_defaults: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub make_ip_tables_util_chains: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_plugin_dir: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_system_log_handler: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_profiling_handler: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_controller_attach_detach: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming_connection_idle_timeout: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_workers: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_monitor_interval: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_minimum_reclaim: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_default: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_storage_capacity_isolation: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_status_max_images: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_swap: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_cgroup_v1: Option<Value>,
}

/// A `registerWithTaints` entry (core/v1 Taint without timeAdded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaintSpec {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub effect: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Authentication {
    pub x509: X509Authentication,
    pub webhook: WebhookAuthentication,
    pub anonymous: AnonymousAuthentication,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct X509Authentication {
    #[serde(rename = "clientCAFile")]
    pub client_ca_file: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WebhookAuthentication {
    pub enabled: bool,
    #[serde(rename = "cacheTTL", with = "go_duration")]
    pub cache_ttl: Duration,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AnonymousAuthentication {
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Authorization {
    /// `Webhook` (SubjectAccessReview against the apiserver) or `AlwaysAllow`.
    pub mode: String,
    pub webhook: WebhookAuthorization,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WebhookAuthorization {
    #[serde(rename = "cacheAuthorizedTTL", with = "go_duration")]
    pub cache_authorized_ttl: Duration,
    #[serde(rename = "cacheUnauthorizedTTL", with = "go_duration")]
    pub cache_unauthorized_ttl: Duration,
}

impl Default for WebhookAuthentication {
    fn default() -> Self {
        Self {
            enabled: true,
            cache_ttl: secs(120),
        }
    }
}

impl Default for Authorization {
    fn default() -> Self {
        Self {
            mode: "Webhook".into(),
            webhook: WebhookAuthorization::default(),
        }
    }
}

impl Default for WebhookAuthorization {
    fn default() -> Self {
        Self {
            cache_authorized_ttl: secs(300),
            cache_unauthorized_ttl: secs(30),
        }
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The hard eviction thresholds upstream applies when `evictionHard` is not set.
pub fn default_eviction_hard() -> BTreeMap<String, String> {
    strings(&[
        ("memory.available", "100Mi"),
        ("nodefs.available", "10%"),
        ("imagefs.available", "15%"),
        ("nodefs.inodesFree", "5%"),
    ])
}

impl Default for KubeletConfiguration {
    /// Upstream's v1beta1 defaults (`SetDefaults_KubeletConfiguration`).
    fn default() -> Self {
        Self {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            enable_server: true,
            static_pod_path: String::new(),
            static_pod_url: String::new(),
            static_pod_url_header: BTreeMap::new(),
            sync_frequency: secs(60),
            file_check_frequency: secs(20),
            http_check_frequency: secs(20),
            address: "0.0.0.0".into(),
            port: 10250,
            read_only_port: 0,
            tls_cert_file: String::new(),
            tls_private_key_file: String::new(),
            tls_cipher_suites: Vec::new(),
            tls_min_version: String::new(),
            rotate_certificates: false,
            server_tls_bootstrap: false,
            authentication: Authentication::default(),
            authorization: Authorization::default(),
            registry_pull_qps: 5,
            registry_burst: 10,
            event_record_qps: 50,
            event_burst: 100,
            enable_debugging_handlers: true,
            healthz_port: 10248,
            healthz_bind_address: "127.0.0.1".into(),
            cluster_dns: Vec::new(),
            cluster_domain: String::new(),
            node_status_update_frequency: secs(10),
            node_status_report_frequency: secs(300),
            node_lease_duration_seconds: 40,
            image_minimum_gc_age: secs(120),
            image_maximum_gc_age: Duration::ZERO,
            image_gc_high_threshold_percent: 85,
            image_gc_low_threshold_percent: 80,
            volume_stats_agg_period: secs(60),
            cgroups_per_qos: true,
            cgroup_root: String::new(),
            cgroup_driver: "cgroupfs".into(),
            runtime_request_timeout: secs(120),
            max_pods: 110,
            pod_cidr: String::new(),
            pod_pids_limit: -1,
            resolv_conf: "/etc/resolv.conf".into(),
            cpu_cfs_quota: true,
            cpu_cfs_quota_period: Duration::from_millis(100),
            max_open_files: 1_000_000,
            kube_api_qps: 50,
            kube_api_burst: 100,
            serialize_image_pulls: true,
            max_parallel_image_pulls: None,
            eviction_hard: default_eviction_hard(),
            eviction_soft: BTreeMap::new(),
            eviction_soft_grace_period: BTreeMap::new(),
            eviction_pressure_transition_period: secs(300),
            eviction_max_pod_grace_period: 0,
            system_reserved: BTreeMap::new(),
            kube_reserved: BTreeMap::new(),
            enforce_node_allocatable: vec!["pods".into()],
            fail_swap_on: true,
            container_log_max_size: "10Mi".into(),
            container_log_max_files: 5,
            container_runtime_endpoint: "unix:///run/containerd/containerd.sock".into(),
            image_service_endpoint: String::new(),
            register_node: true,
            register_with_taints: Vec::new(),
            shutdown_grace_period: Duration::ZERO,
            shutdown_grace_period_critical_pods: Duration::ZERO,
            provider_id: String::new(),
            pod_logs_dir: "/var/log/pods".into(),
            feature_gates: BTreeMap::new(),
            logging: None,
            cpu_manager_policy: None,
            memory_manager_policy: None,
            topology_manager_policy: None,
            hairpin_mode: None,
            system_reserved_cgroup: None,
            kube_reserved_cgroup: None,
            system_cgroups: None,
            kubelet_cgroups: None,
            runtime_cgroups: None,
            protect_kernel_defaults: None,
            make_ip_tables_util_chains: None,
            volume_plugin_dir: None,
            enable_system_log_handler: None,
            enable_profiling_handler: None,
            enable_controller_attach_detach: None,
            streaming_connection_idle_timeout: None,
            container_log_max_workers: None,
            container_log_monitor_interval: None,
            eviction_minimum_reclaim: None,
            seccomp_default: None,
            local_storage_capacity_isolation: None,
            node_status_max_images: None,
            memory_swap: None,
            fail_cgroup_v1: None,
        }
    }
}

/// Decodes a config file (YAML or JSON). An unknown field is an error naming it with its path,
/// as upstream's strict decoding does.
pub fn decode(text: &str) -> anyhow::Result<KubeletConfiguration> {
    // Defaulting would fill them in: upstream refuses a file that does not say what it is.
    let raw: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("failed to decode: {e}"))?;
    for key in ["apiVersion", "kind"] {
        if raw.get(key).is_none() {
            anyhow::bail!("failed to decode: Object '{key}' is missing");
        }
    }
    let config: KubeletConfiguration = serde_yaml::from_str(text).map_err(|err| {
        let message = err.to_string();
        match unknown_field(&message) {
            Some(field) => anyhow::anyhow!("strict decoding error: unknown field {field:?}"),
            None => anyhow::anyhow!("failed to decode: {message}"),
        }
    })?;
    if config.kind != KIND {
        anyhow::bail!("failed to decode: kind {:?} is not {KIND}", config.kind);
    }
    if config.api_version != API_VERSION {
        anyhow::bail!(
            "failed to decode: no kind \"{KIND}\" is registered for version {:?}",
            config.api_version
        );
    }
    Ok(config)
}

/// `authentication.webhook: unknown field `foo`, expected ...` -> `authentication.webhook.foo`.
fn unknown_field(message: &str) -> Option<String> {
    let start = message.find("unknown field `")?;
    let name_start = start + "unknown field `".len();
    let name_len = message[name_start..].find('`')?;
    let name = &message[name_start..name_start + name_len];
    let path = message[..start].trim_end().trim_end_matches(':').trim();
    Some(if path.is_empty() || path.contains(' ') {
        name.to_string()
    } else {
        format!("{path}.{name}")
    })
}

/// metav1.Duration: a Go duration string (`1m0s`) in the file.
mod go_duration {
    use component_base::duration::GoDuration;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&GoDuration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<GoDuration>()
            .map(|g| g.0)
            .map_err(serde::de::Error::custom)
    }
}
