//! A StatefulSet pod's stable identity: its name `<set>-<ordinal>`, its labels, hostname and
//! subdomain, and the claims `<template>-<set>-<ordinal>` its volumes point at.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;

pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
pub const REVISION_LABEL: &str = "controller-revision-hash";

pub fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

/// `spec.ordinals.start` (0 when unset).
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .unwrap_or(0)
        .max(0)
}

pub fn desired_replicas(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
        .max(0)
}

pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// The parent's name and the ordinal of a pod named `<parent>-<ordinal>`.
pub fn parent_and_ordinal(pod_name: &str) -> Option<(&str, i32)> {
    let (parent, ordinal) = pod_name.rsplit_once('-')?;
    if parent.is_empty() || ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, ordinal.parse().ok()?))
}

/// The ordinal of one of `set`'s pods; `None` for a pod that is not named as its member.
pub fn ordinal_of(set: &StatefulSet, pod: &Pod) -> Option<i32> {
    let (parent, ordinal) = parent_and_ordinal(pod.metadata.name.as_deref()?)?;
    (parent == set_name(set)).then_some(ordinal)
}

pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

pub fn pod_revision(pod: &Pod) -> Option<&str> {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .map(String::as_str)
}

/// Whether the pod carries the identity labels its ordinal demands.
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = ordinal_of(set, pod) else {
        return false;
    };
    let labels = pod.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
    let name = pod.metadata.name.as_deref();
    pod.metadata.namespace == set.metadata.namespace
        && get(POD_NAME_LABEL) == name
        && get(POD_INDEX_LABEL) == Some(ordinal.to_string().as_str())
}

/// Sets the identity labels (the only part of the identity a live pod can change).
pub fn fix_identity(pod: &mut Pod, ordinal: i32) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.into(), name);
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
}

/// The pod of `ordinal` built from `template` (a revision's template), owned by the set.
pub fn new_pod(
    set: &StatefulSet,
    template: &PodTemplateSpec,
    revision: &str,
    ordinal: i32,
    owner: OwnerReference,
) -> Pod {
    let set_name = set_name(set);
    let name = pod_name(set_name, ordinal);
    let tmeta = template.metadata.clone().unwrap_or_default();
    let mut labels = tmeta.labels.unwrap_or_default();
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(REVISION_LABEL.into(), revision.into());
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.hostname = Some(name.clone());
    spec.subdomain = set
        .spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty());
    let claims = claim_templates(set);
    if !claims.is_empty() {
        let volumes = spec.volumes.get_or_insert_with(Vec::new);
        for claim in claims {
            let tname = claim.metadata.name.clone().unwrap_or_default();
            volumes.retain(|v| v.name != tname);
            volumes.push(Volume {
                name: tname.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim_name(&tname, set_name, ordinal),
                    read_only: None,
                }),
                ..Default::default()
            });
        }
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

pub fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_deref())
        .unwrap_or_default()
}

/// `persistentVolumeClaimRetentionPolicy`: (whenDeleted is Delete, whenScaled is Delete).
pub fn retention_deletes(set: &StatefulSet) -> (bool, bool) {
    let policy = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let is_delete = |v: Option<&String>| v.is_some_and(|v| v == "Delete");
    (
        is_delete(policy.and_then(|p| p.when_deleted.as_ref())),
        is_delete(policy.and_then(|p| p.when_scaled.as_ref())),
    )
}

/// The claims of `ordinal`, as they are created: the template's metadata and spec, the set's
/// `matchLabels` as labels, and an ownerReference to the set when the policy deletes claims
/// with the set.
pub fn new_claims(
    set: &StatefulSet,
    ordinal: i32,
    set_owner: &OwnerReference,
) -> Vec<PersistentVolumeClaim> {
    let (when_deleted, _) = retention_deletes(set);
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|t| {
            let tname = t.metadata.name.clone().unwrap_or_default();
            let mut labels = t.metadata.labels.clone().unwrap_or_default();
            labels.extend(match_labels.clone());
            let owner = OwnerReference {
                controller: None,
                block_owner_deletion: None,
                ..set_owner.clone()
            };
            PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some(claim_name(&tname, set_name(set), ordinal)),
                    namespace: set.metadata.namespace.clone(),
                    labels: Some(labels),
                    annotations: t.metadata.annotations.clone(),
                    owner_references: when_deleted.then(|| vec![owner]),
                    ..Default::default()
                },
                spec: t.spec.clone(),
                status: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        StatefulSetOrdinals, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    };
    use k8s_openapi::api::core::v1::PodSpec;

    fn set(policy: Option<(&str, &str)>) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("u".into()),
                ..Default::default()
            },
            spec: Some(StatefulSetSpec {
                service_name: Some("svc".into()),
                ordinals: Some(StatefulSetOrdinals { start: Some(3) }),
                persistent_volume_claim_retention_policy: policy.map(|(d, s)| {
                    StatefulSetPersistentVolumeClaimRetentionPolicy {
                        when_deleted: Some(d.into()),
                        when_scaled: Some(s.into()),
                    }
                }),
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some("data".into()),
                        ..Default::default()
                    },
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: "web".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn ordinals_parse_from_names() {
        let cases = [
            ("web-0", Some(("web", 0))),
            ("my-web-12", Some(("my-web", 12))),
            ("web", None),
            ("web-", None),
            ("-3", None),
            ("web-x1", None),
            ("web--1", Some(("web-", 1))),
        ];
        for (name, want) in cases {
            assert_eq!(parent_and_ordinal(name), want, "{name}");
        }
    }

    #[test]
    fn new_pod_has_identity_and_claims() {
        let s = set(None);
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                volumes: Some(vec![Volume {
                    name: "data".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        };
        let pod = new_pod(&s, &template, "web-abc", 4, owner());
        assert_eq!(pod.metadata.name.as_deref(), Some("web-4"));
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels[POD_NAME_LABEL], "web-4");
        assert_eq!(labels[POD_INDEX_LABEL], "4");
        assert_eq!(labels[REVISION_LABEL], "web-abc");
        assert_eq!(labels["app"], "web");
        let spec = pod.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some("web-4"));
        assert_eq!(spec.subdomain.as_deref(), Some("svc"));
        let volumes = spec.volumes.unwrap_or_default();
        assert_eq!(volumes.len(), 1, "the template's volume is replaced");
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str()),
            Some("data-web-4")
        );
        assert!(identity_matches(&s, &pod));
        assert_eq!(ordinal_of(&s, &pod), Some(4));
        let mut broken = pod.clone();
        broken.metadata.labels = None;
        assert!(!identity_matches(&s, &broken));
        fix_identity(&mut broken, 4);
        assert!(identity_matches(&s, &broken));
        assert_eq!(start_ordinal(&s), 3);
    }

    #[test]
    fn claims_follow_retention_policy() {
        let cases = [
            (None, false),
            (Some(("Retain", "Delete")), false),
            (Some(("Delete", "Retain")), true),
        ];
        for (policy, owned) in cases {
            let claims = new_claims(&set(policy), 3, &owner());
            assert_eq!(claims.len(), 1);
            assert_eq!(claims[0].metadata.name.as_deref(), Some("data-web-3"));
            let refs = claims[0].metadata.owner_references.clone();
            assert_eq!(refs.is_some(), owned, "{policy:?}");
            if let Some(refs) = refs {
                assert_eq!(refs[0].controller, None);
                assert_eq!(refs[0].uid, "u");
            }
        }
    }
}
