//! Decoding and defaulting of the pods that the file and http sources read (upstream's
//! `config/common.go`): static pods get a stable uid from their content and source, a name
//! suffixed with the node's, this node as their node and the API defaults.

use crate::pod::CONFIG_HASH_ANNOTATION;
use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{Pod, PodStatus, Toleration};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where a static pod came from: the hash of its uid mixes this in so that the same manifest
/// in two places makes two pods.
#[derive(Debug, Clone, Copy)]
pub enum StaticSource<'a> {
    /// A file, by its path.
    File(&'a str),
    /// A manifest URL.
    Url(&'a str),
}

/// Parses YAML or JSON into a JSON value (JSON is YAML, but serde_yaml rejects some JSON
/// escapes, so JSON is tried first).
fn parse_document(data: &[u8]) -> anyhow::Result<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        return Ok(v);
    }
    serde_yaml::from_slice::<Value>(data).context("neither valid JSON nor YAML")
}

fn kind_of(v: &Value) -> anyhow::Result<&str> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        bail!("Object 'Kind' is missing");
    }
    let version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if version != "v1" {
        bail!("unsupported apiVersion {version:?} for kind {kind}: expected v1");
    }
    Ok(kind)
}

/// Decodes one manifest holding a single Pod and defaults it as a static pod.
pub fn decode_single_pod(data: &[u8], source: StaticSource, node: &str) -> anyhow::Result<Pod> {
    let v = parse_document(data)?;
    let kind = kind_of(&v)?;
    if kind != "Pod" {
        bail!("expected a Pod, got {kind}");
    }
    let pod: Pod = serde_json::from_value(v).context("invalid Pod")?;
    default_static_pod(pod, source, node)
}

/// Decodes a manifest holding a Pod or a PodList (what a manifest URL may serve).
pub fn decode_pods(data: &[u8], source: StaticSource, node: &str) -> anyhow::Result<Vec<Pod>> {
    let v = parse_document(data)?;
    match kind_of(&v)? {
        "Pod" => Ok(vec![decode_single_pod(data, source, node)?]),
        "PodList" => {
            let items = v
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            items
                .into_iter()
                .map(|mut item| {
                    // k8s-openapi's Pod wants its own apiVersion and kind; list items may omit them.
                    if let Some(obj) = item.as_object_mut() {
                        obj.insert("apiVersion".into(), "v1".into());
                        obj.insert("kind".into(), "Pod".into());
                    }
                    let pod: Pod = serde_json::from_value(item).context("invalid Pod in list")?;
                    default_static_pod(pod, source, node)
                })
                .collect()
        }
        other => bail!("expected a Pod or a PodList, got {other}"),
    }
}

/// The uid of a static pod without one: a hash of the pod as written plus its source, so it is
/// stable across kubelet restarts and changes whenever the manifest does.
fn static_pod_uid(pod: &Pod, source: StaticSource, node: &str) -> String {
    let mut h = Sha256::new();
    // serde_json writes struct fields in a fixed order and maps sorted, so this is canonical.
    h.update(serde_json::to_vec(pod).unwrap_or_default());
    match source {
        StaticSource::File(path) => {
            h.update(format!("host:{node}"));
            h.update(format!("file:{path}"));
        }
        StaticSource::Url(url) => h.update(format!("url:{url}")),
    }
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Upstream's `applyDefaults` plus the API defaults and validation a pod from the apiserver
/// would have been through.
pub fn default_static_pod(mut pod: Pod, source: StaticSource, node: &str) -> anyhow::Result<Pod> {
    if pod.spec.is_none() {
        bail!("invalid pod: spec is required");
    }
    if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
        pod.metadata.uid = Some(static_pod_uid(&pod, source, node));
    }
    let name = pod.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        bail!("invalid pod: metadata.name is required");
    }
    pod.metadata.name = Some(format!("{name}-{}", node.to_lowercase()));
    if pod.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        pod.metadata.namespace = Some("default".to_string());
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(CONFIG_HASH_ANNOTATION.to_string(), uid);
    let spec = pod.spec.as_mut().expect("checked above");
    spec.node_name = Some(node.to_string());
    if matches!(source, StaticSource::File(_)) {
        // Static pods must survive node problems: tolerate every NoExecute taint.
        let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        let all_no_execute = Toleration {
            operator: Some("Exists".to_string()),
            effect: Some("NoExecute".to_string()),
            ..Default::default()
        };
        tolerations.retain(|t| {
            !(t.key.as_deref().unwrap_or("").is_empty()
                && t.operator.as_deref() == Some("Exists")
                && t.effect.as_deref() == Some("NoExecute"))
        });
        tolerations.push(all_no_execute);
    }
    pod.status = Some(PodStatus {
        phase: Some("Pending".to_string()),
        ..Default::default()
    });
    api_types::defaults::default_pod(&mut pod);
    let errors = api_types::validation::validate_pod(&pod);
    if !errors.is_empty() {
        let msgs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        bail!("invalid pod: {}", msgs.join("; "));
    }
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n";

    #[test]
    fn static_pods_are_named_defaulted_and_hashed() {
        let pod = decode_single_pod(MANIFEST.as_bytes(), StaticSource::File("/m/web.yaml"), "n1")
            .expect("decodes");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-n1"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        let uid = pod.metadata.uid.clone().expect("uid");
        assert_eq!(uid.len(), 32);
        let ann = pod.metadata.annotations.as_ref().expect("annotations");
        assert_eq!(ann.get(CONFIG_HASH_ANNOTATION), Some(&uid));
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("n1"));
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        let c = &spec.containers[0];
        assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(
            c.termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
        let tol = spec.tolerations.as_ref().expect("tolerations");
        assert!(
            tol.iter().any(|t| t.operator.as_deref() == Some("Exists")
                && t.effect.as_deref() == Some("NoExecute"))
        );
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Pending")
        );
    }

    #[test]
    fn uid_is_stable_and_follows_content_and_source() {
        let uid = |data: &str, src| {
            decode_single_pod(data.as_bytes(), src, "n1")
                .expect("decodes")
                .metadata
                .uid
                .expect("uid")
        };
        let a = uid(MANIFEST, StaticSource::File("/m/a.yaml"));
        assert_eq!(a, uid(MANIFEST, StaticSource::File("/m/a.yaml")));
        assert_ne!(a, uid(MANIFEST, StaticSource::File("/m/b.yaml")));
        assert_ne!(a, uid(MANIFEST, StaticSource::Url("http://x/")));
        let edited = MANIFEST.replace("1.36", "latest");
        assert_ne!(a, uid(&edited, StaticSource::File("/m/a.yaml")));
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","uid":"given"},
            "spec":{"containers":[{"name":"c","image":"busybox"}]}}"#;
        assert_eq!(uid(json, StaticSource::Url("http://x/")), "given");
    }

    #[test]
    fn bad_manifests_are_refused() {
        let cases = [
            ("", "empty"),
            ("kind: Pod\n", "no apiVersion"),
            ("apiVersion: v1\nmetadata: {name: x}\n", "no kind"),
            (
                "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
                "not a pod",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
                "no spec",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n",
                "no containers",
            ),
            ("{{{", "garbage"),
        ];
        for (data, why) in cases {
            assert!(
                decode_single_pod(data.as_bytes(), StaticSource::File("/f"), "n1").is_err(),
                "{why}"
            );
        }
    }

    #[test]
    fn pod_lists_decode_every_item() {
        let list = r#"{"apiVersion":"v1","kind":"PodList","items":[
            {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}},
            {"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}]}"#;
        let pods =
            decode_pods(list.as_bytes(), StaticSource::Url("http://h/m"), "n1").expect("decodes");
        let names: Vec<_> = pods
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["a-n1", "b-n1"]);
        // Served pods are not given the static NoExecute toleration (files only, as upstream).
        assert!(
            pods[0]
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.as_ref())
                .is_none()
        );
    }
}
