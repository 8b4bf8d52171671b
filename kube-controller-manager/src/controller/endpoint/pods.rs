//! What the endpoints and endpointslice controllers ask of pods and services: readiness,
//! whether a pod belongs in endpoints at all, its address per family, the container port a
//! service port targets, and which services select a pod.

use api_types::labels::Selector;
use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

/// The annotation both controllers stamp with the time of the latest change they reflect.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// The label marking a headless service's endpoints.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// Whether the pod's Ready condition is True.
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Upstream's `ShouldPodBeInEndpoints`: finished pods and pods without an IP never are;
/// terminating ones only when the caller includes them.
pub fn should_pod_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    if is_terminal(pod) {
        return false;
    }
    if pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .is_none_or(str::is_empty)
    {
        return false;
    }
    include_terminating || !is_terminating(pod)
}

/// `IPv4` or `IPv6` for an address, None when it does not parse.
pub fn address_type(ip: &str) -> Option<&'static str> {
    match ip.parse::<IpAddr>().ok()? {
        IpAddr::V4(_) => Some("IPv4"),
        IpAddr::V6(_) => Some("IPv6"),
    }
}

/// The pod's IP of the given family (`IPv4`/`IPv6`), from `podIPs` then `podIP`.
pub fn pod_ip_of_family(pod: &Pod, family: &str) -> Option<String> {
    let status = pod.status.as_ref()?;
    let mut candidates: Vec<&str> = status
        .pod_ips
        .iter()
        .flatten()
        .map(|p| p.ip.as_str())
        .collect();
    if let Some(ip) = status.pod_ip.as_deref() {
        candidates.push(ip);
    }
    candidates
        .into_iter()
        .find(|ip| address_type(ip) == Some(family))
        .map(str::to_string)
}

/// The address families a service is served on, as EndpointSlice address types.
pub fn service_address_types(service: &Service) -> Vec<&'static str> {
    let spec = service.spec.as_ref();
    let mut types: Vec<&'static str> = spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|f| match f.as_str() {
            "IPv4" => Some("IPv4"),
            "IPv6" => Some("IPv6"),
            _ => None,
        })
        .collect();
    if types.is_empty() {
        // Without families (not defaulted yet), the cluster IP tells; IPv4 otherwise.
        let from_cluster_ip = spec
            .and_then(|s| s.cluster_ip.as_deref())
            .and_then(address_type);
        types.push(from_cluster_ip.unwrap_or("IPv4"));
    }
    types.dedup();
    types
}

/// Whether the service has no cluster IP (`None`), i.e. is headless.
pub fn is_headless(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .is_some_and(|ip| ip == "None")
}

pub fn is_external_name(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .is_some_and(|t| t == "ExternalName")
}

pub fn publishes_not_ready(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false)
}

/// The service's selector when it has one: services without one are managed by hand.
pub fn service_selector(service: &Service) -> Option<Selector> {
    let map = service.spec.as_ref()?.selector.as_ref()?;
    Selector::from_map(map).ok()
}

/// The container port `port` targets on `pod`: a number as is, a name looked up among the
/// pod's container ports of the same protocol (sidecar init containers included).
pub fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    let protocol = port.protocol.as_deref().unwrap_or("TCP");
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            if let Ok(n) = name.parse::<i32>() {
                return Some(n);
            }
            let spec = pod.spec.as_ref()?;
            let sidecars = spec
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            spec.containers
                .iter()
                .chain(sidecars)
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port)
        }
    }
}

/// Upstream's `ShouldSetHostname`: the pod's hostname is published when its subdomain names
/// the service.
pub fn hostname_for(pod: &Pod, service: &Service) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let hostname = spec.hostname.as_deref().filter(|h| !h.is_empty())?;
    let same_ns = pod.metadata.namespace == service.metadata.namespace;
    (same_ns && spec.subdomain.as_deref() == service.metadata.name.as_deref())
        .then(|| hostname.to_string())
}

pub fn node_name(pod: &Pod) -> Option<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
}

pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

/// The keys (`namespace/name`) of the services whose selector matches any of the pod's
/// label sets (the old and new labels of an update).
pub fn services_selecting(services: &Lister<Service>, pods: &[&Pod]) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let Some(ns) = pods.first().and_then(|p| p.metadata.namespace.clone()) else {
        return keys;
    };
    for service in services.namespace(&ns).list() {
        let Some(selector) = service_selector(&service) else {
            continue;
        };
        let selects = pods.iter().any(|pod| {
            let empty = Default::default();
            selector.matches(pod.metadata.labels.as_ref().unwrap_or(&empty))
        });
        if selects && let Some(name) = &service.metadata.name {
            keys.insert(format!("{ns}/{name}"));
        }
    }
    keys
}

/// The pods of the service's namespace its selector matches.
pub fn selected_pods(pods: &Lister<Pod>, service: &Service, selector: &Selector) -> Vec<Arc<Pod>> {
    let ns = service.metadata.namespace.as_deref().unwrap_or_default();
    pods.namespace(ns).list_selected(selector)
}

/// Formats a trigger time as upstream (RFC 3339 with nanoseconds, UTC).
pub fn format_trigger_time(t: jiff::Timestamp) -> String {
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec};

    fn pod_with_ports(ports: &[(&str, i32, &str)]) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(
                        ports
                            .iter()
                            .map(|(n, p, proto)| ContainerPort {
                                name: Some(n.to_string()),
                                container_port: *p,
                                protocol: Some(proto.to_string()),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn find_port_resolves_names_per_protocol() {
        let pod = pod_with_ports(&[("http", 8080, "TCP"), ("dns", 53, "UDP")]);
        let cases: Vec<(Option<IntOrString>, &str, Option<i32>)> = vec![
            (Some(IntOrString::String("http".into())), "TCP", Some(8080)),
            (Some(IntOrString::String("http".into())), "UDP", None),
            (Some(IntOrString::String("dns".into())), "UDP", Some(53)),
            (Some(IntOrString::String("missing".into())), "TCP", None),
            (Some(IntOrString::Int(9000)), "TCP", Some(9000)),
            (None, "TCP", Some(80)),
        ];
        for (target, proto, want) in cases {
            let port = ServicePort {
                port: 80,
                target_port: target.clone(),
                protocol: Some(proto.into()),
                ..Default::default()
            };
            assert_eq!(find_port(&pod, &port), want, "{target:?} {proto}");
        }
    }

    #[test]
    fn address_types() {
        assert_eq!(address_type("10.0.0.1"), Some("IPv4"));
        assert_eq!(address_type("fd00::1"), Some("IPv6"));
        assert_eq!(address_type("nope"), None);
    }
}
