//! The `NodeRestriction` admission plugin: the Node authorizer lets kubelets write pods,
//! Nodes, leases and the like without seeing the objects, so this plugin checks the objects:
//! a kubelet may only write its own Node (without steering labels or taint changes), create
//! mirror pods bound to itself that reference nothing, touch pods, leases, CSINodes and
//! ResourceSlices of its own node, and mint tokens only for pods bound to it.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use base64::Engine;
use serde_json::Value;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::auth::node::graph::{is_mirror_pod, pod_references};
use crate::auth::node::{NODE_LEASE_NAMESPACE, NODE_USER_PREFIX, node_identity};
use crate::http::status::{ApiError, go_quote};
use crate::registry::lookup::ObjectLookup;
use crate::rest::state::ApiState;

/// The label namespace only administrators may set on Nodes, so workloads can trust it to
/// pick nodes.
pub const NODE_RESTRICTION_LABEL_NAMESPACE: &str = "node-restriction.kubernetes.io";

/// The `kubernetes.io` and `k8s.io` labels a kubelet sets on its own Node.
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
];

/// Label namespaces (and their subdomains) that belong to the kubelet.
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

#[derive(Debug, Default)]
pub struct NodeRestriction;

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    // Upstream checks in the mutating phase; creates and updates are checked there too so
    // later mutating plugins see only admitted objects.
    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        check(attrs, Some(object), old, state)
    }

    // The mutating phase does not run for deletes here, so deletes are checked now, against
    // the stored object.
    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        // An eviction reaches the store as the delete of its pod, validated under the
        // eviction's attributes with no new object; checking it here keeps a node from
        // evicting other nodes' pods even where the Eviction body is not admitted.
        let evicting = attrs.is("", "pods") && attrs.subresource == "eviction" && object.is_none();
        if attrs.operation == Operation::Delete || evicting {
            check(attrs, object, old, state)
        } else {
            Ok(())
        }
    }
}

/// The plugin's decision for one write by any user: `object` is the new object (None on
/// delete), `old` the stored one, `lookup` the watch caches (pods and Nodes are read there).
pub fn check(
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
    lookup: &dyn ObjectLookup,
) -> Result<(), ApiError> {
    if attrs.operation == Operation::Connect {
        return Ok(());
    }
    let Some(node) = node_identity(&attrs.user) else {
        return Ok(());
    };
    let to_forbidden = |reason: String| forbidden(attrs, object_name(attrs, object), &reason);
    if node.is_empty() {
        return Err(to_forbidden(format!(
            "could not determine node from user {}",
            go_quote(&attrs.user.name)
        )));
    }
    let c = Check {
        node,
        attrs,
        object,
        old,
        lookup,
    };
    let result = match (attrs.resource.group, attrs.resource.plural) {
        ("", "pods") => match attrs.subresource.as_str() {
            "" => c.pod(),
            "status" => c.pod_status(),
            "eviction" => c.eviction(),
            other => Err(Refusal::Forbidden(format!(
                "unexpected pod subresource {}, only 'status' and 'eviction' are allowed",
                go_quote(other)
            ))),
        },
        ("", "nodes") => c.node(),
        ("", "persistentvolumeclaims") if attrs.subresource == "status" => c.pvc_status(),
        ("", "persistentvolumeclaims") => {
            Err(Refusal::Forbidden("may only update PVC status".into()))
        }
        ("", "serviceaccounts") => c.token_request(),
        ("coordination.k8s.io", "leases") => c.lease(),
        ("storage.k8s.io", "csinodes") => c.csi_node(),
        ("resource.k8s.io", "resourceslices") => c.resource_slice(),
        ("certificates.k8s.io", "certificatesigningrequests") => c.csr(),
        _ => Ok(()),
    };
    result.map_err(|r| match r {
        Refusal::Forbidden(reason) => to_forbidden(reason),
        Refusal::NotFound(group, plural, name) => ApiError::not_found(group, plural, &name),
    })
}

/// Why a write is refused: forbidden with a reason, or (as upstream returns its lister's
/// error unchanged) a referenced object that does not exist.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    Forbidden(String),
    NotFound(&'static str, &'static str, String),
}

type Checked = Result<(), Refusal>;

fn refuse(reason: impl Into<String>) -> Checked {
    Err(Refusal::Forbidden(reason.into()))
}

struct Check<'a> {
    node: &'a str,
    attrs: &'a Attributes,
    object: Option<&'a Value>,
    old: Option<&'a Value>,
    lookup: &'a dyn ObjectLookup,
}

fn str_at<'v>(v: Option<&'v Value>, pointer: &str) -> &'v str {
    v.and_then(|v| v.pointer(pointer))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn field<'v>(v: Option<&'v Value>, pointer: &str) -> Option<&'v Value> {
    v.and_then(|v| v.pointer(pointer))
}

/// Go's semantic equality for API fields: absent, null, empty list and empty map are all
/// "unset".
fn unset(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        _ => false,
    }
}

fn same_field(a: Option<&Value>, b: Option<&Value>) -> bool {
    (unset(a) && unset(b)) || a == b
}

fn labels(v: Option<&Value>) -> BTreeMap<&str, &str> {
    v.and_then(|v| v.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

impl Check<'_> {
    fn quoted_node(&self) -> String {
        go_quote(self.node)
    }

    fn pod(&self) -> Checked {
        let node = self.quoted_node();
        match self.attrs.operation {
            Operation::Create => self.mirror_pod_create(),
            Operation::Delete => {
                let pod = self.existing_pod(&self.attrs.name)?;
                if str_at(Some(&pod), "/spec/nodeName") != self.node {
                    return refuse(format!(
                        "node {node} can only delete pods with spec.nodeName set to itself"
                    ));
                }
                Ok(())
            }
            op => refuse(format!(
                "unexpected operation {}, node {node} can only create and delete mirror pods",
                go_quote(op.as_str())
            )),
        }
    }

    /// The pod being deleted (the stored object) or, for an eviction, the named pod.
    fn existing_pod(&self, name: &str) -> Result<Value, Refusal> {
        if self.attrs.operation == Operation::Delete
            && let Some(old) = self.old
        {
            return Ok(old.clone());
        }
        self.lookup
            .get("", "pods", Some(&self.attrs.namespace), name)
            .map(|p| (*p).clone())
            .ok_or_else(|| Refusal::NotFound("", "pods", name.to_string()))
    }

    fn mirror_pod_create(&self) -> Checked {
        let node = self.quoted_node();
        let Some(pod) = self.object else {
            return refuse("unexpected type <nil>");
        };
        if !is_mirror_pod(pod) {
            return refuse(format!(
                "pod does not have {} annotation, node {node} can only create mirror pods",
                go_quote(crate::auth::node::graph::MIRROR_POD_ANNOTATION)
            ));
        }
        if str_at(Some(pod), "/spec/nodeName") != self.node {
            return refuse(format!(
                "node {node} can only create pods with spec.nodeName set to itself"
            ));
        }
        let owners = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        match owners {
            [] => {
                return refuse(format!(
                    "node {node} can only create pods with an owner reference set to itself"
                ));
            }
            [owner] => self.mirror_pod_owner(owner)?,
            _ => {
                return refuse(format!(
                    "node {node} can only create pods with a single owner reference set to itself"
                ));
            }
        }
        // A mirror pod must not give the node a path to any other object.
        let refs = pod_references(pod);
        if refs.service_account.is_some() {
            return refuse(format!(
                "node {node} can not create pods that reference a service account"
            ));
        }
        if !refs.secrets.is_empty() {
            return refuse(format!(
                "node {node} can not create pods that reference secrets"
            ));
        }
        if !refs.config_maps.is_empty() {
            return refuse(format!(
                "node {node} can not create pods that reference configmaps"
            ));
        }
        let volumes = pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let trust_bundle = volumes.iter().any(|v| {
            v.pointer("/projected/sources")
                .and_then(Value::as_array)
                .is_some_and(|s| s.iter().any(|s| !unset(s.get("clusterTrustBundle"))))
        });
        if trust_bundle {
            return refuse(format!(
                "node {node} can not create pods that reference clustertrustbundles"
            ));
        }
        if volumes
            .iter()
            .any(|v| !v.get("persistentVolumeClaim").is_none_or(Value::is_null))
        {
            return refuse(format!(
                "node {node} can not create pods that reference persistentvolumeclaims"
            ));
        }
        Ok(())
    }

    fn mirror_pod_owner(&self, owner: &Value) -> Checked {
        let node = self.quoted_node();
        let o = Some(owner);
        if str_at(o, "/apiVersion") != "v1"
            || str_at(o, "/kind") != "Node"
            || str_at(o, "/name") != self.node
        {
            return refuse(format!(
                "node {node} can only create pods with an owner reference set to itself"
            ));
        }
        if owner.get("controller").and_then(Value::as_bool) != Some(true) {
            return refuse(format!(
                "node {node} can only create pods with a controller owner reference set to itself"
            ));
        }
        if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
            return refuse(format!(
                "node {node} must not set blockOwnerDeletion on an owner reference"
            ));
        }
        let Some(stored) = self.lookup.get("", "nodes", None, self.node) else {
            return Err(Refusal::NotFound("", "nodes", self.node.to_string()));
        };
        let want = str_at(o, "/uid");
        let got = str_at(Some(&stored), "/metadata/uid");
        if want != got {
            return refuse(format!(
                "node {} UID mismatch: expected {want} got {got}",
                self.node
            ));
        }
        Ok(())
    }

    fn pod_status(&self) -> Checked {
        let node = self.quoted_node();
        if self.attrs.operation != Operation::Update {
            return refuse(format!(
                "unexpected operation {}",
                go_quote(self.attrs.operation.as_str())
            ));
        }
        if str_at(self.old, "/spec/nodeName") != self.node {
            return refuse(format!(
                "node {node} can only update pod status for pods with spec.nodeName set to itself"
            ));
        }
        if labels(self.old) != labels(self.object) {
            return refuse(format!(
                "node {node} cannot update labels through pod status"
            ));
        }
        let claims = |v: Option<&Value>| {
            v.and_then(|v| v.pointer("/status/resourceClaimStatuses"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|s| (s.get("name").cloned(), s.get("resourceClaimName").cloned()))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        if claims(self.old) != claims(self.object) {
            // Upstream's wording, misspelling included.
            return refuse(format!("node {node} cannot update resource claim statues"));
        }
        Ok(())
    }

    fn eviction(&self) -> Checked {
        if self.attrs.operation != Operation::Create {
            return refuse(format!(
                "unexpected operation {}",
                self.attrs.operation.as_str()
            ));
        }
        // The path's pod name wins over the name in the submitted Eviction.
        let name = match self.attrs.name.as_str() {
            "" => str_at(self.object, "/metadata/name"),
            n => n,
        };
        if name.is_empty() {
            return refuse("could not determine pod from request data");
        }
        let pod = self.existing_pod(name)?;
        if str_at(Some(&pod), "/spec/nodeName") != self.node {
            return refuse(format!(
                "node {} can only evict pods with spec.nodeName set to itself",
                self.node
            ));
        }
        Ok(())
    }

    fn pvc_status(&self) -> Checked {
        if self.attrs.operation != Operation::Update {
            return refuse(format!(
                "unexpected operation {}",
                go_quote(self.attrs.operation.as_str())
            ));
        }
        // Everything but the fields the kubelet reports after an expansion must stay as is:
        // a node must not relabel a claim or add finalizers or owners.
        let strip = |v: Option<&Value>| {
            let mut v = v.cloned().unwrap_or(Value::Null);
            for (parent, field) in [
                ("/metadata", "resourceVersion"),
                ("/metadata", "managedFields"),
                ("/status", "capacity"),
                ("/status", "conditions"),
                ("/status", "allocatedResourceStatuses"),
                ("/status", "allocatedResources"),
            ] {
                if let Some(o) = v.pointer_mut(parent).and_then(Value::as_object_mut) {
                    o.remove(field);
                }
            }
            v
        };
        let (old, new) = (strip(self.old), strip(self.object));
        let changed = changed_fields(&old, &new, "");
        if !changed.is_empty() {
            return refuse(format!(
                "node {} is not allowed to update fields other than status.quantity and status.conditions: {}",
                self.quoted_node(),
                changed.join(", ")
            ));
        }
        Ok(())
    }

    fn node(&self) -> Checked {
        let node = self.quoted_node();
        let requested = object_name(self.attrs, self.object);
        if requested != self.node {
            return refuse(format!(
                "node {node} is not allowed to modify node {}",
                go_quote(requested)
            ));
        }
        let config_source = |v| field(v, "/spec/configSource");
        match self.attrs.operation {
            Operation::Create => {
                // The node's view is scoped through its Node's spec, so a config source
                // chosen by the node would widen it.
                if !config_source(self.object).is_none_or(Value::is_null) {
                    // Upstream's wording ("pods") kept.
                    return refuse(format!(
                        "node {node} is not allowed to create pods with a non-nil configSource"
                    ));
                }
                let forbidden =
                    forbidden_labels(&modified_labels(&labels(self.object), &BTreeMap::new()));
                if !forbidden.is_empty() {
                    return refuse(format!(
                        "node {node} is not allowed to set the following labels: {}",
                        forbidden.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            Operation::Update => {
                let new_source = config_source(self.object);
                if !new_source.is_none_or(Value::is_null)
                    && !same_field(new_source, config_source(self.old))
                {
                    return refuse(format!(
                        "node {node} is not allowed to update configSource to a new non-nil configSource"
                    ));
                }
                // A node that could drop its taints could draw workloads meant to avoid it.
                let taints = |v| field(v, "/spec/taints");
                if !same_field(taints(self.object), taints(self.old)) {
                    return refuse(format!("node {node} is not allowed to modify taints"));
                }
                let forbidden =
                    forbidden_labels(&modified_labels(&labels(self.object), &labels(self.old)));
                if !forbidden.is_empty() {
                    return refuse(format!(
                        "is not allowed to modify labels: {}",
                        forbidden.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn token_request(&self) -> Checked {
        if self.attrs.operation != Operation::Create || self.attrs.subresource != "token" {
            return Ok(());
        }
        // Tokens a node mints must be bound to one of its pods, so they die with the pod.
        let r = self.object.and_then(|o| o.pointer("/spec/boundObjectRef"));
        let (api_version, kind, name, uid) = (
            str_at(r, "/apiVersion"),
            str_at(r, "/kind"),
            str_at(r, "/name"),
            str_at(r, "/uid"),
        );
        if api_version != "v1" || kind != "Pod" || name.is_empty() {
            return refuse("node requested token not bound to a pod");
        }
        if uid.is_empty() {
            return refuse("node requested token with a pod binding without a uid");
        }
        let pod = self.existing_pod(name)?;
        if str_at(Some(&pod), "/metadata/uid") != uid {
            return refuse(format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ));
        }
        if str_at(Some(&pod), "/spec/nodeName") != self.node {
            return refuse("node requested token bound to a pod scheduled on a different node");
        }
        Ok(())
    }

    fn csr(&self) -> Checked {
        if self.attrs.operation != Operation::Create {
            return Ok(());
        }
        if !KUBELET_SIGNERS.contains(&str_at(self.object, "/spec/signerName")) {
            return Ok(());
        }
        // `request` is PEM bytes, base64 in JSON.
        let pem_bytes = base64::engine::general_purpose::STANDARD
            .decode(str_at(self.object, "/spec/request"))
            .unwrap_or_default();
        let cn = csr_common_name(&pem_bytes)
            .map_err(|e| Refusal::Forbidden(format!("unable to parse csr: {e}")))?;
        if cn != format!("{NODE_USER_PREFIX}{}", self.node) {
            return refuse(format!(
                "can only create a node CSR with CN={NODE_USER_PREFIX}{}",
                self.node
            ));
        }
        Ok(())
    }

    /// The name the write is about: the new object's on create (the authorizer could not
    /// see it), the request's otherwise.
    fn target_name(&self) -> &str {
        if self.attrs.operation == Operation::Create {
            str_at(self.object, "/metadata/name")
        } else {
            &self.attrs.name
        }
    }

    fn lease(&self) -> Checked {
        if self.attrs.namespace != NODE_LEASE_NAMESPACE {
            return refuse(format!(
                "can only access leases in the {} system namespace",
                go_quote(NODE_LEASE_NAMESPACE)
            ));
        }
        if self.target_name() != self.node {
            return refuse("can only access node lease with the same name as the requesting node");
        }
        Ok(())
    }

    fn csi_node(&self) -> Checked {
        if self.target_name() != self.node {
            return refuse("can only access CSINode with the same name as the requesting node");
        }
        Ok(())
    }

    fn resource_slice(&self) -> Checked {
        match self.attrs.operation {
            Operation::Create if str_at(self.object, "/spec/nodeName") != self.node => refuse(
                "can only create ResourceSlice with the same NodeName as the requesting node",
            ),
            Operation::Delete if str_at(self.old, "/spec/nodeName") != self.node => refuse(
                "can only delete ResourceSlice with the same NodeName as the requesting node",
            ),
            _ => Ok(()),
        }
    }
}

/// The signers whose certificates carry a kubelet's identity: a node may only ask them for
/// its own name.
const KUBELET_SIGNERS: &[&str] = &[
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/kube-apiserver-client-kubelet",
];

/// The subject common name of a PEM certificate request (the last CN, as Go's `pkix.Name`
/// keeps it), or why it cannot be read.
pub fn csr_common_name(pem_bytes: &[u8]) -> Result<String, String> {
    let block = pem::parse(pem_bytes)
        .ok()
        .filter(|b| b.tag() == "CERTIFICATE REQUEST")
        .ok_or_else(|| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    let (_, csr) = X509CertificationRequest::from_der(block.contents())
        .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    Ok(csr
        .certification_request_info
        .subject
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .last()
        .unwrap_or_default()
        .to_string())
}

/// The keys whose presence or value differs between `a` and `b`.
fn modified_labels<'a>(
    a: &BTreeMap<&'a str, &str>,
    b: &BTreeMap<&'a str, &str>,
) -> BTreeSet<&'a str> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .copied()
        .collect()
}

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or_default()
}

fn in_namespace(namespace: &str, domain: &str) -> bool {
    namespace == domain
        || namespace
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Whether the kubelet itself may set `key` on its Node.
pub fn is_kubelet_label(key: &str) -> bool {
    KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_NAMESPACES
            .iter()
            .any(|d| in_namespace(label_namespace(key), d))
}

/// Of `modified`, the labels a node may not add, remove or change on its own Node: the
/// node-restriction namespace, and the Kubernetes-reserved namespaces beyond the kubelet's
/// own labels (a node could otherwise steer privileged workloads to itself).
pub fn forbidden_labels<'a>(modified: &BTreeSet<&'a str>) -> BTreeSet<&'a str> {
    modified
        .iter()
        .filter(|key| {
            let ns = label_namespace(key);
            let reserved = in_namespace(ns, "kubernetes.io") || in_namespace(ns, "k8s.io");
            in_namespace(ns, NODE_RESTRICTION_LABEL_NAMESPACE)
                || (reserved && !is_kubelet_label(key))
        })
        .copied()
        .collect()
}

/// The dotted paths where `a` and `b` differ, treating unset fields alike.
fn changed_fields(a: &Value, b: &Value, path: &str) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    let sub = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => changed_fields(p, q, &sub),
                        (p, q) if same_field(p, q) => Vec::new(),
                        _ => vec![sub],
                    }
                })
                .collect()
        }
        _ if same_field(Some(a), Some(b)) => Vec::new(),
        _ => vec![if path.is_empty() {
            "<object>".to_string()
        } else {
            path.to_string()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::node::NODES_GROUP;
    use crate::auth::node::graph::fake::FakeLookup;
    use crate::http::auth::user::UserInfo;
    use api_types::registry::by_group_resource;
    use serde_json::json;

    fn attrs(
        op: Operation,
        group: &str,
        plural: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> Attributes {
        Attributes {
            operation: op,
            // ResourceSlices are not served yet; a made-up entry stands in for them.
            resource: by_group_resource(group, plural).unwrap_or_else(|| {
                let mut info = *by_group_resource("", "nodes").expect("nodes");
                info.group = Box::leak(group.to_string().into_boxed_str());
                info.plural = Box::leak(plural.to_string().into_boxed_str());
                Box::leak(Box::new(info))
            }),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            user: UserInfo {
                name: format!("{NODE_USER_PREFIX}n1"),
                groups: vec![NODES_GROUP.into()],
                ..Default::default()
            },
            dry_run: false,
            warnings: Default::default(),
        }
    }

    fn lookup() -> FakeLookup {
        FakeLookup::default()
            .with(
                "",
                "nodes",
                json!({"metadata": {"name": "n1", "uid": "node-uid"}}),
            )
            .with(
                "",
                "pods",
                json!({"metadata": {"name": "mine", "namespace": "ns", "uid": "u1"},
                       "spec": {"nodeName": "n1"}}),
            )
            .with(
                "",
                "pods",
                json!({"metadata": {"name": "theirs", "namespace": "ns", "uid": "u2"},
                       "spec": {"nodeName": "n2"}}),
            )
    }

    fn message(r: Result<(), ApiError>) -> String {
        let e = r.expect_err("refused");
        assert_eq!(e.code().as_u16(), 403, "{}", e.message());
        e.message().to_string()
    }

    fn mirror_pod(extra_spec: Value) -> Value {
        let mut spec = json!({"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]});
        for (k, v) in extra_spec.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({
            "metadata": {
                "name": "static-n1", "namespace": "ns",
                "annotations": {"kubernetes.io/config.mirror": "hash"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1",
                                     "uid": "node-uid", "controller": true}]
            },
            "spec": spec
        })
    }

    #[test]
    fn other_users_are_not_restricted() {
        let mut a = attrs(Operation::Update, "", "nodes", "", "", "n2");
        a.user = UserInfo {
            name: "system:node:n1".into(),
            ..Default::default()
        };
        assert!(check(&a, Some(&json!({})), None, &lookup()).is_ok());
        let mut a = attrs(Operation::Update, "", "nodes", "", "", "n2");
        a.user.name = "system:node:".into();
        assert_eq!(
            message(check(&a, Some(&json!({})), None, &lookup())),
            "nodes \"n2\" is forbidden: could not determine node from user \"system:node:\""
        );
    }

    #[test]
    fn mirror_pods_only_bound_to_self_and_self_contained() {
        let l = lookup();
        let a = attrs(Operation::Create, "", "pods", "", "ns", "static-n1");
        assert!(check(&a, Some(&mirror_pod(json!({}))), None, &l).is_ok());

        let mut plain = mirror_pod(json!({}));
        plain["metadata"]["annotations"] = json!({});
        assert_eq!(
            message(check(&a, Some(&plain), None, &l)),
            "pods \"static-n1\" is forbidden: pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods"
        );
        let elsewhere = mirror_pod(json!({"nodeName": "n2"}));
        assert!(
            message(check(&a, Some(&elsewhere), None, &l))
                .ends_with("node \"n1\" can only create pods with spec.nodeName set to itself")
        );
        let mut wrong_uid = mirror_pod(json!({}));
        wrong_uid["metadata"]["ownerReferences"][0]["uid"] = json!("other");
        assert!(
            message(check(&a, Some(&wrong_uid), None, &l))
                .ends_with("node n1 UID mismatch: expected other got node-uid")
        );
        let mut not_controller = mirror_pod(json!({}));
        not_controller["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        assert!(
            message(check(&a, Some(&not_controller), None, &l)).ends_with(
                "node \"n1\" can only create pods with a controller owner reference set to itself"
            )
        );
        for (spec, what) in [
            (
                json!({"serviceAccountName": "default"}),
                "a service account",
            ),
            (
                json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
                "secrets",
            ),
            (
                json!({"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "c"}}]}]}),
                "configmaps",
            ),
            (
                json!({"volumes": [{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"name": "b", "path": "p"}}]}}]}),
                "clustertrustbundles",
            ),
            (
                json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}),
                "persistentvolumeclaims",
            ),
        ] {
            assert!(
                message(check(&a, Some(&mirror_pod(spec)), None, &l)).ends_with(&format!(
                    "node \"n1\" can not create pods that reference {what}"
                )),
                "{what}"
            );
        }
    }

    #[test]
    fn pods_deleted_evicted_and_updated_only_on_own_node() {
        let l = lookup();
        let theirs = l.get("", "pods", Some("ns"), "theirs").unwrap();
        let mine = l.get("", "pods", Some("ns"), "mine").unwrap();
        let del = attrs(Operation::Delete, "", "pods", "", "ns", "theirs");
        assert_eq!(
            message(check(&del, None, Some(&theirs), &l)),
            "pods \"theirs\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself"
        );
        let del = attrs(Operation::Delete, "", "pods", "", "ns", "mine");
        assert!(check(&del, None, Some(&mine), &l).is_ok());

        let evict = attrs(Operation::Create, "", "pods", "eviction", "ns", "theirs");
        let body = json!({"metadata": {"name": "theirs"}});
        assert!(
            message(check(&evict, Some(&body), None, &l))
                .ends_with("node n1 can only evict pods with spec.nodeName set to itself")
        );
        let evict = attrs(Operation::Create, "", "pods", "eviction", "ns", "gone");
        let e = check(&evict, Some(&body), None, &l).expect_err("missing pod");
        assert_eq!(e.code().as_u16(), 404);
        assert_eq!(e.message(), "pods \"gone\" not found");

        let status = attrs(Operation::Update, "", "pods", "status", "ns", "mine");
        let mut relabeled = (*mine).clone();
        relabeled["metadata"]["labels"] = json!({"a": "b"});
        assert!(check(&status, Some(&mine), Some(&mine), &l).is_ok());
        assert!(
            message(check(&status, Some(&relabeled), Some(&mine), &l))
                .ends_with("node \"n1\" cannot update labels through pod status")
        );
        let status = attrs(Operation::Update, "", "pods", "status", "ns", "theirs");
        assert!(
            message(check(&status, Some(&theirs), Some(&theirs), &l)).ends_with(
                "node \"n1\" can only update pod status for pods with spec.nodeName set to itself"
            )
        );
        let exec = attrs(Operation::Create, "", "pods", "binding", "ns", "mine");
        assert!(message(check(&exec, Some(&json!({})), None, &l)).ends_with(
            "unexpected pod subresource \"binding\", only 'status' and 'eviction' are allowed"
        ));
    }

    #[test]
    fn nodes_only_self_without_taint_or_reserved_label_changes() {
        let l = lookup();
        let n = |labels: Value, taints: Value| json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}});
        let other = attrs(Operation::Update, "", "nodes", "", "", "n2");
        assert_eq!(
            message(check(
                &other,
                Some(&json!({"metadata": {"name": "n2"}})),
                None,
                &l
            )),
            "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""
        );
        let create = attrs(Operation::Create, "", "nodes", "", "", "n1");
        let allowed = json!({"kubernetes.io/hostname": "n1", "node.kubernetes.io/instance-type": "x",
                             "kubelet.kubernetes.io/a": "1", "sub.node.kubernetes.io/b": "2",
                             "example.com/free": "yes"});
        assert!(check(&create, Some(&n(allowed.clone(), json!(null))), None, &l).is_ok());
        let steering = json!({"node-restriction.kubernetes.io/trusted": "true",
                              "node-role.kubernetes.io/master": "", "example.k8s.io/x": "1"});
        assert_eq!(
            message(check(&create, Some(&n(steering, json!(null))), None, &l)),
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to set the following labels: example.k8s.io/x, node-restriction.kubernetes.io/trusted, node-role.kubernetes.io/master"
        );

        let update = attrs(Operation::Update, "", "nodes", "", "", "n1");
        let old = n(json!({"node-role.kubernetes.io/worker": ""}), json!([]));
        let kept = n(
            json!({"node-role.kubernetes.io/worker": "", "example.com/x": "1"}),
            json!(null),
        );
        assert!(
            check(&update, Some(&kept), Some(&old), &l).is_ok(),
            "empty and null taints alike"
        );
        let dropped = n(json!({}), json!([]));
        assert_eq!(
            message(check(&update, Some(&dropped), Some(&old), &l)),
            "nodes \"n1\" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/worker"
        );
        let untainted = n(json!({"node-role.kubernetes.io/worker": ""}), json!([]));
        let tainted = n(
            json!({"node-role.kubernetes.io/worker": ""}),
            json!([{"key": "k", "effect": "NoSchedule"}]),
        );
        assert!(
            message(check(&update, Some(&untainted), Some(&tainted), &l))
                .ends_with("node \"n1\" is not allowed to modify taints")
        );
    }

    #[test]
    fn tokens_only_bound_to_own_pods() {
        let l = lookup();
        let a = attrs(
            Operation::Create,
            "",
            "serviceaccounts",
            "token",
            "ns",
            "default",
        );
        let tr = |name: &str, uid: &str| json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}}});
        assert!(check(&a, Some(&tr("mine", "u1")), None, &l).is_ok());
        assert!(
            message(check(&a, Some(&tr("theirs", "u2")), None, &l))
                .ends_with("node requested token bound to a pod scheduled on a different node")
        );
        assert!(message(check(&a, Some(&tr("mine", "old")), None, &l)).ends_with(
            "the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"
        ));
        assert!(
            message(check(&a, Some(&tr("mine", "")), None, &l))
                .ends_with("node requested token with a pod binding without a uid")
        );
        assert_eq!(
            message(check(&a, Some(&json!({"spec": {}})), None, &l)),
            "serviceaccounts \"default\" is forbidden: node requested token not bound to a pod"
        );
    }

    #[test]
    fn leases_csinodes_and_slices_by_name() {
        let l = lookup();
        let create = attrs(
            Operation::Create,
            "coordination.k8s.io",
            "leases",
            "",
            "kube-node-lease",
            "",
        );
        let lease =
            |name: &str| json!({"metadata": {"name": name, "namespace": "kube-node-lease"}});
        assert!(check(&create, Some(&lease("n1")), None, &l).is_ok());
        assert_eq!(
            message(check(&create, Some(&lease("n2")), None, &l)),
            "leases.coordination.k8s.io \"n2\" is forbidden: can only access node lease with the same name as the requesting node"
        );
        let elsewhere = attrs(
            Operation::Update,
            "coordination.k8s.io",
            "leases",
            "",
            "default",
            "n1",
        );
        assert!(
            message(check(&elsewhere, Some(&lease("n1")), None, &l))
                .ends_with("can only access leases in the \"kube-node-lease\" system namespace")
        );
        let csi = attrs(
            Operation::Delete,
            "storage.k8s.io",
            "csinodes",
            "",
            "",
            "n2",
        );
        assert!(
            message(check(&csi, None, Some(&json!({})), &l))
                .ends_with("can only access CSINode with the same name as the requesting node")
        );
        let slice = |node: &str| json!({"metadata": {"name": "s"}, "spec": {"nodeName": node}});
        let create = attrs(
            Operation::Create,
            "resource.k8s.io",
            "resourceslices",
            "",
            "",
            "s",
        );
        assert!(check(&create, Some(&slice("n1")), None, &l).is_ok());
        assert!(
            message(check(&create, Some(&slice("n2")), None, &l)).ends_with(
                "can only create ResourceSlice with the same NodeName as the requesting node"
            )
        );
        let delete = attrs(
            Operation::Delete,
            "resource.k8s.io",
            "resourceslices",
            "",
            "",
            "s",
        );
        assert!(
            message(check(&delete, None, Some(&slice("n2")), &l)).ends_with(
                "can only delete ResourceSlice with the same NodeName as the requesting node"
            )
        );
        let pvc = attrs(
            Operation::Update,
            "",
            "persistentvolumeclaims",
            "status",
            "ns",
            "c",
        );
        let old = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "status": {"phase": "Bound"}});
        let mut grown = old.clone();
        grown["metadata"]["resourceVersion"] = json!("2");
        grown["status"]["capacity"] = json!({"storage": "2Gi"});
        assert!(check(&pvc, Some(&grown), Some(&old), &l).is_ok());
        let mut relabeled = grown.clone();
        relabeled["metadata"]["labels"] = json!({"a": "b"});
        assert!(message(check(&pvc, Some(&relabeled), Some(&old), &l)).ends_with(
            "node \"n1\" is not allowed to update fields other than status.quantity and status.conditions: metadata.labels"
        ));
    }

    #[test]
    fn kubelet_csrs_only_for_own_name() {
        let l = lookup();
        let a = attrs(
            Operation::Create,
            "certificates.k8s.io",
            "certificatesigningrequests",
            "",
            "",
            "csr-1",
        );
        let csr = |cn: &str, signer: &str| {
            let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
            let mut params = rcgen::CertificateParams::default();
            params.distinguished_name = rcgen::DistinguishedName::new();
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
            let pem = params.serialize_request(&key).unwrap().pem().unwrap();
            json!({"metadata": {"name": "csr-1"}, "spec": {
                "signerName": signer,
                "request": base64::engine::general_purpose::STANDARD.encode(pem)
            }})
        };
        let serving = "kubernetes.io/kubelet-serving";
        assert!(check(&a, Some(&csr("system:node:n1", serving)), None, &l).is_ok());
        assert_eq!(
            message(check(&a, Some(&csr("system:node:n2", serving)), None, &l)),
            "certificatesigningrequests.certificates.k8s.io \"csr-1\" is forbidden: can only create a node CSR with CN=system:node:n1"
        );
        let client = "kubernetes.io/kube-apiserver-client-kubelet";
        assert!(check(&a, Some(&csr("system:node:n2", client)), None, &l).is_err());
        let other = "example.com/signer";
        assert!(check(&a, Some(&csr("anything", other)), None, &l).is_ok());
        let garbage = json!({"spec": {"signerName": serving, "request": "bm9wZQ=="}});
        assert!(
            message(check(&a, Some(&garbage), None, &l))
                .ends_with("unable to parse csr: PEM block type must be CERTIFICATE REQUEST")
        );
    }

    /// Through the plugin and the apiserver's own caches: deletes and the pod delete an
    /// eviction becomes are checked in the validating phase.
    #[tokio::test]
    async fn plugin_checks_deletes_and_evictions_against_the_caches() {
        use crate::test_support::{test_state, wait_cached};

        let test = test_state().await;
        let state = test.state.clone();
        let pods = state.store("", "v1", "pods").expect("pods");
        let theirs = pods
            .create(
                Some("default"),
                json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "theirs", "namespace": "default"},
                       "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "i"}]}}),
            )
            .await
            .expect("create");
        wait_cached(&state, "", "pods", Some("default"), "theirs").await;
        let plugin = NodeRestriction;
        let evict = attrs(
            Operation::Create,
            "",
            "pods",
            "eviction",
            "default",
            "theirs",
        );
        let err = plugin
            .validate(&evict, None, Some(&theirs), &state)
            .await
            .expect_err("another node's pod");
        assert!(
            err.message()
                .ends_with("node n1 can only evict pods with spec.nodeName set to itself")
        );
        let delete = attrs(Operation::Delete, "", "pods", "", "default", "theirs");
        assert!(
            plugin
                .validate(&delete, None, Some(&theirs), &state)
                .await
                .is_err()
        );
        let update = attrs(Operation::Update, "", "pods", "status", "default", "theirs");
        assert!(
            plugin
                .validate(&update, Some(&theirs), Some(&theirs), &state)
                .await
                .is_ok(),
            "updates are checked in the mutating phase"
        );
        let mut object = theirs.clone();
        assert!(
            plugin
                .admit(&update, &mut object, Some(&theirs), &state)
                .await
                .is_err()
        );
    }

    #[test]
    fn kubelet_label_rules() {
        assert!(is_kubelet_label("kubernetes.io/arch"));
        assert!(is_kubelet_label("x.node.kubernetes.io/y"));
        assert!(!is_kubelet_label("evilnode.kubernetes.io/y"));
        let modified: BTreeSet<&str> = [
            "foo.node-restriction.kubernetes.io/a",
            "kubernetes.io/hostname",
            "k8s.io/x",
            "example.com/x",
            "nokubernetes.io/x",
        ]
        .into();
        assert_eq!(
            forbidden_labels(&modified),
            ["foo.node-restriction.kubernetes.io/a", "k8s.io/x"].into()
        );
    }
}
