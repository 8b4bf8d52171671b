//! `kubectl cluster-info`: where the control plane and the cluster services
//! (`kubernetes.io/cluster-service=true`) are reached.

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use clap::Args;
use serde_json::Value;
use std::io::IsTerminal;

/// Flags of `kubectl cluster-info`.
#[derive(Debug, Clone, Args)]
pub struct ClusterInfoArgs {}

fn line(name: &str, link: &str, color: bool) -> String {
    if color {
        format!("\x1b[0;32m{name}\x1b[0m is running at \x1b[0;33m{link}\x1b[0m\n")
    } else {
        format!("{name} is running at {link}\n")
    }
}

/// The proxy link of a service without a load balancer: `<scheme>:<name>:<port name>`, the
/// scheme guessed from the first port.
fn service_link(host: &str, service: &Value) -> String {
    let meta = &service["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let namespace = meta["namespace"].as_str().unwrap_or_default();
    if let Some(ingress) = service["status"]["loadBalancer"]["ingress"].get(0) {
        let ip = ingress["ip"]
            .as_str()
            .filter(|ip| !ip.is_empty())
            .or(ingress["hostname"].as_str())
            .unwrap_or_default();
        let ports = service["spec"]["ports"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        return ports
            .iter()
            .map(|p| format!("http://{ip}:{} ", p["port"].as_i64().unwrap_or(0)))
            .collect();
    }
    let mut target = name.to_string();
    if let Some(port) = service["spec"]["ports"].get(0) {
        let port_name = port["name"].as_str().unwrap_or_default();
        let https = port_name == "https" || port["port"].as_i64() == Some(443);
        target = match (https, port_name.is_empty()) {
            (true, _) => format!("https:{name}:{port_name}"),
            (false, false) => format!("{name}:{port_name}"),
            (false, true) => name.to_string(),
        };
    }
    format!("{host}/api/v1/namespaces/{namespace}/services/{target}/proxy")
}

pub async fn run(global: &GlobalOptions, _args: &ClusterInfoArgs) -> anyhow::Result<()> {
    let config = crate::app::config::client_config(global).await?;
    let host = config
        .kube
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let factory = Factory::new(global).await?;
    // Cluster services live in kube-system unless -n says otherwise.
    let namespace = global
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "kube-system".into());
    let color = std::io::stdout().is_terminal();
    print!("{}", line("Kubernetes control plane", &host, color));
    let mut out = String::new();
    let list = factory
        .get(&format!(
            "/api/v1/namespaces/{namespace}/services?labelSelector=kubernetes.io%2Fcluster-service%3Dtrue"
        ))
        .await?;
    for service in list["items"].as_array().into_iter().flatten() {
        let labels = &service["metadata"]["labels"];
        let name = labels["kubernetes.io/name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .or(service["metadata"]["name"].as_str())
            .unwrap_or_default();
        out.push_str(&line(name, &service_link(&host, service), color));
    }
    out.push_str(
        "\nTo further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.\n",
    );
    print!("{out}");
    Ok(())
}
