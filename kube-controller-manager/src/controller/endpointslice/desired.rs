//! The endpoints a service's slices should hold: per address family and resolved port set,
//! one endpoint per pod with an IP of that family, terminating pods included (ready=false
//! unless the service publishes not-ready addresses; serving follows readiness).

use super::reconcile::{DesiredGroup, PortsKey, ports_key};
use crate::controller::endpoint::pods::{
    find_port, hostname_for, is_pod_ready, is_terminating, node_name, pod_ip_of_family,
    pod_reference, publishes_not_ready, service_address_types, should_pod_be_in_endpoints,
};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, ForZone,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a node lookup found: `None` when the node is not known, else its zone (if labelled).
pub type ZoneOf<'a> = &'a dyn Fn(&str) -> Option<Option<String>>;

/// The desired groups and the pods skipped because their node is unknown (an error upstream
/// too: the service is retried until the node shows up or the pod goes).
pub fn desired_groups(
    service: &Service,
    pods: &[Arc<Pod>],
    zone_of: ZoneOf<'_>,
) -> (Vec<DesiredGroup>, Vec<String>) {
    let publish = publishes_not_ready(service);
    // trafficDistribution PreferClose: each zoned endpoint is hinted for its own zone.
    let prefer_close = service
        .spec
        .as_ref()
        .and_then(|s| s.traffic_distribution.as_deref())
        == Some("PreferClose");
    let families = service_address_types(service);
    let service_ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let mut pods: Vec<&Arc<Pod>> = pods.iter().collect();
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut errors = Vec::new();
    let mut groups = Vec::new();
    for family in &families {
        let mut by_ports: BTreeMap<PortsKey, DesiredGroup> = BTreeMap::new();
        for pod in &pods {
            if !should_pod_be_in_endpoints(pod, true) {
                continue;
            }
            let Some(ip) = pod_ip_of_family(pod, family) else {
                continue;
            };
            let node = node_name(pod);
            let zone = match zone_of(node.as_deref().unwrap_or_default()) {
                Some(zone) => zone,
                // Published regardless: the user asked for every address.
                None if publish => None,
                None => {
                    errors.push(format!(
                        "skipping pod {} for service {}: node {:?} not found",
                        pod.metadata.name.as_deref().unwrap_or_default(),
                        service.metadata.name.as_deref().unwrap_or_default(),
                        node.as_deref().unwrap_or_default()
                    ));
                    continue;
                }
            };
            let ports: Vec<EndpointPort> = service_ports
                .iter()
                .filter_map(|sp| {
                    let number = find_port(pod, sp)?;
                    Some(EndpointPort {
                        name: Some(sp.name.clone().unwrap_or_default()),
                        port: Some(number),
                        protocol: Some(sp.protocol.clone().unwrap_or_else(|| "TCP".into())),
                        app_protocol: sp.app_protocol.clone(),
                    })
                })
                .collect();
            let terminating = is_terminating(pod);
            let serving = is_pod_ready(pod);
            // Never ready while terminating, unless every address is published.
            let ready = publish || (serving && !terminating);
            let hints = zone
                .as_ref()
                .filter(|_| prefer_close)
                .map(|z| EndpointHints {
                    for_zones: Some(vec![ForZone { name: z.clone() }]),
                    ..Default::default()
                });
            let endpoint = Endpoint {
                addresses: vec![ip],
                conditions: Some(EndpointConditions {
                    ready: Some(ready),
                    serving: Some(serving),
                    terminating: Some(terminating),
                }),
                hostname: hostname_for(pod, service),
                node_name: node,
                zone,
                target_ref: Some(pod_reference(pod)),
                hints,
                ..Default::default()
            };
            by_ports
                .entry(ports_key(&ports))
                .or_insert_with(|| DesiredGroup {
                    address_type: family.to_string(),
                    ports,
                    endpoints: Vec::new(),
                })
                .endpoints
                .push(endpoint);
        }
        groups.extend(by_ports.into_values());
    }
    if groups.is_empty() {
        // A service without endpoints keeps one empty slice, so consumers can tell "no
        // endpoints" from "not processed yet".
        groups.push(DesiredGroup {
            address_type: families[0].to_string(),
            ports: Vec::new(),
            endpoints: Vec::new(),
        });
    }
    (groups, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Container, ContainerPort, PodCondition, PodIP, PodSpec, PodStatus, ServicePort, ServiceSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn pod(name: &str, ips: &[&str], ready: bool, deleting: bool, node: &str) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(name.into()),
                deletion_timestamp: deleting.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(vec![ContainerPort {
                        name: Some("http".into()),
                        container_port: 8080,
                        ..Default::default()
                    }]),
                    ..Default::default()
                }],
                node_name: Some(node.into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                pod_ip: ips.first().map(|s| s.to_string()),
                pod_ips: Some(ips.iter().map(|ip| PodIP { ip: ip.to_string() }).collect()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    fn service(families: &[&str], publish: bool) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("svc".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                ip_families: Some(families.iter().map(|f| f.to_string()).collect()),
                publish_not_ready_addresses: Some(publish),
                ports: Some(vec![ServicePort {
                    name: Some("web".into()),
                    port: 80,
                    target_port: Some(IntOrString::String("http".into())),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn zone_of(node: &str) -> Option<Option<String>> {
        match node {
            "n1" => Some(Some("z1".into())),
            "n2" => Some(None),
            _ => None,
        }
    }

    /// (address type, [(ip, ready, serving, terminating, zone)]) per group.
    type Summary = Vec<(String, Vec<(String, bool, bool, bool, Option<String>)>)>;

    fn summarize(groups: &[DesiredGroup]) -> Summary {
        groups
            .iter()
            .map(|g| {
                let eps = g
                    .endpoints
                    .iter()
                    .map(|e| {
                        let c = e.conditions.clone().unwrap_or_default();
                        (
                            e.addresses[0].clone(),
                            c.ready.unwrap_or_default(),
                            c.serving.unwrap_or_default(),
                            c.terminating.unwrap_or_default(),
                            e.zone.clone(),
                        )
                    })
                    .collect();
                (g.address_type.clone(), eps)
            })
            .collect()
    }

    #[test]
    fn conditions_families_and_zones() {
        let pods = vec![
            pod("a", &["10.0.0.1", "fd00::1"], true, false, "n1"),
            pod("b", &["10.0.0.2"], false, false, "n2"),
            pod("c", &["10.0.0.3"], true, true, "n1"),
            pod("d", &["10.0.0.4"], true, false, "gone"),
        ];
        let z = |s: Option<&str>| s.map(str::to_string);
        let (groups, errors) = desired_groups(&service(&["IPv4", "IPv6"], false), &pods, &zone_of);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            summarize(&groups),
            vec![
                (
                    "IPv4".to_string(),
                    vec![
                        ("10.0.0.1".into(), true, true, false, z(Some("z1"))),
                        ("10.0.0.2".into(), false, false, false, None),
                        ("10.0.0.3".into(), false, true, true, z(Some("z1"))),
                    ]
                ),
                (
                    "IPv6".to_string(),
                    vec![("fd00::1".into(), true, true, false, z(Some("z1")))]
                ),
            ]
        );
        assert_eq!(groups[0].ports[0].port, Some(8080));

        let (groups, errors) = desired_groups(&service(&["IPv4"], true), &pods, &zone_of);
        assert!(errors.is_empty());
        let ready: Vec<bool> = summarize(&groups)[0].1.iter().map(|e| e.1).collect();
        assert_eq!(ready, vec![true, true, true, true]);
    }

    #[test]
    fn prefer_close_hints_zoned_endpoints() {
        let pods = vec![
            pod("a", &["10.0.0.1"], true, false, "n1"),
            pod("b", &["10.0.0.2"], true, false, "n2"),
        ];
        let hints = |svc: &Service| -> Vec<Option<String>> {
            let (groups, _) = desired_groups(svc, &pods, &zone_of);
            groups[0]
                .endpoints
                .iter()
                .map(|e| {
                    let zones = e.hints.as_ref().and_then(|h| h.for_zones.clone());
                    zones.map(|z| z[0].name.clone())
                })
                .collect()
        };
        let mut svc = service(&["IPv4"], false);
        assert_eq!(hints(&svc), vec![None, None]);
        svc.spec.as_mut().unwrap().traffic_distribution = Some("PreferClose".into());
        assert_eq!(hints(&svc), vec![Some("z1".to_string()), None]);
    }

    #[test]
    fn placeholder_without_pods() {
        let (groups, _) = desired_groups(&service(&["IPv6"], false), &[], &zone_of);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].address_type, "IPv6");
        assert!(groups[0].endpoints.is_empty() && groups[0].ports.is_empty());
    }
}
