//! Loading the `--config` file and laying the flags over it (a flag given on the command line
//! wins, as upstream).

use super::file::{self, KubeletConfiguration};
use super::parse;
use crate::app::options::{ConfigFlags, ServingFlags};
use anyhow::Context;
use std::path::Path;

/// Reads and strictly decodes a KubeletConfiguration file; relative paths in it are relative to
/// the file's directory, as upstream resolves them.
pub fn load_file(path: &Path) -> anyhow::Result<KubeletConfiguration> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to load Kubelet config file {}", path.display()))?;
    let mut config = file::decode(&text)
        .with_context(|| format!("failed to load Kubelet config file {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    for field in [
        &mut config.static_pod_path,
        &mut config.tls_cert_file,
        &mut config.tls_private_key_file,
        &mut config.authentication.x509.client_ca_file,
        &mut config.resolv_conf,
        &mut config.pod_logs_dir,
    ] {
        if !field.is_empty() && Path::new(field.as_str()).is_relative() {
            *field = base.join(field.as_str()).display().to_string();
        }
    }
    Ok(config)
}

/// Overrides the file's values with the flags that were given.
pub fn apply_flags(
    c: &mut KubeletConfiguration,
    f: &ConfigFlags,
    s: &ServingFlags,
) -> anyhow::Result<()> {
    fn set<T: Clone>(field: &mut T, flag: &Option<T>) {
        if let Some(v) = flag {
            *field = v.clone();
        }
    }
    fn set_dur(
        field: &mut std::time::Duration,
        flag: &Option<component_base::duration::GoDuration>,
    ) {
        if let Some(v) = flag {
            *field = v.0;
        }
    }
    set(
        &mut c.container_runtime_endpoint,
        &f.container_runtime_endpoint,
    );
    set(&mut c.image_service_endpoint, &f.image_service_endpoint);
    set(&mut c.static_pod_path, &f.pod_manifest_path);
    set(&mut c.static_pod_url, &f.manifest_url);
    if let Some(headers) = &f.manifest_url_header {
        c.static_pod_url_header.clear();
        for h in headers.iter().filter(|h| !h.trim().is_empty()) {
            let (k, v) = h
                .split_once(':')
                .with_context(|| format!("invalid --manifest-url-header {h:?}: want key:value"))?;
            c.static_pod_url_header
                .entry(k.trim().to_string())
                .or_default()
                .push(v.trim().to_string());
        }
    }
    set(&mut c.register_node, &f.register_node);
    if let Some(taints) = &f.register_with_taints {
        c.register_with_taints = taints
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| parse::taint(t.trim()))
            .collect::<anyhow::Result<_>>()?;
    }
    set(&mut c.cgroup_driver, &f.cgroup_driver);
    set(&mut c.cgroup_root, &f.cgroup_root);
    set(&mut c.cgroups_per_qos, &f.cgroups_per_qos);
    set(&mut c.max_pods, &f.max_pods);
    set(&mut c.pod_pids_limit, &f.pod_max_pids);
    set(&mut c.cluster_dns, &f.cluster_dns);
    set(&mut c.cluster_domain, &f.cluster_domain);
    set(&mut c.resolv_conf, &f.resolv_conf);
    set(&mut c.fail_swap_on, &f.fail_swap_on);
    set_dur(&mut c.runtime_request_timeout, &f.runtime_request_timeout);
    set_dur(
        &mut c.node_status_update_frequency,
        &f.node_status_update_frequency,
    );
    set_dur(&mut c.sync_frequency, &f.sync_frequency);
    set_dur(&mut c.file_check_frequency, &f.file_check_frequency);
    set_dur(&mut c.http_check_frequency, &f.http_check_frequency);
    if let Some(text) = &f.eviction_hard {
        c.eviction_hard = parse::eviction_flag(text)?;
    }
    if let Some(text) = &f.kube_reserved {
        c.kube_reserved = parse::map_flag("kube-reserved", text)?;
    }
    if let Some(text) = &f.system_reserved {
        c.system_reserved = parse::map_flag("system-reserved", text)?;
    }
    set(&mut c.provider_id, &f.provider_id);
    set(&mut c.container_log_max_size, &f.container_log_max_size);
    set(&mut c.container_log_max_files, &f.container_log_max_files);
    set(&mut c.serialize_image_pulls, &f.serialize_image_pulls);
    set(
        &mut c.image_gc_high_threshold_percent,
        &f.image_gc_high_threshold,
    );
    set(
        &mut c.image_gc_low_threshold_percent,
        &f.image_gc_low_threshold,
    );
    if let Some(port) = f.read_only_port {
        c.read_only_port = port.into();
    }
    if let Some(address) = s.address {
        c.address = address.to_string();
    }
    if let Some(port) = s.port {
        c.port = port.into();
    }
    if let Some(file) = &s.tls_cert_file {
        c.tls_cert_file = file.display().to_string();
    }
    if let Some(file) = &s.tls_private_key_file {
        c.tls_private_key_file = file.display().to_string();
    }
    if let Some(address) = s.healthz_bind_address {
        c.healthz_bind_address = address.to_string();
    }
    if let Some(port) = s.healthz_port {
        c.healthz_port = port.into();
    }
    Ok(())
}

/// Upstream's defaulting treats a zero duration as unset.
pub fn default_zero_durations(c: &mut KubeletConfiguration) {
    let d = KubeletConfiguration::default();
    for (field, default) in [
        (&mut c.sync_frequency, d.sync_frequency),
        (&mut c.file_check_frequency, d.file_check_frequency),
        (&mut c.http_check_frequency, d.http_check_frequency),
        (
            &mut c.node_status_update_frequency,
            d.node_status_update_frequency,
        ),
        (
            &mut c.node_status_report_frequency,
            d.node_status_report_frequency,
        ),
        (&mut c.runtime_request_timeout, d.runtime_request_timeout),
        (&mut c.image_minimum_gc_age, d.image_minimum_gc_age),
        (&mut c.volume_stats_agg_period, d.volume_stats_agg_period),
        (&mut c.cpu_cfs_quota_period, d.cpu_cfs_quota_period),
        (
            &mut c.eviction_pressure_transition_period,
            d.eviction_pressure_transition_period,
        ),
    ] {
        if field.is_zero() {
            *field = default;
        }
    }
    if c.node_lease_duration_seconds == 0 {
        c.node_lease_duration_seconds = d.node_lease_duration_seconds;
    }
    // A status is never reported less often than it is checked.
    if c.node_status_report_frequency < c.node_status_update_frequency {
        c.node_status_report_frequency = c.node_status_update_frequency;
    }
    if c.max_pods == 0 {
        c.max_pods = d.max_pods;
    }
    if c.container_log_max_files == 0 {
        c.container_log_max_files = d.container_log_max_files;
    }
    if c.pod_logs_dir.is_empty() {
        c.pod_logs_dir = d.pod_logs_dir;
    }
    if c.container_runtime_endpoint.is_empty() {
        c.container_runtime_endpoint = d.container_runtime_endpoint;
    }
    if c.cgroup_driver.is_empty() {
        c.cgroup_driver = d.cgroup_driver;
    }
    if c.container_log_max_size.is_empty() {
        c.container_log_max_size = d.container_log_max_size;
    }
}
