//! ControllerRevisions: one per distinct pod template a set has run, named `<set>-<hash>`,
//! numbered in the order they became the update revision. The data is the patch that puts the
//! template back into the set (upstream's `getPatch`), so `kubectl rollout history` and
//! `rollout undo` read it as upstream's.

use crate::controller::utils::hash::json_hash;
use crate::controller::utils::history;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::ObjectMeta;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The label holding a revision's hash (upstream's `ControllerRevisionHashLabel`).
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The revision data of a set's template.
pub fn revision_data(set: &StatefulSet) -> Value {
    history::template_patch(set.spec.as_ref().map(|s| &s.template))
}

/// The template a revision records.
pub fn revision_template(rev: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut t = rev.data.as_ref()?.0.pointer("/spec/template")?.clone();
    if let Value::Object(m) = &mut t {
        m.remove("$patch");
    }
    serde_json::from_value(t).ok()
}

/// FNV-32a over the data and the collision count, rendered in the safe alphabet.
pub fn revision_hash(data: &Value, collision_count: Option<i32>) -> String {
    json_hash(data, collision_count)
}

/// A new revision of `set` (not yet created) numbered `number`.
pub fn new_revision(
    set: &StatefulSet,
    number: i64,
    collision_count: Option<i32>,
    owner: OwnerReference,
) -> ControllerRevision {
    let data = revision_data(set);
    let hash = revision_hash(&data, collision_count);
    let mut labels = set
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(HASH_LABEL.into(), hash.clone());
    let set_name = set.metadata.name.clone().unwrap_or_default();
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(format!("{set_name}-{hash}")),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: set
                .spec
                .as_ref()
                .and_then(|s| s.template.metadata.as_ref())
                .and_then(|m| m.annotations.clone()),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some(RawExtension(data)),
        revision: number,
    }
}

pub fn same_data(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    a.data == b.data
}

/// One more than the highest revision number.
pub fn next_number(revisions: &[Arc<ControllerRevision>]) -> i64 {
    history::next_revision_number(revisions.iter().map(|r| r.as_ref()))
}

/// The revisions to delete so at most `limit` revisions that no pod runs (and that are neither
/// the current nor the update revision) remain: the oldest first.
pub fn revisions_to_prune(
    revisions: &[Arc<ControllerRevision>],
    live: &BTreeSet<String>,
    limit: usize,
) -> Vec<String> {
    let mut history: Vec<&Arc<ControllerRevision>> = revisions
        .iter()
        .filter(|r| !live.contains(r.metadata.name.as_deref().unwrap_or_default()))
        .collect();
    if history.len() <= limit {
        return Vec::new();
    }
    history.sort_by_key(|r| r.revision);
    let excess = history.len() - limit;
    history
        .into_iter()
        .take(excess)
        .filter_map(|r| r.metadata.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::StatefulSetSpec;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use serde_json::json;

    fn set(image: &str) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(StatefulSetSpec {
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("app".to_string(), "web".to_string())].into()),
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
    fn revisions_name_and_round_trip_templates() {
        let owner = OwnerReference::default();
        let a = new_revision(&set("a"), 1, None, owner.clone());
        let a2 = new_revision(&set("a"), 2, None, owner.clone());
        let b = new_revision(&set("b"), 3, None, owner.clone());
        let a_collided = new_revision(&set("a"), 1, Some(1), owner);
        assert!(
            a.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("web-"))
        );
        assert_eq!(a.metadata.name, a2.metadata.name);
        assert!(same_data(&a, &a2));
        assert_ne!(a.metadata.name, b.metadata.name);
        assert_ne!(a.metadata.name, a_collided.metadata.name);
        let labels = a.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["app"], "web");
        assert!(labels.contains_key(HASH_LABEL));
        assert_eq!(
            revision_template(&b).as_ref(),
            set("b").spec.as_ref().map(|s| &s.template)
        );
        assert_eq!(
            a.data
                .as_ref()
                .and_then(|d| d.0.pointer("/spec/template/$patch")),
            Some(&json!("replace"))
        );
    }

    #[test]
    fn history_is_pruned_oldest_first() {
        let rev = |name: &str, n: i64| {
            Arc::new(ControllerRevision {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    ..Default::default()
                },
                data: None,
                revision: n,
            })
        };
        let revs = vec![rev("d", 4), rev("a", 1), rev("c", 3), rev("b", 2)];
        let live: BTreeSet<String> = ["d".to_string(), "a".to_string()].into();
        let cases = [
            (10, vec![]),
            (2, vec![]),
            (1, vec!["b"]),
            (0, vec!["b", "c"]),
        ];
        for (limit, want) in cases {
            assert_eq!(
                revisions_to_prune(&revs, &live, limit),
                want,
                "limit {limit}"
            );
        }
        assert_eq!(next_number(&revs), 5);
        assert_eq!(next_number(&[]), 1);
    }
}
