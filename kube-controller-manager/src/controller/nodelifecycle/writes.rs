//! The node lifecycle controllers' writes: node taints and conditions guarded by the
//! resourceVersion they were computed from (a stale cache gets a 409 and a retry, never a
//! lost kubelet update), and pod conditions.

use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, Taint};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

fn resource_version(node: &Node) -> String {
    node.metadata.resource_version.clone().unwrap_or_default()
}

pub async fn set_taints(
    client: &kube::Client,
    node: &Node,
    taints: &[Taint],
) -> anyhow::Result<()> {
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let patch = json!({
        "metadata": {"resourceVersion": resource_version(node)},
        "spec": {"taints": taints},
    });
    Api::<Node>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("updating taints of node {name}"))?;
    Ok(())
}

pub async fn set_conditions(
    client: &kube::Client,
    node: &Node,
    conditions: &[NodeCondition],
) -> anyhow::Result<()> {
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let patch = json!({
        "metadata": {"resourceVersion": resource_version(node)},
        "status": {"conditions": conditions},
    });
    Api::<Node>::all(client.clone())
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("updating status of node {name}"))?;
    Ok(())
}

pub async fn set_labels(
    client: &kube::Client,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"labels": labels}});
    Api::<Node>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("updating labels of node {name}"))?;
    Ok(())
}

/// Merges one condition into a pod's status (conditions merge by type).
pub async fn set_pod_condition(
    client: &kube::Client,
    pod: &Pod,
    condition: serde_json::Value,
) -> anyhow::Result<()> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let patch = json!({"status": {"conditions": [condition]}});
    Api::<Pod>::namespaced(client.clone(), ns)
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .with_context(|| format!("updating conditions of pod {ns}/{name}"))?;
    Ok(())
}

pub fn is_not_found(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        matches!(
            e.downcast_ref::<kube::Error>(),
            Some(kube::Error::Api(status)) if status.code == 404
        )
    })
}
