//! The sandbox's DNS config from dnsPolicy, dnsConfig, the cluster DNS settings and the host's
//! resolv.conf, as upstream's `dns.Configurer.GetPodDNS`.

use crate::kuberuntime::DnsConfig;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Pod, PodDNSConfig};
use std::net::IpAddr;
use std::path::Path;

/// Upstream's validation limits (`MaxDNSNameservers`, `MaxDNSSearchPaths`,
/// `MaxDNSSearchListChars`) and the longest search domain glibc tolerates.
const MAX_NAMESERVERS: usize = 3;
const MAX_SEARCH_PATHS: usize = 32;
const MAX_SEARCH_CHARS: usize = 2048;
const MAX_DOMAIN_LEN: usize = 253;

/// The node's DNS settings (`clusterDNS`, `clusterDomain`, `resolvConf`, the node IPs).
#[derive(Debug, Clone, Default)]
pub struct DnsSettings {
    pub cluster_dns: Vec<IpAddr>,
    pub cluster_domain: String,
    /// `resolvConf` (`/etc/resolv.conf` upstream); None or empty = `--resolv-conf=""`.
    pub resolv_conf: Option<std::path::PathBuf>,
    /// Used only when there is no resolv.conf: loopback servers of the node's families.
    pub node_ips: Vec<IpAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PodDnsType {
    Cluster,
    Host,
    None,
}

fn pod_dns_type(pod: &Pod) -> anyhow::Result<PodDnsType> {
    let spec = pod.spec.as_ref();
    let host_network = spec.and_then(|s| s.host_network).unwrap_or(false);
    match spec
        .and_then(|s| s.dns_policy.as_deref())
        .unwrap_or("ClusterFirst")
    {
        "None" => Ok(PodDnsType::None),
        "ClusterFirstWithHostNet" => Ok(PodDnsType::Cluster),
        // A hostNetwork pod asking for ClusterFirst gets the host's DNS, as upstream.
        "ClusterFirst" | "" if !host_network => Ok(PodDnsType::Cluster),
        "ClusterFirst" | "" | "Default" => Ok(PodDnsType::Host),
        other => anyhow::bail!("invalid DNSPolicy={other}"),
    }
}

/// Upstream's resolv.conf reading: nameservers, the last search line (trailing dots trimmed,
/// `.` dropped) and options (a later option of the same name wins).
pub fn parse_resolv_conf(content: &str) -> DnsConfig {
    let mut out = DnsConfig::default();
    for line in content.lines() {
        if line.starts_with(['#', ';']) {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["nameserver", server, ..] => out.servers.push(server.to_string()),
            ["search", domains @ ..] => {
                out.searches = domains
                    .iter()
                    .filter(|d| **d != ".")
                    .map(|d| d.trim_end_matches('.').to_string())
                    .collect();
            }
            ["options", opts @ ..] => {
                let opts: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
                out.options = merge_options(&out.options, &opts);
            }
            _ => {}
        }
    }
    out
}

fn option_name(opt: &str) -> &str {
    opt.split_once(':').map_or(opt, |(n, _)| n)
}

/// Options as `name[:value]`; a later one of the same name replaces the earlier in place.
fn merge_options(existing: &[String], more: &[String]) -> Vec<String> {
    let mut out: Vec<String> = existing.to_vec();
    for opt in more {
        match out.iter().position(|o| option_name(o) == option_name(opt)) {
            Some(i) => out[i] = opt.clone(),
            None => out.push(opt.clone()),
        }
    }
    out
}

fn omit_duplicates(list: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    list.into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

fn append_pod_dns_config(mut base: DnsConfig, pod_config: &PodDNSConfig) -> DnsConfig {
    base.servers
        .extend(pod_config.nameservers.iter().flatten().cloned());
    base.servers = omit_duplicates(base.servers);
    base.searches
        .extend(pod_config.searches.iter().flatten().cloned());
    base.searches = omit_duplicates(base.searches);
    let opts: Vec<String> = pod_config
        .options
        .iter()
        .flatten()
        .filter_map(|o| {
            let name = o.name.as_deref()?;
            Some(match o.value.as_deref() {
                Some(v) if !v.is_empty() => format!("{name}:{v}"),
                _ => name.to_string(),
            })
        })
        .collect();
    base.options = merge_options(&base.options, &opts);
    base
}

/// Upstream's `formDNSSearchFitsLimits`: at most 32 paths, none longer than 253 characters,
/// and the joined line within 2048 characters (cut from the end).
pub fn fit_search_limits(mut searches: Vec<String>) -> Vec<String> {
    let before = searches.clone();
    searches.truncate(MAX_SEARCH_PATHS);
    searches.retain(|s| s.len() <= MAX_DOMAIN_LEN);
    let mut line_len = searches.join(" ").len();
    while line_len > MAX_SEARCH_CHARS {
        let Some(last) = searches.pop() else { break };
        line_len = line_len.saturating_sub(last.len() + 1);
    }
    if searches != before {
        tracing::warn!(
            applied = %searches.join(" "),
            "Search Line limits were exceeded, some search paths have been omitted"
        );
    }
    searches
}

/// The pod's CRI `DNSConfig` (upstream always sends one). ClusterFirst without cluster DNS
/// servers falls back to Default with a warning, as upstream (which also records a
/// `MissingClusterDNS` event).
pub fn pod_dns_config(pod: &Pod, settings: &DnsSettings) -> anyhow::Result<DnsConfig> {
    let resolv = settings
        .resolv_conf
        .as_deref()
        .filter(|p| !p.as_os_str().is_empty());
    let host = match resolv {
        Some(path) => read_host_config(path)?,
        None => DnsConfig::default(),
    };
    let mut config = match pod_dns_type(pod)? {
        PodDnsType::None => DnsConfig::default(),
        PodDnsType::Cluster if !settings.cluster_dns.is_empty() => DnsConfig {
            servers: settings
                .cluster_dns
                .iter()
                .map(ToString::to_string)
                .collect(),
            searches: cluster_searches(pod, &settings.cluster_domain, host.searches),
            options: vec!["ndots:5".to_string()],
        },
        kind => {
            if kind == PodDnsType::Cluster {
                tracing::warn!(
                    pod = pod.metadata.name.as_deref().unwrap_or(""),
                    "kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy."
                );
            }
            match resolv {
                Some(_) => host,
                None => {
                    let mut servers: Vec<String> = settings
                        .node_ips
                        .iter()
                        .map(|ip| if ip.is_ipv6() { "::1" } else { "127.0.0.1" }.to_string())
                        .collect();
                    if servers.is_empty() {
                        servers.push("127.0.0.1".to_string());
                    }
                    DnsConfig {
                        servers: omit_duplicates(servers),
                        searches: vec![".".to_string()],
                        options: vec![],
                    }
                }
            }
        }
    };
    if let Some(pod_config) = pod.spec.as_ref().and_then(|s| s.dns_config.as_ref()) {
        config = append_pod_dns_config(config, pod_config);
    }
    if config.servers.len() > MAX_NAMESERVERS {
        config.servers.truncate(MAX_NAMESERVERS);
        tracing::warn!(
            applied = %config.servers.join(" "),
            "Nameserver limits were exceeded, some nameservers have been omitted"
        );
    }
    config.searches = fit_search_limits(config.searches);
    Ok(config)
}

fn cluster_searches(pod: &Pod, domain: &str, host_searches: Vec<String>) -> Vec<String> {
    if domain.is_empty() {
        return host_searches;
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut out = vec![
        format!("{ns}.svc.{domain}"),
        format!("svc.{domain}"),
        domain.to_string(),
    ];
    out.extend(host_searches);
    omit_duplicates(out)
}

fn read_host_config(path: &Path) -> anyhow::Result<DnsConfig> {
    let content = std::fs::read_to_string(path)
        .with_context(|| format!("reading the resolv.conf {}", path.display()))?;
    Ok(parse_resolv_conf(&content))
}
