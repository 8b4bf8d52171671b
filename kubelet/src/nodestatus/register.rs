//! Registration: create the Node; when it already exists, reconcile the default labels as
//! upstream does (`--node-labels` and taints are only applied at creation).

use super::NodeOptions;
use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::BTreeMap;

pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
pub const LABEL_OS: &str = "kubernetes.io/os";
pub const LABEL_ARCH: &str = "kubernetes.io/arch";
const LABEL_OS_BETA: &str = "beta.kubernetes.io/os";
const LABEL_ARCH_BETA: &str = "beta.kubernetes.io/arch";
const ANNOTATION_ATTACH_DETACH: &str = "volumes.kubernetes.io/controller-managed-attach-detach";

/// Go's GOARCH for this build (what `kubernetes.io/arch` and nodeInfo show).
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The labels the kubelet owns on its Node.
pub fn default_labels(node_name: &str) -> BTreeMap<String, String> {
    [
        (LABEL_HOSTNAME, node_name),
        (LABEL_OS, "linux"),
        (LABEL_ARCH, go_arch()),
        (LABEL_OS_BETA, "linux"),
        (LABEL_ARCH_BETA, go_arch()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The Node the kubelet creates: default labels, `--node-labels`, taints, providerID.
pub fn initial_node(options: &NodeOptions) -> Node {
    let mut labels = options.labels.clone();
    labels.extend(default_labels(&options.node_name));
    Node {
        metadata: ObjectMeta {
            name: Some(options.node_name.clone()),
            labels: Some(labels),
            annotations: Some([(ANNOTATION_ATTACH_DETACH.to_string(), "true".to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: (!options.taints.is_empty()).then(|| options.taints.clone()),
            provider_id: (!options.provider_id.is_empty()).then(|| options.provider_id.clone()),
            ..NodeSpec::default()
        }),
        status: None,
    }
}

/// The default labels an existing node lacks or has wrong (upstream's `updateDefaultLabels`).
pub fn stale_default_labels(existing: &Node, node_name: &str) -> BTreeMap<String, String> {
    let have = existing.metadata.labels.clone().unwrap_or_default();
    default_labels(node_name)
        .into_iter()
        .filter(|(k, v)| have.get(k) != Some(v))
        .collect()
}

/// Creates the node, or reconciles the existing one; returns the Node as stored.
pub async fn register(api: &Api<Node>, options: &NodeOptions) -> anyhow::Result<Node> {
    let node = initial_node(options);
    match api.create(&PostParams::default(), &node).await {
        Ok(created) => {
            tracing::info!(node = %options.node_name, "successfully registered node");
            return Ok(created);
        }
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(err) => return Err(err).context("unable to register node with the API server"),
    }
    let existing = api
        .get(&options.node_name)
        .await
        .context("unable to read the existing node")?;
    let stale = stale_default_labels(&existing, &options.node_name);
    let mut patch = serde_json::Map::new();
    if !stale.is_empty() {
        patch.insert("labels".into(), json!(stale));
    }
    let has_annotation = existing
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.get(ANNOTATION_ATTACH_DETACH).map(String::as_str) == Some("true"));
    if !has_annotation {
        patch.insert(
            "annotations".into(),
            json!({ ANNOTATION_ATTACH_DETACH: "true" }),
        );
    }
    if patch.is_empty() {
        tracing::info!(node = %options.node_name, "node was previously registered");
        return Ok(existing);
    }
    let updated = api
        .patch(
            &options.node_name,
            &PatchParams::default(),
            &Patch::Strategic(json!({ "metadata": patch })),
        )
        .await
        .context("unable to reconcile the existing node")?;
    tracing::info!(node = %options.node_name, "node was previously registered; labels reconciled");
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Taint;

    fn options() -> NodeOptions {
        NodeOptions {
            node_name: "n1".into(),
            labels: [("role".to_string(), "edge".to_string())].into(),
            taints: vec![Taint {
                key: "k".into(),
                value: Some("v".into()),
                effect: "NoSchedule".into(),
                time_added: None,
            }],
            provider_id: String::new(),
            register_node: true,
            node_ips: vec![],
            max_pods: 110,
            kube_reserved: Default::default(),
            system_reserved: Default::default(),
            eviction_hard: vec![],
            root_dir: "/".into(),
            port: 10250,
            update_frequency: std::time::Duration::from_secs(10),
            report_frequency: std::time::Duration::from_secs(300),
            lease_duration_seconds: 40,
        }
    }

    #[test]
    fn initial_node_has_labels_and_taints() {
        let node = initial_node(&options());
        let labels = node.metadata.labels.clone().unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "n1");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/arch"], go_arch());
        assert_eq!(labels["role"], "edge");
        assert_eq!(node.spec.unwrap().taints.unwrap()[0].key, "k");
        assert!(stale_default_labels(&initial_node(&options()), "n1").is_empty());
        let mut other = initial_node(&options());
        other.metadata.labels =
            Some([("kubernetes.io/os".to_string(), "windows".to_string())].into());
        let stale = stale_default_labels(&other, "n1");
        assert_eq!(stale.len(), 5, "{stale:?}");
    }
}
