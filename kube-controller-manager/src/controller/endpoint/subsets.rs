//! The subsets an Endpoints object should hold for a service and its pods: one address per
//! pod, grouped by the ports it resolves to (so pods whose named port maps to different
//! numbers land in different subsets), ready and not-ready apart, capped at
//! [`MAX_CAPACITY`] addresses.

use super::pods::{
    find_port, hostname_for, is_headless, is_pod_ready, node_name, pod_ip_of_family, pod_reference,
    publishes_not_ready, service_address_types, should_pod_be_in_endpoints,
};
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Pod, Service};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Addresses an Endpoints object holds at most; beyond, it is truncated and annotated.
pub const MAX_CAPACITY: usize = 1000;

/// (name, port, protocol, appProtocol): orders and compares ports.
type PortKey = (String, i32, String, Option<String>);

#[derive(Debug, Default, PartialEq)]
pub struct Desired {
    pub subsets: Vec<EndpointSubset>,
    /// More than [`MAX_CAPACITY`] addresses were found.
    pub truncated: bool,
}

#[derive(Default)]
struct Group {
    ready: BTreeMap<(String, String), EndpointAddress>,
    not_ready: BTreeMap<(String, String), EndpointAddress>,
}

pub fn desired_subsets(service: &Service, pods: &[Arc<Pod>]) -> Desired {
    let tolerate_unready = publishes_not_ready(service);
    let family = service_address_types(service)[0];
    let service_ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let mut groups: BTreeMap<Vec<PortKey>, Group> = BTreeMap::new();
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, tolerate_unready) {
            continue;
        }
        let Some(ip) = pod_ip_of_family(pod, family) else {
            continue;
        };
        let mut ports: Vec<PortKey> = Vec::new();
        if service_ports.is_empty() {
            // Only a headless service publishes addresses without ports.
            if !is_headless(service) {
                continue;
            }
        } else {
            for sp in &service_ports {
                // A port the pod does not expose leaves the pod out of that port only.
                if let Some(number) = find_port(pod, sp) {
                    ports.push((
                        sp.name.clone().unwrap_or_default(),
                        number,
                        sp.protocol.clone().unwrap_or_else(|| "TCP".into()),
                        sp.app_protocol.clone(),
                    ));
                }
            }
            if ports.is_empty() {
                continue;
            }
        }
        ports.sort();
        ports.dedup();
        let address = EndpointAddress {
            ip: ip.clone(),
            hostname: hostname_for(pod, service),
            node_name: node_name(pod),
            target_ref: Some(pod_reference(pod)),
        };
        let key = (ip, pod.metadata.uid.clone().unwrap_or_default());
        let group = groups.entry(ports).or_default();
        if tolerate_unready || is_pod_ready(pod) {
            group.not_ready.remove(&key);
            group.ready.insert(key, address);
        } else if !group.ready.contains_key(&key) {
            group.not_ready.insert(key, address);
        }
    }
    let total: usize = groups
        .values()
        .map(|g| g.ready.len() + g.not_ready.len())
        .sum();
    let truncated = total > MAX_CAPACITY;
    // Ready addresses are kept first when truncating: they are the ones serving traffic.
    let mut budget = MAX_CAPACITY;
    let mut ready_kept: Vec<Vec<EndpointAddress>> = Vec::new();
    for group in groups.values() {
        let take = group.ready.len().min(budget);
        budget -= take;
        ready_kept.push(group.ready.values().take(take).cloned().collect());
    }
    let mut subsets = Vec::new();
    for ((ports, group), ready) in groups.iter().zip(ready_kept) {
        let take = group.not_ready.len().min(budget);
        budget -= take;
        let not_ready: Vec<EndpointAddress> =
            group.not_ready.values().take(take).cloned().collect();
        if ready.is_empty() && not_ready.is_empty() {
            continue;
        }
        let ports: Vec<EndpointPort> = ports
            .iter()
            .map(|(name, port, protocol, app_protocol)| EndpointPort {
                name: Some(name.clone()).filter(|n| !n.is_empty()),
                port: *port,
                protocol: Some(protocol.clone()),
                app_protocol: app_protocol.clone(),
            })
            .collect();
        subsets.push(EndpointSubset {
            addresses: Some(ready).filter(|a| !a.is_empty()),
            not_ready_addresses: Some(not_ready).filter(|a| !a.is_empty()),
            ports: Some(ports).filter(|p| !p.is_empty()),
        });
    }
    Desired { subsets, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Container, ContainerPort, PodCondition, PodSpec, PodStatus, ServicePort, ServiceSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn pod(name: &str, ip: &str, ready: bool, http_port: i32) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(vec![ContainerPort {
                        name: Some("http".into()),
                        container_port: http_port,
                        ..Default::default()
                    }]),
                    ..Default::default()
                }],
                node_name: Some("n1".into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                pod_ip: Some(ip.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        })
    }

    fn service(publish_not_ready: bool) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("svc".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                selector: Some([("app".to_string(), "a".to_string())].into()),
                ports: Some(vec![ServicePort {
                    name: Some("web".into()),
                    port: 80,
                    target_port: Some(IntOrString::String("http".into())),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
                publish_not_ready_addresses: Some(publish_not_ready),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ips(addresses: &Option<Vec<EndpointAddress>>) -> Vec<&str> {
        addresses.iter().flatten().map(|a| a.ip.as_str()).collect()
    }

    #[test]
    fn subsets_by_readiness_and_port() {
        let mut deleting = (*pod("d", "10.0.0.9", true, 8080)).clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let mut finished = (*pod("f", "10.0.0.8", false, 8080)).clone();
        finished.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let no_ip = {
            let mut p = (*pod("x", "", true, 8080)).clone();
            p.status.as_mut().unwrap().pod_ip = None;
            p
        };
        let pods = vec![
            pod("a", "10.0.0.2", true, 8080),
            pod("b", "10.0.0.1", true, 8080),
            pod("c", "10.0.0.3", false, 8080),
            pod("e", "10.0.0.4", true, 9090),
            Arc::new(deleting),
            Arc::new(finished),
            Arc::new(no_ip),
        ];
        struct Case {
            publish: bool,
            want: Vec<(i32, Vec<&'static str>, Vec<&'static str>)>,
        }
        let cases = [
            Case {
                publish: false,
                want: vec![
                    (8080, vec!["10.0.0.1", "10.0.0.2"], vec!["10.0.0.3"]),
                    (9090, vec!["10.0.0.4"], vec![]),
                ],
            },
            Case {
                publish: true,
                want: vec![
                    (
                        8080,
                        vec!["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.9"],
                        vec![],
                    ),
                    (9090, vec!["10.0.0.4"], vec![]),
                ],
            },
        ];
        for case in cases {
            let got = desired_subsets(&service(case.publish), &pods);
            assert!(!got.truncated);
            let got: Vec<(i32, Vec<&str>, Vec<&str>)> = got
                .subsets
                .iter()
                .map(|s| {
                    (
                        s.ports.as_ref().unwrap()[0].port,
                        ips(&s.addresses),
                        ips(&s.not_ready_addresses),
                    )
                })
                .collect();
            assert_eq!(got, case.want, "publish={}", case.publish);
        }
    }

    #[test]
    fn truncates_over_capacity_keeping_ready_first() {
        let pods: Vec<Arc<Pod>> = (0..1100)
            .map(|i| {
                let ip = format!("10.1.{}.{}", i / 250, i % 250);
                pod(&format!("p{i}"), &ip, i % 2 == 0, 8080)
            })
            .collect();
        let got = desired_subsets(&service(false), &pods);
        assert!(got.truncated);
        let subset = &got.subsets[0];
        assert_eq!(subset.addresses.as_ref().unwrap().len(), 550);
        assert_eq!(subset.not_ready_addresses.as_ref().unwrap().len(), 450);
    }

    #[test]
    fn headless_without_ports_publishes_addresses() {
        let mut svc = service(false);
        let spec = svc.spec.as_mut().unwrap();
        spec.ports = None;
        spec.cluster_ip = Some("None".into());
        let got = desired_subsets(&svc, &[pod("a", "10.0.0.1", true, 1)]);
        assert_eq!(got.subsets.len(), 1);
        assert!(got.subsets[0].ports.is_none());
        spec_without_ports_not_headless();
    }

    fn spec_without_ports_not_headless() {
        let mut svc = service(false);
        svc.spec.as_mut().unwrap().ports = None;
        let got = desired_subsets(&svc, &[pod("a", "10.0.0.1", true, 1)]);
        assert!(got.subsets.is_empty());
    }
}
