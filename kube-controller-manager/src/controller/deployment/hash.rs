//! The `pod-template-hash`: names a Deployment's ReplicaSets and tells which one runs the
//! Deployment's current template.

use crate::controller::utils::hash::{Fnv32a, safe_encode};
use k8s_openapi::api::core::v1::PodTemplateSpec;

/// The label (and selector requirement) that tells the ReplicaSets of one Deployment apart.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// The hash of a template plus the Deployment's `status.collisionCount`: FNV-32a over the
/// template's JSON (struct field order and sorted maps make it stable), then the collision
/// count, rendered as upstream renders it (decimal digits mapped onto a safe alphabet). The
/// value differs from upstream's (which hashes Go's printed form), only its shape matters.
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut hash = Fnv32a::new();
    // Serializing typed k8s-openapi structs cannot fail; an empty body still hashes stably.
    hash.write(&serde_json::to_vec(template).unwrap_or_default());
    if let Some(count) = collision_count {
        // Eight bytes, not four as for revisions: existing ReplicaSet names depend on it.
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&(count as u32).to_le_bytes());
        hash.write(&bytes);
    }
    safe_encode(hash.sum())
}

/// Whether two templates are the same once the hash label is ignored: the test for "this
/// ReplicaSet runs the Deployment's current template". An empty label map equals none.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    normalized(a) == normalized(b)
}

fn normalized(t: &PodTemplateSpec) -> PodTemplateSpec {
    let mut t = t.clone();
    let meta = t.metadata.get_or_insert_with(Default::default);
    if let Some(labels) = meta.labels.as_mut() {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
        if labels.is_empty() {
            meta.labels = None;
        }
    }
    if meta == &Default::default() {
        t.metadata = None;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::utils::hash::SAFE_ALPHABET;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use kube::api::ObjectMeta;

    fn template(image: &str, labels: &[(&str, &str)]) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
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
        }
    }

    #[test]
    fn hash_is_stable_safe_and_depends_on_template_and_collisions() {
        let a = template("nginx:1", &[("app", "web")]);
        let h = compute_hash(&a, None);
        assert_eq!(h, compute_hash(&a.clone(), None));
        assert!(!h.is_empty() && h.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
        assert_ne!(
            h,
            compute_hash(&template("nginx:2", &[("app", "web")]), None)
        );
        assert_ne!(h, compute_hash(&a, Some(1)));
        assert_ne!(compute_hash(&a, Some(1)), compute_hash(&a, Some(2)));
    }

    #[test]
    fn equality_ignores_only_the_hash_label() {
        let cases = [
            (
                template("a", &[("app", "web")]),
                template("a", &[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "x")]),
                true,
            ),
            (
                template("a", &[("app", "web")]),
                template("b", &[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "x")]),
                false,
            ),
            (
                template("a", &[]),
                template("a", &[(POD_TEMPLATE_HASH_LABEL, "x")]),
                true,
            ),
            (
                template("a", &[("app", "web")]),
                template("a", &[("app", "db")]),
                false,
            ),
        ];
        for (i, (a, b, want)) in cases.iter().enumerate() {
            assert_eq!(equal_ignore_hash(a, b), *want, "case {i}");
            assert_eq!(equal_ignore_hash(b, a), *want, "case {i} reversed");
        }
    }
}
