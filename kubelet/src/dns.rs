//! DNS for pods: the sandbox's resolv.conf settings from dnsPolicy, dnsConfig and
//! `--cluster-dns`/`--cluster-domain`, and the pod's `/etc/hosts`. Owner: the volumes engineer.
//!
//! Entry points: [`dns_config`] (for `RuntimeHelper::dns_config`), [`pod_hostname_and_domain`]
//! (the sandbox hostname) and [`ensure_hosts_file`] (the `/etc/hosts` mount;
//! `VolumeManager::container_mounts` already adds it).

mod hosts;
mod resolv;

pub use hosts::{
    NODE_HOSTS_FILE, ensure_hosts_file, host_network_hosts_content, managed_hosts_content,
    pod_hostname_and_domain,
};
pub use resolv::{DnsSettings, fit_search_limits, parse_resolv_conf, pod_dns_config};

use crate::kuberuntime::DnsConfig;
use k8s_openapi::api::core::v1::Pod;
use std::net::IpAddr;
use std::path::Path;

/// The pod's sandbox DNS config for the given cluster DNS servers, cluster domain and host
/// resolv.conf (None = `--resolv-conf=""`). Always `Some` (upstream always sends a config);
/// an error when the resolv.conf cannot be read or the dnsPolicy is unknown.
pub fn dns_config(
    pod: &Pod,
    cluster_dns: &[IpAddr],
    cluster_domain: &str,
    resolv_conf: Option<&Path>,
) -> anyhow::Result<Option<DnsConfig>> {
    let settings = DnsSettings {
        cluster_dns: cluster_dns.to_vec(),
        cluster_domain: cluster_domain.to_string(),
        resolv_conf: resolv_conf.map(Path::to_path_buf),
        node_ips: Vec::new(),
    };
    pod_dns_config(pod, &settings).map(Some)
}

#[cfg(test)]
mod tests;
