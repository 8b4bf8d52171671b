//! The pod's hostname and domain, and its kubelet-managed `/etc/hosts`.

use crate::container::{Mount, MountPropagation};
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{HostAlias, Pod};
use std::path::Path;

/// The host's hosts file that hostNetwork pods get a copy of.
pub const NODE_HOSTS_FILE: &str = "/etc/hosts";

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Upstream's `GeneratePodHostNameAndDomain`: `spec.hostname` or the pod's name (cut to 63
/// characters without a trailing `-`/`.`), and `<subdomain>.<ns>.svc.<clusterDomain>` when
/// `spec.subdomain` is set.
pub fn pod_hostname_and_domain(
    pod: &Pod,
    cluster_domain: &str,
) -> anyhow::Result<(String, String)> {
    let spec = pod.spec.as_ref();
    let mut hostname = pod.metadata.name.clone().unwrap_or_default();
    if let Some(h) = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
    {
        anyhow::ensure!(
            is_dns1123_label(h),
            "pod Hostname {h:?} is not a valid DNS label"
        );
        hostname = h.to_string();
    }
    if hostname.len() > 63 {
        hostname.truncate(63);
        let trimmed = hostname.trim_end_matches(['-', '.']).to_string();
        anyhow::ensure!(
            !trimmed.is_empty(),
            "hostname for pod {hostname:?} was invalid"
        );
        hostname = trimmed;
    }
    let mut domain = String::new();
    if let Some(sub) = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
    {
        anyhow::ensure!(
            is_dns1123_label(sub),
            "pod Subdomain {sub:?} is not a valid DNS label"
        );
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        domain = format!("{sub}.{ns}.svc.{cluster_domain}");
    }
    Ok((hostname, domain))
}

fn host_alias_lines(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# Entries added by HostAliases.\n");
    for alias in aliases {
        let names = alias.hostnames.as_deref().unwrap_or_default().join("\t");
        out.push_str(&format!("{}\t{names}\n", alias.ip));
    }
    out
}

/// The managed hosts file of a pod with its own network namespace.
pub fn managed_hosts_content(
    pod_ips: &[String],
    hostname: &str,
    domain: &str,
    aliases: &[HostAlias],
) -> String {
    let mut out = String::from("# Kubernetes-managed hosts file.\n");
    out.push_str("127.0.0.1\tlocalhost\n");
    out.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    out.push_str("fe00::0\tip6-localnet\n");
    out.push_str("fe00::0\tip6-mcastprefix\n");
    out.push_str("fe00::1\tip6-allnodes\n");
    out.push_str("fe00::2\tip6-allrouters\n");
    for ip in pod_ips {
        if domain.is_empty() {
            out.push_str(&format!("{ip}\t{hostname}\n"));
        } else {
            out.push_str(&format!("{ip}\t{hostname}.{domain}\t{hostname}\n"));
        }
    }
    out.push_str(&host_alias_lines(aliases));
    out
}

/// The hosts file of a hostNetwork pod: the node's, plus the pod's hostAliases.
pub fn host_network_hosts_content(node_hosts: &str, aliases: &[HostAlias]) -> String {
    let mut out = String::from("# Kubernetes-managed hosts file (host network).\n");
    out.push_str(node_hosts);
    out.push_str(&host_alias_lines(aliases));
    out
}

/// Writes `<pod_dir>/etc-hosts` (replaced atomically by rename, so a running container never
/// reads half a file) and returns its mount on `/etc/hosts`. As upstream, only when the pod
/// has IPs; hostNetwork pods get the node's hosts file plus their aliases.
pub fn ensure_hosts_file(
    pod_dir: &Path,
    pod: &Pod,
    pod_ips: &[String],
    cluster_domain: &str,
) -> anyhow::Result<Option<Mount>> {
    if pod_ips.is_empty() {
        return Ok(None);
    }
    let spec = pod.spec.as_ref();
    let aliases = spec
        .and_then(|s| s.host_aliases.as_deref())
        .unwrap_or_default();
    let content = if spec.and_then(|s| s.host_network).unwrap_or(false) {
        let node = std::fs::read_to_string(NODE_HOSTS_FILE).unwrap_or_default();
        host_network_hosts_content(&node, aliases)
    } else {
        let (hostname, domain) = pod_hostname_and_domain(pod, cluster_domain)?;
        managed_hosts_content(pod_ips, &hostname, &domain, aliases)
    };
    std::fs::create_dir_all(pod_dir)
        .with_context(|| format!("creating the pod directory {}", pod_dir.display()))?;
    let path = pod_dir.join("etc-hosts");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
        let tmp = pod_dir.join(".etc-hosts.tmp");
        std::fs::write(&tmp, &content).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(Some(Mount {
        container_path: "/etc/hosts".to_string(),
        host_path: path.to_string_lossy().into_owned(),
        read_only: false,
        propagation: MountPropagation::Private,
    }))
}
