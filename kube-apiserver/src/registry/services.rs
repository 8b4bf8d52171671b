//! Cluster IPs and node ports of Services. An IP is taken by creating its `IPAddress` object
//! (networking.k8s.io/v1, as upstream 1.33's allocator does) and a node port by creating a marker
//! key: both are atomic creates, so two apiservers never hand out the same one.

use super::error::RegistryError;
use super::keys;
use crate::storage::backend::{Backend, StorageError};
use crate::storage::codec;
use api_types::registry::by_group_version_resource;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use rand::Rng;
use serde_json::{Value, json};
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;
use std::sync::Arc;

/// Where node port markers live (upstream keeps a bitmap at this key).
const NODE_PORT_PREFIX: &str = "/registry/ranges/servicenodeports/";

/// An IPv4 CIDR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Cidr {
    pub network: Ipv4Addr,
    pub prefix_len: u8,
}

impl Ipv4Cidr {
    /// Parses `a.b.c.d/n`; the address is masked to its network as Go's ParseCIDR does.
    pub fn parse(s: &str) -> Result<Self, String> {
        let invalid = || format!("invalid CIDR address: {s}");
        let (addr, len) = s.split_once('/').ok_or_else(invalid)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| invalid())?;
        let prefix_len: u8 = len.parse().map_err(|_| invalid())?;
        if prefix_len > 32 {
            return Err(invalid());
        }
        let mask = if prefix_len == 0 {
            0
        } else {
            u32::MAX << (32 - prefix_len)
        };
        Ok(Self {
            network: Ipv4Addr::from(u32::from(addr) & mask),
            prefix_len,
        })
    }

    /// How many addresses the block holds.
    pub fn size(&self) -> u64 {
        1u64 << (32 - self.prefix_len)
    }

    /// Whether `ip` is an assignable address of the block (not the network or broadcast one).
    pub fn contains_assignable(&self, ip: Ipv4Addr) -> bool {
        let offset = u64::from(u32::from(ip).wrapping_sub(u32::from(self.network)));
        u32::from(ip) >= u32::from(self.network) && offset >= 1 && offset + 1 < self.size()
    }

    /// The `n`th address of the block.
    pub fn nth(&self, n: u64) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network).wrapping_add(n as u32))
    }
}

/// Hands out and takes back service cluster IPs and node ports.
pub struct ServiceAllocator {
    backend: Arc<dyn Backend>,
    pub cluster_ip_range: Ipv4Cidr,
    pub node_port_range: RangeInclusive<u16>,
}

fn invalid(name: &str, field: FieldPath, value: &str, detail: &str) -> RegistryError {
    let mut errors = ErrorList::new();
    errors.push(FieldError::invalid(&field, value, detail));
    RegistryError::Invalid {
        group: String::new(),
        kind: "Service".into(),
        name: name.into(),
        errors,
    }
}

fn wants_node_ports(service: &Value) -> bool {
    matches!(
        service["spec"]["type"].as_str(),
        Some("NodePort" | "LoadBalancer")
    )
}

fn wants_cluster_ip(service: &Value) -> bool {
    service["spec"]["type"].as_str() != Some("ExternalName")
        && service["spec"]["clusterIP"].as_str() != Some("None")
}

impl ServiceAllocator {
    pub fn new(
        backend: Arc<dyn Backend>,
        cluster_ip_range: Ipv4Cidr,
        node_port_range: RangeInclusive<u16>,
    ) -> Self {
        Self {
            backend,
            cluster_ip_range,
            node_port_range,
        }
    }

    fn ip_key(ip: &str) -> String {
        let info = by_group_version_resource("networking.k8s.io", "v1", "ipaddresses")
            .expect("ipaddresses are in the registry");
        keys::object_key(info, None, ip)
    }

    /// Takes `ip` for the service; false if another holds it.
    async fn take_ip(
        &self,
        ip: Ipv4Addr,
        namespace: &str,
        name: &str,
    ) -> Result<bool, RegistryError> {
        let object = json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": ip.to_string(),
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": super::meta::now(),
                "labels": {"ipaddress.kubernetes.io/ip-family": "IPv4",
                           "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"},
            },
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": name}},
        });
        match self
            .backend
            .create(&Self::ip_key(&ip.to_string()), codec::encode(&object)?)
            .await
        {
            Ok(_) => Ok(true),
            Err(StorageError::AlreadyExists { .. }) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    async fn take_port(
        &self,
        port: u16,
        namespace: &str,
        name: &str,
    ) -> Result<bool, RegistryError> {
        let marker = json!({"service": format!("{namespace}/{name}")});
        match self
            .backend
            .create(
                &format!("{NODE_PORT_PREFIX}{port}"),
                codec::encode(&marker)?,
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(StorageError::AlreadyExists { .. }) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Gives the new service its cluster IP and node ports (or takes the ones it names).
    /// On error nothing stays allocated.
    pub async fn allocate(&self, service: &mut Value) -> Result<(), RegistryError> {
        let namespace = service["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = service["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if wants_cluster_ip(service) {
            let ip = self.allocate_ip(service, &namespace, &name).await?;
            let spec = &mut service["spec"];
            spec["clusterIP"] = json!(ip.to_string());
            spec["clusterIPs"] = json!([ip.to_string()]);
            spec["ipFamilies"] = json!(["IPv4"]);
            if spec["ipFamilyPolicy"].is_null() {
                spec["ipFamilyPolicy"] = json!("SingleStack");
            }
        }
        if wants_node_ports(service)
            && let Err(err) = self
                .allocate_node_ports(service, None, &namespace, &name)
                .await
        {
            self.release(service).await;
            return Err(err);
        }
        Ok(())
    }

    async fn allocate_ip(
        &self,
        service: &Value,
        namespace: &str,
        name: &str,
    ) -> Result<Ipv4Addr, RegistryError> {
        let range = self.cluster_ip_range;
        let path = FieldPath::new("spec").child("clusterIPs").index(0);
        if let Some(given) = service["spec"]["clusterIP"]
            .as_str()
            .filter(|s| !s.is_empty())
        {
            let ip: Ipv4Addr = given
                .parse()
                .map_err(|_| invalid(name, path.clone(), given, "must be a valid IP address"))?;
            if !range.contains_assignable(ip) {
                return Err(invalid(
                    name,
                    path,
                    given,
                    &format!(
                        "failed to allocate IP {given}: provided IP is not in the valid range. The range of valid IPs is {}/{}",
                        range.network, range.prefix_len
                    ),
                ));
            }
            if !self.take_ip(ip, namespace, name).await? {
                return Err(invalid(
                    name,
                    path,
                    given,
                    &format!("failed to allocate IP {given}: provided IP is already allocated"),
                ));
            }
            return Ok(ip);
        }
        // Start at a random offset so concurrent creators rarely race for the same address;
        // skip the network address, the broadcast one and the first (the kubernetes service's).
        let usable = range.size().saturating_sub(3);
        let start = rand::rng().random_range(0..usable.max(1));
        for step in 0..usable {
            let ip = range.nth(2 + (start + step) % usable);
            if self.take_ip(ip, namespace, name).await? {
                return Ok(ip);
            }
        }
        Err(RegistryError::Storage(StorageError::Internal(
            "failed to allocate a serviceIP: range is full".into(),
        )))
    }

    /// Assigns a node port to every port of a NodePort/LoadBalancer service that lacks one,
    /// keeping those `old` already holds.
    async fn allocate_node_ports(
        &self,
        service: &mut Value,
        old: Option<&Value>,
        namespace: &str,
        name: &str,
    ) -> Result<(), RegistryError> {
        let held: Vec<u64> = old.map(node_ports).unwrap_or_default();
        let Some(ports) = service["spec"]["ports"].as_array_mut() else {
            return Ok(());
        };
        let range = self.node_port_range.clone();
        let span = u64::from(*range.end() - *range.start()) + 1;
        for (index, port) in ports.iter_mut().enumerate() {
            if let Some(given) = port["nodePort"].as_u64().filter(|p| *p != 0) {
                if held.contains(&given) {
                    continue;
                }
                let path = FieldPath::new("spec")
                    .child("ports")
                    .index(index)
                    .child("nodePort");
                if !range.contains(&(given as u16)) || given > u64::from(u16::MAX) {
                    return Err(invalid(
                        name,
                        path,
                        &given.to_string(),
                        &format!(
                            "provided port is not in the valid range. The range of valid ports is {}-{}",
                            range.start(),
                            range.end()
                        ),
                    ));
                }
                if !self.take_port(given as u16, namespace, name).await? {
                    return Err(invalid(
                        name,
                        path,
                        &given.to_string(),
                        "provided port is already allocated",
                    ));
                }
                continue;
            }
            let start = rand::rng().random_range(0..span);
            let mut taken = None;
            for step in 0..span {
                let candidate = *range.start() + ((start + step) % span) as u16;
                if self.take_port(candidate, namespace, name).await? {
                    taken = Some(candidate);
                    break;
                }
            }
            let Some(candidate) = taken else {
                return Err(RegistryError::Storage(StorageError::Internal(
                    "failed to allocate a nodePort: range is full".into(),
                )));
            };
            port["nodePort"] = json!(candidate);
        }
        Ok(())
    }

    /// Carries allocations across an update: the cluster IP stays, node ports follow the type.
    pub async fn reconcile_update(
        &self,
        new: &mut Value,
        old: &Value,
    ) -> Result<(), RegistryError> {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if new["spec"][field].is_null() && !old["spec"][field].is_null() {
                new["spec"][field] = old["spec"][field].clone();
            }
        }
        let namespace = old["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = old["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if wants_node_ports(new) {
            // Ports that kept their port number keep their node port unless a new one is given.
            let old_ports = old["spec"]["ports"].as_array().cloned().unwrap_or_default();
            if let Some(ports) = new["spec"]["ports"].as_array_mut() {
                for port in ports.iter_mut().filter(|p| p["nodePort"].is_null()) {
                    if let Some(prev) = old_ports.iter().find(|o| o["port"] == port["port"]) {
                        port["nodePort"] = prev["nodePort"].clone();
                    }
                }
            }
            self.allocate_node_ports(new, Some(old), &namespace, &name)
                .await?;
        }
        let kept = node_ports(new);
        for port in node_ports(old).into_iter().filter(|p| !kept.contains(p)) {
            let _ = self
                .backend
                .delete(&format!("{NODE_PORT_PREFIX}{port}"), None)
                .await;
        }
        Ok(())
    }

    /// Returns what a deleted service held.
    pub async fn release(&self, service: &Value) {
        if let Some(ip) = service["spec"]["clusterIP"]
            .as_str()
            .filter(|ip| ip.parse::<Ipv4Addr>().is_ok())
        {
            let _ = self.backend.delete(&Self::ip_key(ip), None).await;
        }
        for port in node_ports(service) {
            let _ = self
                .backend
                .delete(&format!("{NODE_PORT_PREFIX}{port}"), None)
                .await;
        }
    }
}

fn node_ports(service: &Value) -> Vec<u64> {
    service["spec"]["ports"]
        .as_array()
        .map(|ports| {
            ports
                .iter()
                .filter_map(|p| p["nodePort"].as_u64())
                .filter(|p| *p != 0)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_parsing_and_membership() {
        let cidr = Ipv4Cidr::parse("10.0.0.7/24").unwrap();
        assert_eq!(
            (cidr.network, cidr.prefix_len, cidr.size()),
            (Ipv4Addr::new(10, 0, 0, 0), 24, 256)
        );
        assert!(cidr.contains_assignable("10.0.0.1".parse().unwrap()));
        assert!(cidr.contains_assignable("10.0.0.254".parse().unwrap()));
        assert!(!cidr.contains_assignable("10.0.0.0".parse().unwrap()));
        assert!(!cidr.contains_assignable("10.0.0.255".parse().unwrap()));
        assert!(!cidr.contains_assignable("10.0.1.1".parse().unwrap()));
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "10.0.0.0/-1", ""] {
            assert!(Ipv4Cidr::parse(bad).is_err(), "{bad}");
        }
    }
}
