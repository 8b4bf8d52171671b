//! Storage facts the volume plugins share: claim and volume classes, the annotations of the
//! binding protocol, the names of generic ephemeral claims, node-affinity and
//! allowed-topology matching, and the lister errors upstream shows users.

use crate::plugins::helper::node_affinity::NodeSelector;
use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, Pod, TopologySelectorTerm, Volume,
};
use std::any::Any;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const ANN_STORAGE_CLASS_BETA: &str = "volume.beta.kubernetes.io/storage-class";
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// A StorageClass provisioner that means "no dynamic provisioning" (local volumes).
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

static EMPTY: BTreeMap<String, String> = BTreeMap::new();

fn annotation<'a>(annotations: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    annotations.as_ref()?.get(key).map(String::as_str)
}

/// The class a claim asks for: the beta annotation wins over `storageClassName`.
pub fn claim_class(pvc: &PersistentVolumeClaim) -> &str {
    annotation(&pvc.metadata.annotations, ANN_STORAGE_CLASS_BETA)
        .or_else(|| pvc.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// The class of a volume, as [`claim_class`].
pub fn volume_class(pv: &PersistentVolume) -> &str {
    annotation(&pv.metadata.annotations, ANN_STORAGE_CLASS_BETA)
        .or_else(|| pv.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or_default()
}

pub fn claim_volume_name(pvc: &PersistentVolumeClaim) -> &str {
    pvc.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

pub fn has_annotation(meta_annotations: &Option<BTreeMap<String, String>>, key: &str) -> bool {
    annotation(meta_annotations, key).is_some()
}

pub fn selected_node(pvc: &PersistentVolumeClaim) -> Option<&str> {
    annotation(&pvc.metadata.annotations, ANN_SELECTED_NODE)
}

/// The claim a pod volume uses, and whether it is a generic ephemeral volume's claim
/// (named `<pod>-<volume>`); `None` for volumes without a claim.
pub fn volume_claim_name<'a>(pod: &Pod, vol: &'a Volume) -> Option<(Cow<'a, str>, bool)> {
    if let Some(c) = &vol.persistent_volume_claim {
        return Some((Cow::Borrowed(c.claim_name.as_str()), false));
    }
    vol.ephemeral.as_ref().map(|_| {
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        (Cow::Owned(format!("{pod_name}-{}", vol.name)), true)
    })
}

pub fn pod_volumes(pod: &Pod) -> &[Volume] {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default()
}

/// Whether the pod has a volume backed by a claim (plain or generic ephemeral).
pub fn pod_has_claims(pod: &Pod) -> bool {
    pod_volumes(pod)
        .iter()
        .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
}

/// A generic ephemeral volume's claim must be controlled by the pod, or it is someone else's
/// claim that happens to have the computed name.
pub fn volume_is_for_pod(pod: &Pod, pvc: &PersistentVolumeClaim) -> Result<(), String> {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let owned = pvc
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid);
    if owned {
        Ok(())
    } else {
        Err(format!(
            "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
            pvc.metadata.namespace.as_deref().unwrap_or_default(),
            pvc.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default(),
        ))
    }
}

/// The lister's not-found errors, worded as client-go's `NewNotFound`.
pub fn pvc_not_found(name: &str) -> String {
    format!("persistentvolumeclaim \"{name}\" not found")
}
pub fn pv_not_found(name: &str) -> String {
    format!("persistentvolume \"{name}\" not found")
}
pub fn storage_class_not_found(name: &str) -> String {
    format!("storageclass.storage.k8s.io \"{name}\" not found")
}

/// Whether a volume's required node affinity admits a node with `labels` (upstream's
/// `CheckNodeAffinity`, which looks at labels only).
pub fn volume_fits_node(pv: &PersistentVolume, labels: &BTreeMap<String, String>) -> bool {
    let Some(required) = pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return true;
    };
    // Upstream matches a node built from the labels alone: `matchFields` never match.
    NodeSelector::parse(required).matches_parts(labels, "")
}

/// A StorageClass's `allowedTopologies` against node labels (no terms: every node).
pub fn match_topology_selector_terms(
    terms: &[TopologySelectorTerm],
    labels: &BTreeMap<String, String>,
) -> bool {
    terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions.iter().flatten().all(|r| {
                labels
                    .get(&r.key)
                    .is_some_and(|v| r.values.iter().any(|x| x == v))
            })
        })
}

pub fn node_labels(node: &k8s_openapi::api::core::v1::Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// An event object as `T`, whether the queue hands it over bare or behind an `Arc`.
pub fn event_object<T: 'static>(obj: Option<&dyn Any>) -> Option<&T> {
    let obj = obj?;
    obj.downcast_ref::<T>()
        .or_else(|| obj.downcast_ref::<Arc<T>>().map(|a| a.as_ref()))
}

/// Whether the pod uses the claim `namespace/name` (plain or generic ephemeral).
pub fn pod_uses_claim(pod: &Pod, namespace: &str, name: &str) -> bool {
    pod.metadata.namespace.as_deref().unwrap_or_default() == namespace
        && pod_volumes(pod)
            .iter()
            .any(|v| volume_claim_name(pod, v).is_some_and(|(c, _)| c == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        NodeSelector as ApiNodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
        PersistentVolumeSpec, VolumeNodeAffinity,
    };

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|s| s.to_string()).collect()),
        }
    }

    fn pv_with(terms: Option<Vec<NodeSelectorTerm>>) -> PersistentVolume {
        PersistentVolume {
            spec: Some(PersistentVolumeSpec {
                node_affinity: terms.map(|node_selector_terms| VolumeNodeAffinity {
                    required: Some(ApiNodeSelector {
                        node_selector_terms,
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn volume_node_affinity_table() {
        let labels: BTreeMap<String, String> = [("zone", "a"), ("n", "5")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let term = |rs: Vec<NodeSelectorRequirement>| NodeSelectorTerm {
            match_expressions: Some(rs),
            match_fields: None,
        };
        let by_name = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "In", &["node-a"])]),
        };
        let cases: Vec<(&str, Option<Vec<NodeSelectorTerm>>, bool)> = vec![
            ("no affinity", None, true),
            (
                "in",
                Some(vec![term(vec![req("zone", "In", &["a", "b"])])]),
                true,
            ),
            (
                "in miss",
                Some(vec![term(vec![req("zone", "In", &["b"])])]),
                false,
            ),
            ("gt", Some(vec![term(vec![req("n", "Gt", &["4"])])]), true),
            (
                "ored terms",
                Some(vec![
                    term(vec![req("zone", "In", &["b"])]),
                    term(vec![req("zone", "In", &["a"])]),
                ]),
                true,
            ),
            ("fields never match", Some(vec![by_name]), false),
            ("no terms", Some(vec![]), false),
        ];
        for (name, terms, want) in cases {
            assert_eq!(volume_fits_node(&pv_with(terms), &labels), want, "{name}");
        }
    }

    #[test]
    fn allowed_topologies() {
        use k8s_openapi::api::core::v1::TopologySelectorLabelRequirement;
        let labels: BTreeMap<String, String> = [("zone".to_string(), "a".to_string())]
            .into_iter()
            .collect();
        let term = |v: &str| TopologySelectorTerm {
            match_label_expressions: Some(vec![TopologySelectorLabelRequirement {
                key: "zone".into(),
                values: vec![v.into()],
            }]),
        };
        assert!(match_topology_selector_terms(&[], &labels));
        assert!(match_topology_selector_terms(
            &[term("b"), term("a")],
            &labels
        ));
        assert!(!match_topology_selector_terms(&[term("b")], &labels));
    }
}
