//! Upstream's KubeletConfiguration validation (the parts this kubelet acts on), with the field
//! and flag named in each message.

use super::file::KubeletConfiguration;
use super::parse;
use anyhow::{Context, bail};
use api_types::resource::Quantity;
use std::net::IpAddr;

/// Checks the effective configuration; the first problem is the error.
pub fn validate(c: &KubeletConfiguration) -> anyhow::Result<()> {
    port("port (--port)", c.port, 1)?;
    port("readOnlyPort (--read-only-port)", c.read_only_port, 0)?;
    port("healthzPort (--healthz-port)", c.healthz_port, 0)?;
    for (name, value) in [
        ("address (--address)", &c.address),
        (
            "healthzBindAddress (--healthz-bind-address)",
            &c.healthz_bind_address,
        ),
    ] {
        value
            .parse::<IpAddr>()
            .map_err(|_| anyhow::anyhow!("{name} {value:?} is not a valid IP address"))?;
    }
    percent(
        "imageGCHighThresholdPercent (--image-gc-high-threshold)",
        c.image_gc_high_threshold_percent,
    )?;
    percent(
        "imageGCLowThresholdPercent (--image-gc-low-threshold)",
        c.image_gc_low_threshold_percent,
    )?;
    if c.image_gc_low_threshold_percent >= c.image_gc_high_threshold_percent {
        bail!(
            "imageGCLowThresholdPercent (--image-gc-low-threshold) {} must be less than \
             imageGCHighThresholdPercent (--image-gc-high-threshold) {}",
            c.image_gc_low_threshold_percent,
            c.image_gc_high_threshold_percent
        );
    }
    if c.max_pods < 0 {
        bail!(
            "maxPods (--max-pods) {} must not be a negative number",
            c.max_pods
        );
    }
    if c.node_lease_duration_seconds <= 0 {
        bail!(
            "nodeLeaseDurationSeconds {} must be greater than 0",
            c.node_lease_duration_seconds
        );
    }
    if c.pod_pids_limit < -1 {
        bail!(
            "podPidsLimit (--pod-max-pids) {} must be -1 or positive",
            c.pod_pids_limit
        );
    }
    if c.registry_pull_qps < 0 || c.registry_burst < 0 || c.event_record_qps < 0 {
        bail!("registryPullQPS, registryBurst and eventRecordQPS must not be negative");
    }
    if c.cgroup_driver != "cgroupfs" {
        bail!(
            "cgroupDriver (--cgroup-driver) {:?} is not supported: this kubelet drives cgroup v1 \
             through cgroupfs only (use \"cgroupfs\")",
            c.cgroup_driver
        );
    }
    if !c.cgroup_root.is_empty() && !c.cgroup_root.starts_with('/') {
        bail!(
            "cgroupRoot (--cgroup-root) {:?} must be an absolute cgroup path",
            c.cgroup_root
        );
    }
    if !matches!(c.authorization.mode.as_str(), "Webhook" | "AlwaysAllow") {
        bail!(
            "authorization.mode {:?} is not supported: Webhook or AlwaysAllow",
            c.authorization.mode
        );
    }
    Quantity::parse(&c.container_log_max_size)
        .filter(|q| q.value() > 0)
        .with_context(|| {
            format!(
                "containerLogMaxSize (--container-log-max-size) {:?} is not a positive quantity",
                c.container_log_max_size
            )
        })?;
    if c.container_log_max_files < 2 {
        bail!(
            "containerLogMaxFiles (--container-log-max-files) {} must be greater than 1",
            c.container_log_max_files
        );
    }
    for endpoint in [&c.container_runtime_endpoint, &c.image_service_endpoint] {
        if !endpoint.is_empty() && !endpoint.starts_with("unix://") && !endpoint.starts_with('/') {
            bail!(
                "containerRuntimeEndpoint/imageServiceEndpoint {endpoint:?}: only unix:// endpoints \
                 are supported"
            );
        }
    }
    for allocatable in &c.enforce_node_allocatable {
        if !matches!(
            allocatable.as_str(),
            "pods" | "system-reserved" | "kube-reserved" | "none"
        ) {
            bail!("enforceNodeAllocatable: invalid option {allocatable:?}");
        }
    }
    for taint in &c.register_with_taints {
        parse::check_taint(taint)?;
    }
    parse::eviction_thresholds(&c.eviction_hard)?;
    parse::reserved("kubeReserved", &c.kube_reserved)?;
    parse::reserved("systemReserved", &c.system_reserved)?;
    cluster_dns(&c.cluster_dns)?;
    Ok(())
}

fn port(name: &str, value: i32, min: i32) -> anyhow::Result<()> {
    if !(min..=65535).contains(&value) {
        bail!("{name} {value} must be between {min} and 65535, inclusive");
    }
    Ok(())
}

fn percent(name: &str, value: i32) -> anyhow::Result<()> {
    if !(0..=100).contains(&value) {
        bail!("{name} {value} must be between 0 and 100, inclusive");
    }
    Ok(())
}

/// `clusterDNS` entries as addresses.
pub fn cluster_dns(entries: &[String]) -> anyhow::Result<Vec<IpAddr>> {
    entries
        .iter()
        .map(|e| {
            e.trim().parse::<IpAddr>().map_err(|_| {
                anyhow::anyhow!("clusterDNS (--cluster-dns): {e:?} is not an IP address")
            })
        })
        .collect()
}

/// `--node-ip`: one address or a dual-stack pair (one of each family).
pub fn node_ips(text: &str) -> anyhow::Result<Vec<IpAddr>> {
    let ips: Vec<IpAddr> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpAddr>()
                .map_err(|_| anyhow::anyhow!("invalid --node-ip {s:?}: not an IP address"))
        })
        .collect::<anyhow::Result<_>>()?;
    match ips.as_slice() {
        [a, b] if a.is_ipv4() == b.is_ipv4() => {
            bail!("invalid --node-ip {text:?}: a dual-stack pair needs one IPv4 and one IPv6")
        }
        [_, _, _, ..] => bail!("invalid --node-ip {text:?}: at most two addresses"),
        _ => Ok(ips),
    }
}
