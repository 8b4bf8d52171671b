//! The CRI sandbox config of a pod (upstream's `generatePodSandboxConfig`): identity, hostname,
//! log directory, DNS, host ports, labels, cgroup parent, namespaces, sysctls and the pod's
//! security context.

use super::labels;
use super::security::{host_network, sandbox_security_context};
use crate::kuberuntime::{DnsConfig, RuntimeHelper};
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use std::path::{Path, PathBuf};

/// `<pod_logs_dir>/<namespace>_<name>_<uid>`, upstream's `BuildPodLogsDirectory`.
pub fn pod_logs_directory(root: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    root.join(format!("{namespace}_{name}_{uid}"))
}

/// Upstream's `GeneratePodHostNameAndDomain` (hostname part): `spec.hostname` or the pod's
/// name, cut to 63 characters without a trailing `-` or `.`.
pub fn pod_hostname(pod: &Pod) -> String {
    let name = pod
        .spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| pod.metadata.name.clone().unwrap_or_default());
    if name.len() <= 63 {
        return name;
    }
    name[..63].trim_end_matches(['-', '.']).to_string()
}

fn protocol(p: Option<&str>) -> i32 {
    match p {
        Some("UDP") => cri::Protocol::Udp as i32,
        Some("SCTP") => cri::Protocol::Sctp as i32,
        _ => cri::Protocol::Tcp as i32,
    }
}

pub fn port_mappings(spec: &PodSpec) -> Vec<cri::PortMapping> {
    spec.containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.unwrap_or(0) != 0)
        .map(|p| cri::PortMapping {
            protocol: protocol(p.protocol.as_deref()),
            container_port: p.container_port,
            host_port: p.host_port.unwrap_or(0),
            host_ip: p.host_ip.clone().unwrap_or_default(),
        })
        .collect()
}

/// Sysctl names may use `/` as separator; CRI wants dots.
fn sysctls(spec: &PodSpec) -> std::collections::HashMap<String, String> {
    spec.security_context
        .as_ref()
        .and_then(|s| s.sysctls.as_ref())
        .into_iter()
        .flatten()
        .map(|s| {
            let name = if s.name.contains('/') {
                // `a.b/c` means `a/b.c` with the separators swapped.
                s.name
                    .chars()
                    .map(|ch| match ch {
                        '/' => '.',
                        '.' => '/',
                        other => other,
                    })
                    .collect()
            } else {
                s.name.clone()
            };
            (name, s.value.clone())
        })
        .collect()
}

pub struct SandboxInputs<'a> {
    pub pod_logs_dir: &'a Path,
    pub seccomp_profile_root: &'a str,
    pub cgroup_parent: String,
    pub dns: Option<DnsConfig>,
}

pub fn sandbox_config(pod: &Pod, attempt: u32, inputs: SandboxInputs<'_>) -> cri::PodSandboxConfig {
    let default_spec = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let name = pod.metadata.name.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let log_directory = pod_logs_directory(inputs.pod_logs_dir, &namespace, &name, &uid);
    cri::PodSandboxConfig {
        metadata: Some(cri::PodSandboxMetadata {
            name,
            uid,
            namespace,
            attempt,
        }),
        // containerd gives a hostNetwork sandbox the node's name only when none is asked for.
        hostname: if host_network(spec) {
            String::new()
        } else {
            pod_hostname(pod)
        },
        log_directory: log_directory.to_string_lossy().into_owned(),
        dns_config: inputs.dns.map(|d| cri::DnsConfig {
            servers: d.servers,
            searches: d.searches,
            options: d.options,
        }),
        port_mappings: port_mappings(spec),
        labels: labels::sandbox_labels(pod),
        annotations: labels::sandbox_annotations(pod),
        linux: Some(cri::LinuxPodSandboxConfig {
            cgroup_parent: inputs.cgroup_parent,
            security_context: Some(sandbox_security_context(spec, inputs.seccomp_profile_root)),
            sysctls: sysctls(spec),
            ..Default::default()
        }),
        windows: None,
    }
}

/// The sandbox config of `pod` with what the helper supplies.
pub fn build(
    pod: &Pod,
    attempt: u32,
    helper: &dyn RuntimeHelper,
    pod_logs_dir: &Path,
    seccomp_profile_root: &str,
) -> anyhow::Result<cri::PodSandboxConfig> {
    let dns = helper.dns_config(pod)?;
    Ok(sandbox_config(
        pod,
        attempt,
        SandboxInputs {
            pod_logs_dir,
            seccomp_profile_root,
            cgroup_parent: helper.pod_cgroup_parent(pod),
            dns,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSecurityContext, Sysctl};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(host_net: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                annotations: Some([("a".to_string(), "b".to_string())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                host_network: Some(host_net),
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(vec![
                        ContainerPort {
                            container_port: 80,
                            host_port: Some(8080),
                            protocol: Some("TCP".into()),
                            ..Default::default()
                        },
                        ContainerPort {
                            container_port: 53,
                            protocol: Some("UDP".into()),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }],
                security_context: Some(PodSecurityContext {
                    sysctls: Some(vec![
                        Sysctl {
                            name: "net.ipv4.ip_local_port_range".into(),
                            value: "1024 65535".into(),
                        },
                        Sysctl {
                            name: "net/ipv4/conf/eth0.100/forwarding".into(),
                            value: "1".into(),
                        },
                    ]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn config(p: &Pod) -> cri::PodSandboxConfig {
        sandbox_config(
            p,
            2,
            SandboxInputs {
                pod_logs_dir: Path::new("/var/log/pods"),
                seccomp_profile_root: "/r",
                cgroup_parent: "/kubepods/besteffort/podu1".into(),
                dns: Some(DnsConfig {
                    servers: vec!["10.0.0.10".into()],
                    searches: vec!["ns.svc.cluster.local".into()],
                    options: vec!["ndots:5".into()],
                }),
            },
        )
    }

    #[test]
    fn sandbox_config_carries_the_pod() {
        let c = config(&pod(false));
        let m = c.metadata.clone().unwrap();
        assert_eq!(
            (
                m.name.as_str(),
                m.namespace.as_str(),
                m.uid.as_str(),
                m.attempt
            ),
            ("web", "ns", "u1", 2)
        );
        assert_eq!(c.hostname, "web");
        assert_eq!(c.log_directory, "/var/log/pods/ns_web_u1");
        assert_eq!(c.dns_config.unwrap().servers, vec!["10.0.0.10"]);
        assert_eq!(c.port_mappings.len(), 1);
        assert_eq!(
            (
                c.port_mappings[0].container_port,
                c.port_mappings[0].host_port
            ),
            (80, 8080)
        );
        assert_eq!(c.labels["app"], "web");
        assert_eq!(c.labels[labels::POD_UID], "u1");
        assert_eq!(c.annotations["a"], "b");
        let linux = c.linux.unwrap();
        assert_eq!(linux.cgroup_parent, "/kubepods/besteffort/podu1");
        assert_eq!(linux.sysctls["net.ipv4.ip_local_port_range"], "1024 65535");
        assert_eq!(linux.sysctls["net.ipv4.conf.eth0/100.forwarding"], "1");
        let ns = linux.security_context.unwrap().namespace_options.unwrap();
        assert_eq!(ns.network, cri::NamespaceMode::Pod as i32);

        let host = config(&pod(true));
        assert_eq!(host.hostname, "");
        let ns = host
            .linux
            .unwrap()
            .security_context
            .unwrap()
            .namespace_options
            .unwrap();
        assert_eq!(ns.network, cri::NamespaceMode::Node as i32);
    }

    #[test]
    fn hostnames_are_cut_to_63() {
        let mut p = pod(false);
        p.metadata.name = Some(format!("{}-{}", "a".repeat(62), "b".repeat(10)));
        assert_eq!(pod_hostname(&p), "a".repeat(62));
        p.spec.as_mut().unwrap().hostname = Some("custom".into());
        assert_eq!(pod_hostname(&p), "custom");
    }
}
