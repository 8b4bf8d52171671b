//! `kubectl expose (TYPE NAME | TYPE/NAME | -f FILE)`: a Service for a pod, service,
//! replication controller, deployment or replica set, its selector, ports and protocols read
//! from the object unless given, as upstream's generator builds it.

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::resource::{self, Selection};
use clap::Args;
use serde_json::{Map, Value, json};

/// Flags of `kubectl expose`.
#[derive(Debug, Clone, Args)]
pub struct ExposeArgs {
    /// (-f FILENAME | TYPE NAME)
    pub args: Vec<String>,
    /// Filename, directory, or URL to files identifying the resource to expose a service
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// The port that the service should serve on.
    #[arg(long, value_name = "string")]
    pub port: Option<String>,
    /// Name or number for the port on the container that the service should direct traffic to.
    #[arg(long, value_name = "string")]
    pub target_port: Option<String>,
    /// The network protocol for the service to be created.
    #[arg(long, value_name = "string")]
    pub protocol: Option<String>,
    /// The name for the newly created object.
    #[arg(long, value_name = "string")]
    pub name: Option<String>,
    /// Type for this service: ClusterIP, NodePort, LoadBalancer, or ExternalName.
    #[arg(long = "type", value_name = "string")]
    pub service_type: Option<String>,
    /// A label selector to use for this service.
    #[arg(long, value_name = "string")]
    pub selector: Option<String>,
    /// Labels to apply to the service created by this call.
    #[arg(short = 'l', long, value_name = "string")]
    pub labels: Option<String>,
    /// Additional external IP address (not managed by Kubernetes) to accept for the service.
    #[arg(long, value_name = "string")]
    pub external_ip: Option<String>,
    /// ClusterIP to be assigned to the service. Leave empty to auto-allocate.
    #[arg(long = "cluster-ip", value_name = "string")]
    pub cluster_ip: Option<String>,
    /// If non-empty, set the session affinity for the service to this; legal values: 'None', 'ClientIP'
    #[arg(long, value_name = "string")]
    pub session_affinity: Option<String>,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    #[command(flatten)]
    pub overrides: crate::cmd::overrides::OverrideFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-expose", value_name = "string")]
    pub field_manager: String,
}

fn labels_text(map: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

fn parse_labels(text: &str) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for pair in text.split(',').filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            anyhow::bail!("invalid label spec: {pair}");
        };
        out.insert(k.to_owned(), json!(v));
    }
    Ok(out)
}

/// The selector upstream introspects (`MapBasedSelectorForObject`).
pub fn selector_of(kind: &str, object: &Value) -> anyhow::Result<String> {
    let obj = |p: &str| object.pointer(p).and_then(Value::as_object);
    let text = match kind {
        "Pod" => {
            let labels = labels_text(obj("/metadata/labels"));
            if labels.is_empty() {
                anyhow::bail!("the pod has no labels and cannot be exposed");
            }
            labels
        }
        "Service" => {
            let s = labels_text(obj("/spec/selector"));
            if s.is_empty() {
                anyhow::bail!("the service has no pod selector set");
            }
            s
        }
        "ReplicationController" => labels_text(obj("/spec/selector")),
        "Deployment" | "ReplicaSet" => {
            if object
                .pointer("/spec/selector/matchExpressions")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty())
            {
                anyhow::bail!(
                    "couldn't convert expressions - \"{}\" to map-based selector format",
                    object["spec"]["selector"]["matchExpressions"]
                );
            }
            labels_text(obj("/spec/selector/matchLabels"))
        }
        other => anyhow::bail!("cannot extract pod selector from {other}"),
    };
    Ok(text)
}

/// The ports (and their protocols) upstream introspects (`PortsForObject`).
pub fn ports_of(kind: &str, object: &Value) -> Vec<(i64, String)> {
    let containers = match kind {
        "Pod" => object.pointer("/spec/containers"),
        "Service" => {
            return object
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["port"].as_i64().unwrap_or(0),
                        p["protocol"].as_str().unwrap_or("TCP").to_owned(),
                    )
                })
                .collect();
        }
        _ => object.pointer("/spec/template/spec/containers"),
    };
    containers
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
        .map(|p| {
            (
                p["containerPort"].as_i64().unwrap_or(0),
                p["protocol"].as_str().unwrap_or("TCP").to_owned(),
            )
        })
        .collect()
}

/// The Service for `object` (of `kind`) and the flags.
pub fn service_for(kind: &str, object: &Value, args: &ExposeArgs) -> anyhow::Result<Value> {
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| mutate::name_of(object).to_owned());
    let selector = match &args.selector {
        Some(s) => s.clone(),
        None => selector_of(kind, object).map_err(|e| {
            anyhow::anyhow!("couldn't retrieve selectors via --selector flag or introspection: {e}")
        })?,
    };
    let introspected = ports_of(kind, object);
    let ports: Vec<(String, Option<String>)> = match &args.port {
        Some(p) => p.split(',').map(|p| (p.to_owned(), None)).collect(),
        None if introspected.is_empty() && args.service_type.as_deref() != Some("ExternalName") => {
            anyhow::bail!("couldn't find port via --port flag or introspection")
        }
        None => introspected
            .iter()
            .map(|(p, proto)| (p.to_string(), Some(proto.clone())))
            .collect(),
    };
    let mut service_ports = Vec::new();
    for (i, (port, proto)) in ports.iter().enumerate() {
        let number: i64 = port
            .parse()
            .map_err(|_| anyhow::anyhow!("strconv.Atoi: parsing {port:?}: invalid syntax"))?;
        let protocol = args
            .protocol
            .clone()
            .or(proto.clone())
            .unwrap_or_else(|| "TCP".into());
        let target = match &args.target_port {
            Some(t) => match t.parse::<i64>() {
                Ok(n) => json!(n),
                Err(_) => json!(t),
            },
            None => json!(number),
        };
        let mut sp = json!({"port": number, "protocol": protocol, "targetPort": target});
        if ports.len() > 1 {
            sp["name"] = json!(format!("port-{}", i + 1));
        }
        service_ports.push(sp);
    }
    let labels = match &args.labels {
        Some(l) => parse_labels(l)?,
        None => object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    };
    let mut metadata = json!({"name": name, "creationTimestamp": null});
    if !labels.is_empty() {
        metadata["labels"] = Value::Object(labels);
    }
    let mut spec = json!({"selector": parse_labels(&selector)?});
    if !service_ports.is_empty() {
        spec["ports"] = json!(service_ports);
    }
    if let Some(ip) = &args.external_ip {
        spec["externalIPs"] = json!([ip]);
    }
    if let Some(t) = &args.service_type {
        spec["type"] = json!(t);
    }
    if let Some(a) = &args.session_affinity {
        spec["sessionAffinity"] = json!(a);
    }
    if let Some(ip) = &args.cluster_ip {
        spec["clusterIP"] = json!(ip);
    }
    Ok(
        json!({"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec, "status": {"loadBalancer": {}}}),
    )
}

pub async fn run(global: &GlobalOptions, args: &ExposeArgs) -> anyhow::Result<()> {
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let mut reporter = args.print.reporter()?.typed();
    if args.args.is_empty() && args.filenames.is_empty() {
        anyhow::bail!(
            "You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'"
        );
    }
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mapper = factory.discovery().mapper().await?;
    let services = mapper
        .for_kind("v1", "Service")
        .ok_or_else(|| anyhow::anyhow!("the server doesn't have a resource type \"services\""))?;
    for info in &resolved.infos {
        let kind = info.resource.kind.as_str();
        let exposable = matches!(
            (info.resource.group.as_str(), kind),
            ("", "Pod" | "Service" | "ReplicationController")
                | ("apps", "Deployment" | "ReplicaSet")
                | ("extensions", "Deployment" | "ReplicaSet")
        );
        if !exposable {
            let group_kind = if info.resource.group.is_empty() {
                kind.to_owned()
            } else {
                format!("{kind}.{}", info.resource.group)
            };
            anyhow::bail!("cannot expose a {group_kind}");
        }
        let object = factory.get(&info.path()).await?;
        let mut service = args.overrides.apply(service_for(kind, &object, args)?)?;
        let namespace = info
            .namespace
            .clone()
            .unwrap_or_else(|| factory.namespace().to_owned());
        if factory.namespace_explicit() {
            service["metadata"]["namespace"] = json!(namespace);
        }
        if dry_run == DryRun::Client {
            reporter.report(&services, &service, "exposed", dry_run)?;
            continue;
        }
        let mut query = vec![("fieldManager".to_owned(), args.field_manager.clone())];
        query.extend(dry_run.query());
        let url = resource::with_query(&services.collection_path(Some(&namespace)), &query);
        let created = factory
            .request(
                http::Method::POST,
                &url,
                Some((serde_json::to_vec(&service)?, "application/json")),
                None,
            )
            .await?;
        reporter.report(&services, &created, "exposed", dry_run)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ExposeArgs {
        ExposeArgs {
            args: vec![],
            filenames: vec![],
            port: None,
            target_port: None,
            protocol: None,
            name: None,
            service_type: None,
            selector: None,
            labels: None,
            external_ip: None,
            cluster_ip: None,
            session_affinity: None,
            print: Default::default(),
            overrides: crate::cmd::overrides::OverrideFlags {
                overrides: None,
                override_type: "merge".into(),
            },
            dry_run: None,
            field_manager: String::new(),
        }
    }

    #[test]
    fn deployment_service() {
        let deploy = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [
                {"ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]}]}}}});
        let svc = service_for("Deployment", &deploy, &args()).unwrap();
        assert_eq!(svc["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(
            svc["spec"]["ports"],
            json!([
                {"name": "port-1", "port": 80, "protocol": "TCP", "targetPort": 80},
                {"name": "port-2", "port": 53, "protocol": "UDP", "targetPort": 53}
            ])
        );
        let bare = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        let err = service_for("Pod", &bare, &args()).unwrap_err().to_string();
        assert!(err.contains("the pod has no labels"), "{err}");
    }
}
