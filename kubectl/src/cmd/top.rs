//! `kubectl top node|pod`: CPU and memory from the `metrics.k8s.io` API, or upstream's
//! `Metrics API not available` when no metrics server serves it.

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::printers::tabwriter;
use crate::resource;
use clap::{Args, Subcommand};
use serde_json::Value;

/// Flags of `kubectl top`.
#[derive(Debug, Clone, Args)]
pub struct TopArgs {
    #[command(subcommand)]
    pub command: TopCommand,
}

/// `kubectl top` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum TopCommand {
    /// Display resource (CPU/memory) usage of nodes
    #[command(alias = "nodes", alias = "no")]
    Node(TopNodeArgs),
    /// Display resource (CPU/memory) usage of pods
    #[command(alias = "pods", alias = "po")]
    Pod(TopPodArgs),
}

/// Flags of `kubectl top node`.
#[derive(Debug, Clone, Args)]
pub struct TopNodeArgs {
    /// NAME
    pub name: Option<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// If non-empty, sort nodes list using specified field (cpu or memory).
    #[arg(long, value_name = "string")]
    pub sort_by: Option<String>,
    /// If present, print output without headers
    #[arg(long)]
    pub no_headers: bool,
    /// Print node resources based on Capacity instead of Allocatable(default) of the nodes.
    #[arg(long)]
    pub show_capacity: bool,
}

/// Flags of `kubectl top pod`.
#[derive(Debug, Clone, Args)]
pub struct TopPodArgs {
    /// NAME
    pub name: Option<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long, value_name = "string")]
    pub field_selector: Option<String>,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// If present, print usage of containers within a pod.
    #[arg(long)]
    pub containers: bool,
    /// If non-empty, sort pods list using specified field (cpu or memory).
    #[arg(long, value_name = "string")]
    pub sort_by: Option<String>,
    /// If present, print output without headers.
    #[arg(long)]
    pub no_headers: bool,
}

/// A quantity in its base unit (cores or bytes); 0 when it does not parse.
pub fn quantity(text: &str) -> f64 {
    api_types::validation::parse_quantity(text).unwrap_or(0.0)
}

fn usage(v: &Value, which: &str) -> f64 {
    quantity(
        v.pointer(&format!("/usage/{which}"))
            .and_then(Value::as_str)
            .unwrap_or("0"),
    )
}

fn cells(cpu: f64, mem: f64) -> (String, String) {
    (
        format!("{}m", (cpu * 1000.0).round() as i64),
        format!("{}Mi", (mem / (1024.0 * 1024.0)).round() as i64),
    )
}

async fn require_metrics(factory: &Factory) -> anyhow::Result<()> {
    let groups = factory.discovery().groups(true).await?;
    if groups.iter().any(|g| g.name == "metrics.k8s.io") {
        return Ok(());
    }
    anyhow::bail!("Metrics API not available")
}

fn sort(items: &mut [Value], sort_by: Option<&str>) {
    match sort_by {
        Some("cpu") => items.sort_by(|a, b| usage(b, "cpu").total_cmp(&usage(a, "cpu"))),
        Some("memory") => items.sort_by(|a, b| usage(b, "memory").total_cmp(&usage(a, "memory"))),
        _ => {}
    }
}

fn items(list: Value) -> Vec<Value> {
    match list.get("items") {
        Some(Value::Array(items)) => items.clone(),
        _ => vec![list],
    }
}

async fn top_nodes(factory: &Factory, args: &TopNodeArgs) -> anyhow::Result<()> {
    let base = "/apis/metrics.k8s.io/v1beta1/nodes";
    let query: Vec<(String, String)> = args
        .selector
        .iter()
        .map(|s| ("labelSelector".to_owned(), s.clone()))
        .collect();
    let path = match &args.name {
        Some(n) => format!("{base}/{n}"),
        None => resource::with_query(base, &query),
    };
    let mut metrics = items(factory.get(&path).await?);
    sort(&mut metrics, args.sort_by.as_deref());
    let nodes = items(
        factory
            .get(&resource::with_query("/api/v1/nodes", &query))
            .await?,
    );
    let field = if args.show_capacity {
        "capacity"
    } else {
        "allocatable"
    };
    let mut rows = Vec::new();
    if !args.no_headers {
        rows.push(
            ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
                .map(String::from)
                .to_vec(),
        );
    }
    for m in &metrics {
        let name = m
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let node = nodes
            .iter()
            .find(|n| n.pointer("/metadata/name").and_then(Value::as_str) == Some(name));
        let (cpu, mem) = (usage(m, "cpu"), usage(m, "memory"));
        let (cpu_cell, mem_cell) = cells(cpu, mem);
        let pct = |which: &str, used: f64| -> String {
            let total = node
                .and_then(|n| n.pointer(&format!("/status/{field}/{which}")))
                .and_then(Value::as_str)
                .map(quantity)
                .unwrap_or(0.0);
            if total > 0.0 {
                format!("{}%", (used / total * 100.0) as i64)
            } else {
                "<unknown>".into()
            }
        };
        rows.push(vec![
            name.to_owned(),
            cpu_cell,
            pct("cpu", cpu),
            mem_cell,
            pct("memory", mem),
        ]);
    }
    print!("{}", tabwriter::align(&rows));
    Ok(())
}

async fn top_pods(factory: &Factory, args: &TopPodArgs) -> anyhow::Result<()> {
    let mut query: Vec<(String, String)> = Vec::new();
    if let Some(s) = &args.selector {
        query.push(("labelSelector".into(), s.clone()));
    }
    if let Some(s) = &args.field_selector {
        query.push(("fieldSelector".into(), s.clone()));
    }
    let base = if args.all_namespaces {
        "/apis/metrics.k8s.io/v1beta1/pods".to_owned()
    } else {
        format!(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{}/pods",
            factory.namespace()
        )
    };
    let path = match &args.name {
        Some(n) => format!("{base}/{n}"),
        None => resource::with_query(&base, &query),
    };
    let mut metrics = items(factory.get(&path).await?);
    for m in metrics.iter_mut() {
        // A pod's usage is the sum of its containers'.
        let (cpu, mem) = m["containers"].as_array().map_or((0.0, 0.0), |cs| {
            cs.iter().fold((0.0, 0.0), |(c, b), x| {
                (c + usage(x, "cpu"), b + usage(x, "memory"))
            })
        });
        m["usage"] = serde_json::json!({"cpu": format!("{}n", (cpu * 1e9) as i64), "memory": format!("{}", mem as i64)});
    }
    sort(&mut metrics, args.sort_by.as_deref());
    if metrics.is_empty() && args.name.is_none() {
        if args.all_namespaces {
            anyhow::bail!("No resources found");
        }
        anyhow::bail!("No resources found in {} namespace.", factory.namespace());
    }
    let mut header: Vec<String> = Vec::new();
    if args.all_namespaces {
        header.push("NAMESPACE".into());
    }
    header.push("NAME".into());
    if args.containers {
        header.push("CONTAINER".into());
    }
    header.extend(["CPU(cores)".into(), "MEMORY(bytes)".into()]);
    let mut rows = Vec::new();
    if !args.no_headers {
        rows.push(header);
    }
    for m in &metrics {
        let s = |p: &str| {
            m.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let prefix: Vec<String> = if args.all_namespaces {
            vec![s("/metadata/namespace"), s("/metadata/name")]
        } else {
            vec![s("/metadata/name")]
        };
        if args.containers {
            for c in m["containers"].as_array().into_iter().flatten() {
                let (cpu, mem) = cells(usage(c, "cpu"), usage(c, "memory"));
                let name = c["name"].as_str().unwrap_or("").to_owned();
                rows.push([prefix.clone(), vec![name, cpu, mem]].concat());
            }
        } else {
            let (cpu, mem) = cells(usage(m, "cpu"), usage(m, "memory"));
            rows.push([prefix, vec![cpu, mem]].concat());
        }
    }
    print!("{}", tabwriter::align(&rows));
    Ok(())
}

pub async fn run(global: &GlobalOptions, args: &TopArgs) -> anyhow::Result<()> {
    let factory = Factory::new(global).await?;
    require_metrics(&factory).await?;
    match &args.command {
        TopCommand::Node(a) => top_nodes(&factory, a).await,
        TopCommand::Pod(a) => top_pods(&factory, a).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for (text, want) in [
            ("250m", 0.25),
            ("1", 1.0),
            ("123456789n", 0.123456789),
            ("1Ki", 1024.0),
            ("2Mi", 2097152.0),
        ] {
            assert!((quantity(text) - want).abs() < 1e-12, "{text}");
        }
        assert_eq!(
            cells(0.25, 2097152.0),
            ("250m".to_string(), "2Mi".to_string())
        );
    }
}
