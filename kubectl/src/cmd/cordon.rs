//! `kubectl cordon` and `kubectl uncordon`: set or clear `spec.unschedulable`, printing
//! `node/x cordoned` (or `already cordoned`) as upstream; also the node selection `drain` shares.

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::resource;
use clap::Args;
use serde_json::{Value, json};

/// Flags of `kubectl cordon` and `kubectl uncordon`.
#[derive(Debug, Clone, Args)]
pub struct CordonArgs {
    /// NODE
    pub nodes: Vec<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
}

/// The nodes named (`n1`, `node/n1`) or selected, fetched; upstream's usage error when neither.
pub async fn select_nodes(
    factory: &Factory,
    names: &[String],
    selector: Option<&str>,
    command: &str,
) -> anyhow::Result<Vec<Value>> {
    if names.is_empty() && selector.is_none() {
        anyhow::bail!(
            "USAGE: {command} NODE [flags]\nSee 'kubectl {command} -h' for help and examples"
        );
    }
    let mut nodes = Vec::new();
    if let Some(selector) = selector {
        let query = vec![("labelSelector".to_owned(), selector.to_owned())];
        let list = factory
            .get(&resource::with_query("/api/v1/nodes", &query))
            .await?;
        nodes.extend(list["items"].as_array().cloned().unwrap_or_default());
    }
    for name in names {
        let plain = name
            .strip_prefix("nodes/")
            .or_else(|| name.strip_prefix("node/"))
            .unwrap_or(name);
        nodes.push(factory.get(&format!("/api/v1/nodes/{plain}")).await?);
    }
    Ok(nodes)
}

/// The `node/<name> <verb>[ (dry run)]` line.
pub fn node_line(node: &Value, verb: &str, dry_run: DryRun) -> String {
    format!("node/{} {verb}{}", mutate::name_of(node), dry_run.suffix())
}

/// Cordons (`desired`) or uncordons one node; the line to print.
pub async fn set_unschedulable(
    factory: &Factory,
    node: &Value,
    desired: bool,
    dry_run: DryRun,
) -> anyhow::Result<String> {
    let verb = if desired { "cordoned" } else { "uncordoned" };
    let current = node
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if current == desired {
        return Ok(node_line(node, &format!("already {verb}"), dry_run));
    }
    if dry_run != DryRun::Client {
        let patch = if desired {
            json!({"spec": {"unschedulable": true}})
        } else {
            json!({"spec": {"unschedulable": null}})
        };
        let url = resource::with_query(
            &format!("/api/v1/nodes/{}", mutate::name_of(node)),
            &dry_run.query(),
        );
        factory.merge_patch(&url, &patch).await?;
    }
    Ok(node_line(node, verb, dry_run))
}

pub async fn run(global: &GlobalOptions, args: &CordonArgs, desired: bool) -> anyhow::Result<()> {
    let command = if desired { "cordon" } else { "uncordon" };
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let factory = Factory::new(global).await?;
    let nodes = select_nodes(&factory, &args.nodes, args.selector.as_deref(), command).await?;
    for node in &nodes {
        match set_unschedulable(&factory, node, desired, dry_run).await {
            Ok(line) => println!("{line}"),
            // Upstream reports a failed node and goes on with the others.
            Err(err) => eprintln!(
                "error: unable to {command} node {:?}: {}",
                mutate::name_of(node),
                crate::errors::render(&err).trim_start_matches("error: ")
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let node = json!({"metadata": {"name": "n1"}});
        assert_eq!(
            node_line(&node, "cordoned", DryRun::None),
            "node/n1 cordoned"
        );
        assert_eq!(
            node_line(&node, "already uncordoned", DryRun::Client),
            "node/n1 already uncordoned (dry run)"
        );
    }
}
