//! Storage facts the volume plugins share: claim and volume classes, the annotations of the
//! binding protocol, the names of generic ephemeral claims, node-affinity and
//! allowed-topology matching, and the lister errors upstream shows users.

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, Pod,
    TopologySelectorTerm, Volume,
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

fn requirement_matches<'a>(
    r: &NodeSelectorRequirement,
    value_of: impl Fn(&str) -> Option<&'a str>,
) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let v = value_of(&r.key);
    match r.operator.as_str() {
        "In" => v.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => v.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => v.is_some(),
        "DoesNotExist" => v.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(v), [bound]) = (v, values) else {
                return false;
            };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) if op == "Gt" => v > b,
                (Ok(v), Ok(b)) => v < b,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether some term matches the node (terms are ORed, a term's requirements ANDed; an empty
/// term matches nothing), as upstream's `MatchNodeSelectorTerms`.
pub fn match_node_selector_terms(
    terms: &[NodeSelectorTerm],
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    terms.iter().any(|t| {
        let exprs = t.match_expressions.as_deref().unwrap_or_default();
        let fields = t.match_fields.as_deref().unwrap_or_default();
        if exprs.is_empty() && fields.is_empty() {
            return false;
        }
        exprs
            .iter()
            .all(|r| requirement_matches(r, |k| labels.get(k).map(String::as_str)))
            && fields
                .iter()
                .all(|r| requirement_matches(r, |k| (k == "metadata.name").then_some(node_name)))
    })
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
    match_node_selector_terms(&required.node_selector_terms, "", labels)
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

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn node_selector_terms_table() {
        let labels: BTreeMap<String, String> = [("zone", "a"), ("n", "5")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let term = |rs: Vec<NodeSelectorRequirement>| NodeSelectorTerm {
            match_expressions: Some(rs),
            match_fields: None,
        };
        let cases: Vec<(&str, Vec<NodeSelectorTerm>, bool)> = vec![
            ("in", vec![term(vec![req("zone", "In", &["a", "b"])])], true),
            (
                "in miss",
                vec![term(vec![req("zone", "In", &["b"])])],
                false,
            ),
            (
                "notin absent",
                vec![term(vec![req("x", "NotIn", &["b"])])],
                true,
            ),
            ("exists", vec![term(vec![req("zone", "Exists", &[])])], true),
            (
                "doesnotexist",
                vec![term(vec![req("zone", "DoesNotExist", &[])])],
                false,
            ),
            ("gt", vec![term(vec![req("n", "Gt", &["4"])])], true),
            ("lt", vec![term(vec![req("n", "Lt", &["4"])])], false),
            ("gt bad", vec![term(vec![req("zone", "Gt", &["4"])])], false),
            (
                "ored terms",
                vec![
                    term(vec![req("zone", "In", &["b"])]),
                    term(vec![req("zone", "In", &["a"])]),
                ],
                true,
            ),
            ("empty term", vec![term(vec![])], false),
            ("no terms", vec![], false),
        ];
        for (name, terms, want) in cases {
            assert_eq!(
                match_node_selector_terms(&terms, "", &labels),
                want,
                "{name}"
            );
        }
    }
}
