//! `create service clusterip|nodeport|loadbalancer|externalname` and `create serviceaccount`.

use super::send::{self, Wrap};
use super::simple::CommonArgs;
use crate::app::options::GlobalOptions;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

/// `kubectl create service` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum ServiceCommand {
    /// Create a ClusterIP service
    Clusterip(ServiceArgs),
    /// Create a NodePort service
    Nodeport(ServiceArgs),
    /// Create a LoadBalancer service
    Loadbalancer(ServiceArgs),
    /// Create an ExternalName service
    Externalname(ServiceArgs),
}

/// Flags of the service generators (each accepts only its own subset upstream; extra ones are
/// ignored here).
#[derive(Debug, Clone, Args)]
pub struct ServiceArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Port pairs can be specified as '<port>:<targetPort>'.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub tcp: Vec<String>,
    /// Assign your own ClusterIP or set to 'None' for a 'headless' service (no loadbalancing).
    #[arg(long, value_name = "string")]
    pub clusterip: Option<String>,
    /// Port used to expose the service on each node in a cluster.
    #[arg(long, default_value_t = 0, value_name = "int")]
    pub node_port: i32,
    /// External name of service
    #[arg(long, value_name = "string")]
    pub external_name: Option<String>,
}

fn parse_port(text: &str, spec: &str) -> anyhow::Result<i64> {
    text.parse::<i32>()
        .map(i64::from)
        .map_err(|_| anyhow::anyhow!("strconv.Atoi: parsing {text:?}: invalid syntax (in {spec})"))
}

/// `port[:targetPort]`; a non-numeric target is a port name.
fn service_port(spec: &str, node_port: i32) -> anyhow::Result<Value> {
    let (port, target) = match spec.split_once(':') {
        Some((p, t)) => (p, t),
        None => (spec, spec),
    };
    let port = parse_port(port, spec)?;
    let target = match target.parse::<i32>() {
        Ok(n) => json!(n),
        Err(_) => json!(target),
    };
    let mut out = json!({
        "name": spec.replace(':', "-"),
        "port": port,
        "targetPort": target,
        "protocol": "TCP",
    });
    if node_port != 0 {
        out["nodePort"] = json!(node_port);
    }
    Ok(out)
}

pub fn service(name: &str, kind: &str, args: &ServiceArgs) -> anyhow::Result<Value> {
    let clusterip = args.clusterip.as_deref().unwrap_or("");
    if clusterip == "None" && kind != "ClusterIP" {
        anyhow::bail!("ClusterIP=None can only be used with ClusterIP service type");
    }
    if kind == "ExternalName" && args.external_name.is_none() {
        anyhow::bail!("required flag(s) \"external-name\" not set");
    }
    if clusterip != "None" && args.tcp.is_empty() && kind != "ExternalName" {
        anyhow::bail!("at least one tcp port specifier must be provided");
    }
    let ports = args
        .tcp
        .iter()
        .map(|spec| service_port(spec, args.node_port))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let labels = json!({"app": name});
    let mut spec = json!({"type": kind, "selector": labels});
    if !ports.is_empty() {
        spec["ports"] = json!(ports);
    }
    if let Some(external) = args.external_name.as_deref().filter(|e| !e.is_empty()) {
        spec["externalName"] = json!(external);
    }
    if !clusterip.is_empty() {
        spec["clusterIP"] = json!(clusterip);
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": null},
        "spec": spec,
        "status": {"loadBalancer": {}},
    }))
}

pub async fn run_service(global: &GlobalOptions, command: &ServiceCommand) -> anyhow::Result<()> {
    let (args, kind, usage) = match command {
        ServiceCommand::Clusterip(a) => (a, "ClusterIP", "service clusterip"),
        ServiceCommand::Nodeport(a) => (a, "NodePort", "service nodeport"),
        ServiceCommand::Loadbalancer(a) => (a, "LoadBalancer", "service loadbalancer"),
        ServiceCommand::Externalname(a) => (a, "ExternalName", "service externalname"),
    };
    let name = send::one_name(&args.common, usage)?;
    let object = service(name, kind, args)?;
    let prefix: &'static str = match kind {
        "ClusterIP" => "failed to create ClusterIP service",
        "NodePort" => "failed to create NodePort service",
        "LoadBalancer" => "failed to create LoadBalancer service",
        _ => "failed to create ExternalName service",
    };
    send::send(global, &args.common, object, true, Wrap::Colon(prefix)).await
}

pub async fn run_serviceaccount(global: &GlobalOptions, common: &CommonArgs) -> anyhow::Result<()> {
    let name = send::one_name(common, "serviceaccount")?;
    let object = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "creationTimestamp": null}});
    let wrap = Wrap::Colon("failed to create serviceaccount");
    send::send(global, common, object, true, wrap).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        for (spec, node_port, want) in [
            (
                "80:8080",
                0,
                json!({"name": "80-8080", "port": 80, "targetPort": 8080, "protocol": "TCP"}),
            ),
            (
                "443",
                30001,
                json!({"name": "443", "port": 443, "targetPort": 443, "protocol": "TCP", "nodePort": 30001}),
            ),
            (
                "80:http",
                0,
                json!({"name": "80-http", "port": 80, "targetPort": "http", "protocol": "TCP"}),
            ),
        ] {
            assert_eq!(service_port(spec, node_port).unwrap(), want, "{spec}");
        }
        assert!(service_port("x", 0).is_err());
    }
}
