//! The slices mirroring a hand-written Endpoints object: its subsets regrouped per address
//! family and port set, ready addresses with ready=true and not-ready ones with ready=false,
//! at most [`MAX_ENDPOINTS_PER_SUBSET`] addresses of each subset (ready ones first).

use crate::controller::endpoint::pods::address_type;
use crate::controller::endpointslice::reconcile::{DesiredGroup, PortsKey, ports_key};
use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
use std::collections::{BTreeMap, BTreeSet};

/// Upstream's `--mirroring-max-endpoints-per-subset` default.
pub const MAX_ENDPOINTS_PER_SUBSET: usize = 1000;

/// The desired groups, and whether any subset had more addresses than are mirrored.
pub fn desired_groups(endpoints: &Endpoints) -> (Vec<DesiredGroup>, bool) {
    let mut groups: BTreeMap<(String, PortsKey), DesiredGroup> = BTreeMap::new();
    let mut truncated = false;
    for subset in endpoints.subsets.iter().flatten() {
        let ports: Vec<EndpointPort> = subset
            .ports
            .iter()
            .flatten()
            .map(|p| EndpointPort {
                name: Some(p.name.clone().unwrap_or_default()),
                port: Some(p.port),
                protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: p.app_protocol.clone(),
            })
            .collect();
        let key = ports_key(&ports);
        let ready = subset.addresses.iter().flatten().map(|a| (a, true));
        let not_ready = subset
            .not_ready_addresses
            .iter()
            .flatten()
            .map(|a| (a, false));
        let all: Vec<(&EndpointAddress, bool)> = ready.chain(not_ready).collect();
        truncated |= all.len() > MAX_ENDPOINTS_PER_SUBSET;
        let mut seen = BTreeSet::new();
        for (address, is_ready) in all.into_iter().take(MAX_ENDPOINTS_PER_SUBSET) {
            // Invalid addresses cannot be expressed in a slice; an address listed twice is
            // mirrored once (ready wins, as it comes first).
            let Some(family) = address_type(&address.ip) else {
                continue;
            };
            if !seen.insert(address.ip.clone()) {
                continue;
            }
            groups
                .entry((family.to_string(), key.clone()))
                .or_insert_with(|| DesiredGroup {
                    address_type: family.to_string(),
                    ports: ports.clone(),
                    endpoints: Vec::new(),
                })
                .endpoints
                .push(Endpoint {
                    addresses: vec![address.ip.clone()],
                    conditions: Some(EndpointConditions {
                        ready: Some(is_ready),
                        ..Default::default()
                    }),
                    hostname: address.hostname.clone().filter(|h| !h.is_empty()),
                    node_name: address.node_name.clone().filter(|n| !n.is_empty()),
                    target_ref: address.target_ref.clone(),
                    ..Default::default()
                });
        }
    }
    (groups.into_values().collect(), truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EndpointPort as CorePort, EndpointSubset};

    fn addr(ip: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            ..Default::default()
        }
    }

    fn subset(port: i32, ready: &[&str], not_ready: &[&str]) -> EndpointSubset {
        EndpointSubset {
            addresses: Some(ready.iter().map(|ip| addr(ip)).collect()),
            not_ready_addresses: Some(not_ready.iter().map(|ip| addr(ip)).collect()),
            ports: Some(vec![CorePort {
                name: Some("p".into()),
                port,
                ..Default::default()
            }]),
        }
    }

    type Summary = (String, i32, Vec<(String, bool)>);

    #[test]
    fn regroups_by_family_and_ports() {
        let endpoints = Endpoints {
            subsets: Some(vec![
                subset(80, &["10.0.0.1", "fd00::1", "bogus"], &["10.0.0.2"]),
                subset(80, &["10.0.0.3"], &[]),
                subset(81, &["10.0.0.4"], &[]),
            ]),
            ..Default::default()
        };
        let (groups, truncated) = desired_groups(&endpoints);
        assert!(!truncated);
        let got: Vec<Summary> = groups
            .iter()
            .map(|g| {
                let eps = g
                    .endpoints
                    .iter()
                    .map(|e| {
                        let ready = e.conditions.as_ref().and_then(|c| c.ready);
                        (e.addresses[0].clone(), ready.unwrap_or_default())
                    })
                    .collect();
                (
                    g.address_type.clone(),
                    g.ports[0].port.unwrap_or_default(),
                    eps,
                )
            })
            .collect();
        let s = |ip: &str, r: bool| (ip.to_string(), r);
        assert_eq!(
            got,
            vec![
                (
                    "IPv4".into(),
                    80,
                    vec![
                        s("10.0.0.1", true),
                        s("10.0.0.2", false),
                        s("10.0.0.3", true)
                    ]
                ),
                ("IPv4".into(), 81, vec![s("10.0.0.4", true)]),
                ("IPv6".into(), 80, vec![s("fd00::1", true)]),
            ]
        );
    }

    #[test]
    fn caps_each_subset() {
        let ips: Vec<String> = (0..1200)
            .map(|i| format!("10.1.{}.{}", i / 250, i % 250))
            .collect();
        let refs: Vec<&str> = ips.iter().map(String::as_str).collect();
        let endpoints = Endpoints {
            subsets: Some(vec![subset(80, &refs, &[])]),
            ..Default::default()
        };
        let (groups, truncated) = desired_groups(&endpoints);
        assert!(truncated);
        assert_eq!(groups[0].endpoints.len(), MAX_ENDPOINTS_PER_SUBSET);
    }
}
