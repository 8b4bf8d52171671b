//! The metadata writes of the collector, as JSON merge patches that work for built-in and custom
//! resources alike. Each carries the object's uid and resourceVersion, so a patch computed from
//! a stale read conflicts instead of overwriting a newer list.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};
use std::collections::HashSet;

/// The references left once those to `uids` are dropped.
pub fn without_owners(refs: &[OwnerReference], uids: &HashSet<String>) -> Vec<OwnerReference> {
    refs.iter()
        .filter(|r| !uids.contains(&r.uid))
        .cloned()
        .collect()
}

/// The references with `blockOwnerDeletion` cleared, which lets a dependency cycle finish its
/// foreground deletion.
pub fn unblocked(refs: &[OwnerReference]) -> Vec<OwnerReference> {
    refs.iter()
        .cloned()
        .map(|mut r| {
            if r.block_owner_deletion == Some(true) {
                r.block_owner_deletion = Some(false);
            }
            r
        })
        .collect()
}

/// Sets the ownerReferences (removing the field when none remain).
pub fn owner_references(uid: &str, resource_version: &str, refs: &[OwnerReference]) -> Value {
    let refs = if refs.is_empty() {
        Value::Null
    } else {
        json!(refs)
    };
    json!({"metadata": {
        "uid": uid,
        "resourceVersion": resource_version,
        "ownerReferences": refs,
    }})
}

/// Sets the finalizers (removing the field when none remain).
pub fn finalizers(uid: &str, resource_version: &str, finalizers: &[String]) -> Value {
    let list = if finalizers.is_empty() {
        Value::Null
    } else {
        json!(finalizers)
    };
    json!({"metadata": {
        "uid": uid,
        "resourceVersion": resource_version,
        "finalizers": list,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(uid: &str, block: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: format!("cm-{uid}"),
            uid: uid.into(),
            block_owner_deletion: block,
            controller: None,
        }
    }

    #[test]
    fn drops_only_the_named_owners() {
        let refs = vec![r("a", None), r("b", Some(true)), r("c", None)];
        let gone: HashSet<String> = ["a".to_string(), "c".to_string()].into();
        assert_eq!(without_owners(&refs, &gone), vec![r("b", Some(true))]);
    }

    #[test]
    fn unblocks_blocking_references_only() {
        let refs = vec![r("a", None), r("b", Some(true)), r("c", Some(false))];
        assert_eq!(
            unblocked(&refs),
            vec![r("a", None), r("b", Some(false)), r("c", Some(false))]
        );
    }

    #[test]
    fn patches_carry_preconditions_and_remove_empty_lists() {
        let cases = [
            (
                owner_references("u", "7", &[]),
                json!({"metadata": {"uid": "u", "resourceVersion": "7", "ownerReferences": null}}),
            ),
            (
                owner_references("u", "7", &[r("a", Some(false))]),
                json!({"metadata": {"uid": "u", "resourceVersion": "7", "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm-a", "uid": "a",
                     "blockOwnerDeletion": false}
                ]}}),
            ),
            (
                finalizers("u", "8", &["x/y".to_string()]),
                json!({"metadata": {"uid": "u", "resourceVersion": "8", "finalizers": ["x/y"]}}),
            ),
            (
                finalizers("u", "8", &[]),
                json!({"metadata": {"uid": "u", "resourceVersion": "8", "finalizers": null}}),
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
