//! The ControllerRevisions of a DaemonSet: each one stores a template as a patch replacing
//! `spec.template`, named and labelled by the template's hash.

use crate::controller::utils::controller_ref::new_controller_ref;
use crate::controller::utils::hash::json_hash;
use crate::controller::utils::history;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::ObjectMeta;
use serde_json::Value;

/// The label naming the revision a pod (or ControllerRevision) was made from.
pub const REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// The pre-apps/v1 label of the template generation a pod was made from.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// Where apps/v1 keeps the deprecated template generation.
const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// The revision's data, which is also what tells whether a revision holds the current
/// template.
pub fn template_patch(ds: &DaemonSet) -> Value {
    history::template_patch(ds.spec.as_ref().map(|s| &s.template))
}

/// Whether `revision` stores the DaemonSet's current template.
pub fn matches(ds: &DaemonSet, revision: &ControllerRevision) -> bool {
    revision.data.as_ref().map(|d| &d.0) == Some(&template_patch(ds))
}

/// The hash of a template plus the collision count, rendered like upstream's `ComputeHash`
/// (the value differs from upstream's, which hashes Go's printed form; only its shape
/// matters).
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    json_hash(template, collision_count)
}

/// A new revision of the DaemonSet's current template (upstream's `snapshot`).
pub fn new_revision(ds: &DaemonSet, revision: i64) -> ControllerRevision {
    let spec = ds.spec.clone().unwrap_or_default();
    let collision = ds.status.as_ref().and_then(|s| s.collision_count);
    let hash = compute_hash(&spec.template, collision);
    let mut labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(REVISION_HASH_LABEL.into(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}-{hash}",
                ds.metadata.name.as_deref().unwrap_or("")
            )),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: Some(vec![new_controller_ref(
                &ds.metadata,
                "apps/v1",
                "DaemonSet",
            )]),
            ..Default::default()
        },
        data: Some(RawExtension(template_patch(ds))),
        revision,
    }
}

/// The deprecated template generation, when the apiserver keeps it.
pub fn template_generation(ds: &DaemonSet) -> Option<String> {
    ds.metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_GENERATION_ANNOTATION)
        .cloned()
}

/// Upstream's `IsPodUpdated`: the pod carries the current revision's hash or template
/// generation.
pub fn is_pod_updated(
    labels: Option<&std::collections::BTreeMap<String, String>>,
    hash: &str,
    generation: Option<&str>,
) -> bool {
    let label = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
    let hash_matches = !hash.is_empty() && label(REVISION_HASH_LABEL) == Some(hash);
    let generation_matches = generation.is_some() && label(TEMPLATE_GENERATION_LABEL) == generation;
    hash_matches || generation_matches
}

/// The revisions to delete, oldest first: beyond `limit` old ones, never one a live pod
/// still runs (upstream's `cleanupHistory`).
pub fn revisions_to_prune<'a>(
    old: &'a [ControllerRevision],
    limit: usize,
    live_hashes: &std::collections::BTreeSet<String>,
) -> Vec<&'a ControllerRevision> {
    let mut to_kill = old.len().saturating_sub(limit);
    let mut sorted: Vec<&ControllerRevision> = old.iter().collect();
    sorted.sort_by_key(|r| r.revision);
    let mut out = Vec::new();
    for r in sorted {
        if to_kill == 0 {
            break;
        }
        let hash = r
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(REVISION_HASH_LABEL));
        if hash.is_some_and(|h| live_hashes.contains(h)) {
            continue;
        }
        out.push(r);
        to_kill -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DaemonSetSpec;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use serde_json::json;

    fn ds(image: &str) -> DaemonSet {
        DaemonSet {
            metadata: ObjectMeta {
                name: Some("d".into()),
                namespace: Some("ns".into()),
                uid: Some("u".into()),
                ..Default::default()
            },
            spec: Some(DaemonSetSpec {
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("app".to_string(), "d".to_string())].into()),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "c".into(),
                            image: Some(image.into()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                },
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn revision_matches_its_template_only() {
        let rev = new_revision(&ds("a"), 1);
        assert!(matches(&ds("a"), &rev));
        assert!(!matches(&ds("b"), &rev));
        let labels = rev.metadata.labels.clone().unwrap_or_default();
        let hash = compute_hash(&ds("a").spec.unwrap_or_default().template, None);
        assert_eq!(labels.get(REVISION_HASH_LABEL), Some(&hash));
        assert_eq!(rev.metadata.name, Some(format!("d-{hash}")));
        assert_eq!(
            rev.data.map(|d| d.0["spec"]["template"]["$patch"].clone()),
            Some(json!("replace"))
        );
    }

    #[test]
    fn collision_count_changes_the_hash() {
        let t = ds("a").spec.unwrap_or_default().template;
        assert_ne!(compute_hash(&t, None), compute_hash(&t, Some(1)));
        assert_eq!(compute_hash(&t, Some(1)), compute_hash(&t, Some(1)));
    }

    #[test]
    fn pod_updated_by_hash_or_generation() {
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let cases = [
            (labels(&[(REVISION_HASH_LABEL, "h")]), "h", None, true),
            (labels(&[(REVISION_HASH_LABEL, "o")]), "h", None, false),
            (
                labels(&[(TEMPLATE_GENERATION_LABEL, "2")]),
                "h",
                Some("2"),
                true,
            ),
            (labels(&[]), "", None, false),
        ];
        for (l, hash, generation, want) in cases {
            assert_eq!(is_pod_updated(Some(&l), hash, generation), want, "{l:?}");
        }
    }

    #[test]
    fn pruning_keeps_limit_and_live() {
        let rev = |n: i64, hash: &str| ControllerRevision {
            metadata: ObjectMeta {
                name: Some(format!("r{n}")),
                labels: Some([(REVISION_HASH_LABEL.to_string(), hash.to_string())].into()),
                ..Default::default()
            },
            data: None,
            revision: n,
        };
        let old = vec![rev(3, "c"), rev(1, "a"), rev(2, "b"), rev(4, "d")];
        let live: std::collections::BTreeSet<String> = ["a".to_string()].into();
        let names: Vec<_> = revisions_to_prune(&old, 2, &live)
            .iter()
            .map(|r| r.revision)
            .collect();
        assert_eq!(names, vec![2, 3]);
        assert!(revisions_to_prune(&old, 10, &live).is_empty());
    }
}
