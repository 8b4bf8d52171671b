//! Service links: the docker-link style `<SVC>_SERVICE_HOST`, `<SVC>_PORT_...` variables
//! upstream's kubelet gives every container for the Services of its namespace
//! (`enableServiceLinks`) and for the master service `default/kubernetes` always.

use k8s_openapi::api::core::v1::Service;
use std::collections::BTreeMap;

const MASTER_NAMESPACE: &str = "default";
const MASTER_SERVICE: &str = "kubernetes";

/// The service env vars for a pod in `namespace`, sorted by service then as upstream lists them.
pub fn service_env(
    services: &[Service],
    namespace: &str,
    enable_service_links: bool,
) -> Vec<(String, String)> {
    // A Service of the pod's own namespace wins over the master service of the same name.
    let mut chosen: BTreeMap<String, &Service> = BTreeMap::new();
    for svc in services {
        let Some(ip) = svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) else {
            continue;
        };
        if ip.is_empty() || ip == "None" {
            continue;
        }
        let name = svc.metadata.name.clone().unwrap_or_default();
        let ns = svc.metadata.namespace.as_deref().unwrap_or("");
        if ns == MASTER_NAMESPACE && name == MASTER_SERVICE {
            chosen.entry(name).or_insert(svc);
        } else if ns == namespace && enable_service_links {
            chosen.insert(name, svc);
        }
    }
    let mut out = Vec::new();
    for (name, svc) in chosen {
        let Some(spec) = svc.spec.as_ref() else {
            continue;
        };
        let ip = spec.cluster_ip.clone().unwrap_or_default();
        let prefix = env_name(&name);
        out.push((format!("{prefix}_SERVICE_HOST"), ip.clone()));
        let ports = spec.ports.as_deref().unwrap_or_default();
        let Some(first) = ports.first() else {
            continue;
        };
        out.push((format!("{prefix}_SERVICE_PORT"), first.port.to_string()));
        for port in ports {
            if let Some(port_name) = port.name.as_deref().filter(|n| !n.is_empty()) {
                out.push((
                    format!("{prefix}_SERVICE_PORT_{}", env_name(port_name)),
                    port.port.to_string(),
                ));
            }
        }
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.clone()
        };
        let proto = |p: &k8s_openapi::api::core::v1::ServicePort| {
            p.protocol.clone().unwrap_or_else(|| "TCP".to_string())
        };
        out.push((
            format!("{prefix}_PORT"),
            format!("{}://{host}:{}", proto(first).to_lowercase(), first.port),
        ));
        for port in ports {
            let p = proto(port);
            let base = format!("{prefix}_PORT_{}_{}", port.port, p.to_uppercase());
            out.push((
                base.clone(),
                format!("{}://{host}:{}", p.to_lowercase(), port.port),
            ));
            out.push((format!("{base}_PROTO"), p.to_lowercase()));
            out.push((format!("{base}_PORT"), port.port.to_string()));
            out.push((format!("{base}_ADDR"), ip.clone()));
        }
    }
    out
}

fn env_name(name: &str) -> String {
    name.to_uppercase().replace('-', "_")
}
