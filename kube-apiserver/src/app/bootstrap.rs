//! Objects every cluster has from the start: the system namespaces, the system priority
//! classes, and the `kubernetes` service in `default` with the endpoints of this apiserver.

use super::config::Config;
use crate::registry::{Part, RegistryError};
use crate::rest::state::ApiState;
use serde_json::{Value, json};
use std::net::Ipv4Addr;

/// Namespaces upstream creates at start-up.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates what is missing; existing objects are left as they are (the endpoints are updated
/// to this server's address).
pub async fn ensure(state: &ApiState, config: &Config) -> anyhow::Result<()> {
    let namespaces = state
        .store("", "v1", "namespaces")
        .expect("namespaces are served");
    for name in SYSTEM_NAMESPACES {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        ignore_exists(namespaces.create(None, ns).await)?;
    }

    // system-node-critical and system-cluster-critical, which upstream's apiserver creates.
    let priority_classes = state
        .store("scheduling.k8s.io", "v1", "priorityclasses")
        .expect("priorityclasses are served");
    for class in crate::admission::plugins::priority::system_priority_classes() {
        ignore_exists(priority_classes.create(None, class).await)?;
    }

    // API Priority and Fairness: upstream's mandatory and suggested configuration.
    super::bootstrap_flowcontrol::ensure(state).await?;

    let range = config.service_cluster_ip_range;
    // The first address of the service range belongs to the `kubernetes` service.
    let cluster_ip = Ipv4Addr::from(u32::from(range.network) + 1);
    let port = config.secure_serving.secure_port;
    let services = state
        .store("", "v1", "services")
        .expect("services are served");
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": cluster_ip.to_string(),
            "clusterIPs": [cluster_ip.to_string()],
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    });
    // Its address is already held once it exists, so a second create would fail on the IP.
    match services.get(Some("default"), "kubernetes").await {
        Ok(_) => {}
        Err(RegistryError::NotFound { .. }) => {
            ignore_exists(services.create(Some("default"), service).await)?
        }
        Err(err) => return Err(err.into()),
    }

    let endpoints = state
        .store("", "v1", "endpoints")
        .expect("endpoints are served");
    let wanted = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{
            "addresses": [{"ip": config.advertise_address.to_string()}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    });
    match endpoints.create(Some("default"), wanted.clone()).await {
        Ok(_) => {}
        Err(RegistryError::AlreadyExists { .. }) => {
            endpoints
                .update(Some("default"), "kubernetes", wanted, Part::Main)
                .await?;
        }
        Err(err) => return Err(err.into()),
    }
    Ok(())
}

fn ignore_exists(result: Result<Value, RegistryError>) -> anyhow::Result<()> {
    match result {
        Ok(_) | Err(RegistryError::AlreadyExists { .. }) => Ok(()),
        Err(err) => Err(err.into()),
    }
}
