//! The Node authorization mode (`--authorization-mode=Node`): kubelets, identified as
//! `system:node:<name>` in `system:nodes`, may read only the secrets, config maps, volumes and
//! claims of pods bound to their node, mint tokens only for those pods' service accounts,
//! and touch only their own Node, Lease and CSINode. Everything else is judged by the static
//! `system:node` rules. Writes whose legitimacy depends on the object's content (which node a
//! pod is bound to, a Node's labels) are left to the NodeRestriction admission plugin.

pub mod graph;

use api_types::fields::{Operator, Selector};
use api_types::k8s_openapi::api::rbac::v1::PolicyRule;
use std::sync::Arc;

use crate::auth::rbac::bootstrap::bootstrap_cluster_roles;
use crate::auth::rbac::rule::rules_allow;
use crate::http::auth::authorizer::{Attributes, Authorizer, Decision};
use crate::http::auth::user::UserInfo;
use crate::http::request_info::RequestInfo;
use crate::http::status::go_quote;
use crate::registry::lookup::ObjectLookup;
use graph::{Kind, related};

/// The group every kubelet credential carries.
pub const NODES_GROUP: &str = "system:nodes";
/// The prefix of a kubelet's user name; the rest is the node's name.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The namespace of node heartbeat leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node a user speaks for: `Some(name)` for `system:node:<name>` in `system:nodes` (the
/// name may be empty, which callers refuse), None for everyone else.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.in_group(NODES_GROUP).then_some(name)
}

/// The Node authorizer, answering from the apiserver's watch caches.
pub struct NodeAuthorizer {
    lookup: Arc<dyn ObjectLookup>,
    rules: Vec<PolicyRule>,
}

impl NodeAuthorizer {
    /// An authorizer that finds pods, volumes and attachments through `lookup`.
    pub fn new(lookup: Arc<dyn ObjectLookup>) -> Self {
        // The static rules are the bootstrap `system:node` role's, so the two cannot drift.
        let rules = bootstrap_cluster_roles()
            .into_iter()
            .find(|r| r.metadata.name.as_deref() == Some("system:node"))
            .and_then(|r| r.rules)
            .unwrap_or_default();
        NodeAuthorizer { lookup, rules }
    }

    /// The decision for `request` by `user`, given the request's field selector when the
    /// caller knows it. Without one, list and watch of pods fall back to the static rules
    /// (upstream before AuthorizeNodeWithSelectors) rather than refusing every kubelet.
    pub fn authorize_with_selector(
        &self,
        user: &UserInfo,
        r: &RequestInfo,
        field_selector: Option<&Selector>,
    ) -> Decision {
        let Some(node) = node_identity(user) else {
            return Decision::NoOpinion(String::new());
        };
        if node.is_empty() {
            return Decision::NoOpinion(format!("unknown node for user {}", go_quote(&user.name)));
        }
        if r.is_resource_request {
            let decided = match (r.api_group.as_str(), r.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, Kind::Secret, r)),
                ("", "configmaps") => Some(self.read_namespaced(node, Kind::ConfigMap, r)),
                ("", "persistentvolumeclaims") if r.subresource == "status" => {
                    Some(self.status_update(node, r))
                }
                ("", "persistentvolumeclaims") => {
                    Some(self.get(node, Kind::PersistentVolumeClaim, r))
                }
                ("", "persistentvolumes") => Some(self.get(node, Kind::PersistentVolume, r)),
                ("resource.k8s.io", "resourceclaims") => {
                    Some(self.get(node, Kind::ResourceClaim, r))
                }
                ("storage.k8s.io", "volumeattachments") => {
                    Some(self.get(node, Kind::VolumeAttachment, r))
                }
                ("", "serviceaccounts") => Some(self.create_token(node, r)),
                ("coordination.k8s.io", "leases") => Some(lease(node, r)),
                ("storage.k8s.io", "csinodes") => Some(csi_node(node, r)),
                ("resource.k8s.io", "resourceslices") => {
                    Some(self.resource_slice(node, r, field_selector))
                }
                ("", "nodes") => Some(node_object(node, r)),
                ("", "pods") => self.pod(node, r, field_selector),
                _ => None,
            };
            if let Some(d) = decided {
                return d;
            }
        }
        if rules_allow(r, &self.rules) {
            Decision::Allow
        } else {
            Decision::NoOpinion(String::new())
        }
    }

    fn related(&self, node: &str, kind: Kind, r: &RequestInfo) -> Decision {
        if r.name.is_empty() {
            return deny("No Object name found");
        }
        if related(self.lookup.as_ref(), node, kind, &r.namespace, &r.name) {
            Decision::Allow
        } else {
            Decision::NoOpinion(format!(
                "no relationship found between node '{node}' and this object"
            ))
        }
    }

    fn read_namespaced(&self, node: &str, kind: Kind, r: &RequestInfo) -> Decision {
        if !matches!(r.verb.as_str(), "get" | "list" | "watch") {
            return deny("can only read resources of this type");
        }
        if !r.subresource.is_empty() {
            return deny("cannot read subresource");
        }
        if r.namespace.is_empty() {
            return deny("can only read namespaced object of this type");
        }
        // A list or watch carries a name only through a metadata.name field selector, so a
        // node can watch one secret it may read but never a namespace's worth.
        self.related(node, kind, r)
    }

    fn get(&self, node: &str, kind: Kind, r: &RequestInfo) -> Decision {
        if r.verb != "get" {
            return deny("can only get individual resources of this type");
        }
        if !r.subresource.is_empty() {
            return deny("cannot get subresource");
        }
        self.related(node, kind, r)
    }

    fn status_update(&self, node: &str, r: &RequestInfo) -> Decision {
        if !matches!(r.verb.as_str(), "update" | "patch") {
            return deny("can only get/update/patch this type");
        }
        self.related(node, Kind::PersistentVolumeClaim, r)
    }

    fn create_token(&self, node: &str, r: &RequestInfo) -> Decision {
        if r.verb != "create" || r.name.is_empty() {
            return deny("can only create tokens for individual service accounts");
        }
        if r.subresource != "token" {
            return deny("can only create token subresource of serviceaccount");
        }
        self.related(node, Kind::ServiceAccount, r)
    }

    fn resource_slice(
        &self,
        node: &str,
        r: &RequestInfo,
        field_selector: Option<&Selector>,
    ) -> Decision {
        if !r.subresource.is_empty() {
            return deny("cannot authorize ResourceSlice subresources");
        }
        match r.verb.as_str() {
            // The new object's nodeName is checked by NodeRestriction.
            "create" => Decision::Allow,
            "get" | "update" | "patch" | "delete" => {
                if r.name.is_empty() {
                    return deny("No Object name found");
                }
                let mine = self
                    .lookup
                    .get("resource.k8s.io", "resourceslices", None, &r.name)
                    .is_some_and(|s| s["spec"]["nodeName"].as_str() == Some(node));
                if mine {
                    Decision::Allow
                } else {
                    Decision::NoOpinion(format!(
                        "no relationship found between node '{node}' and this object"
                    ))
                }
            }
            "watch" | "list" | "deletecollection" => {
                if selects(field_selector, "spec.nodeName", node) {
                    Decision::Allow
                } else {
                    deny(
                        "can only list/watch/deletecollection resourceslices with nodeName field selector",
                    )
                }
            }
            _ => deny(
                "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
            ),
        }
    }

    /// None when the static rules decide (list/watch without a known selector).
    fn pod(
        &self,
        node: &str,
        r: &RequestInfo,
        field_selector: Option<&Selector>,
    ) -> Option<Decision> {
        let decision = match (r.subresource.as_str(), r.verb.as_str()) {
            ("", "get") => self.get(node, Kind::Pod, r),
            ("", "list" | "watch") => {
                field_selector?;
                if selects(field_selector, "spec.nodeName", node) {
                    Decision::Allow
                } else if !r.name.is_empty() {
                    self.related(node, Kind::Pod, r)
                } else {
                    deny("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // Mirror pods, pod status and evictions: NodeRestriction limits them to pods bound
            // to the node.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                Decision::Allow
            }
            _ => Decision::NoOpinion(String::new()),
        };
        Some(decision)
    }
}

impl Authorizer for NodeAuthorizer {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        self.authorize_with_selector(
            attrs.user,
            attrs.request,
            attrs.request.field_selector.as_ref(),
        )
    }
}

fn deny(reason: &str) -> Decision {
    Decision::NoOpinion(reason.to_string())
}

/// Whether `selector` pins `field` to exactly `value`.
fn selects(selector: Option<&Selector>, field: &str, value: &str) -> bool {
    selector.is_some_and(|s| {
        s.requirements()
            .iter()
            .any(|t| t.field == field && t.operator == Operator::Equals && t.value == value)
    })
}

fn lease(node: &str, r: &RequestInfo) -> Decision {
    if !matches!(
        r.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return deny("can only get, create, update, patch, or delete a node lease");
    }
    if r.namespace != NODE_LEASE_NAMESPACE {
        return Decision::NoOpinion(format!(
            "can only access leases in the {} system namespace",
            go_quote(NODE_LEASE_NAMESPACE)
        ));
    }
    // A create names no object in its path; NodeRestriction checks the new lease's name.
    if r.verb != "create" && r.name != node {
        return deny("can only access node lease with the same name as the requesting node");
    }
    Decision::Allow
}

fn csi_node(node: &str, r: &RequestInfo) -> Decision {
    if !matches!(
        r.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return deny("can only get, create, update, patch, or delete a CSINode");
    }
    if !r.subresource.is_empty() {
        return deny("cannot authorize CSINode subresources");
    }
    if r.verb != "create" && r.name != node {
        return deny("can only access CSINode with the same name as the requesting node");
    }
    Decision::Allow
}

fn node_object(node: &str, r: &RequestInfo) -> Decision {
    match (r.subresource.as_str(), r.verb.as_str()) {
        // NodeRestriction limits writes to the node's own object.
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Decision::Allow,
        // By name rather than through pods, so a kubelet can look for its Node before
        // registering it.
        ("", "get" | "list" | "watch") => {
            if r.name == node {
                Decision::Allow
            } else if r.name.is_empty() {
                Decision::NoOpinion(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                Decision::NoOpinion(format!(
                    "node '{node}' cannot read '{}', only its own Node object",
                    r.name
                ))
            }
        }
        _ => Decision::NoOpinion(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::graph::fake::FakeLookup;
    use super::*;
    use serde_json::json;

    fn node_user(name: &str) -> UserInfo {
        UserInfo {
            name: format!("{NODE_USER_PREFIX}{name}"),
            groups: vec![NODES_GROUP.into(), "system:authenticated".into()],
            ..Default::default()
        }
    }

    fn req(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn authorizer() -> NodeAuthorizer {
        let lookup = FakeLookup::default()
            .with(
                "",
                "pods",
                json!({"metadata": {"name": "p1", "namespace": "ns"}, "spec": {
                    "nodeName": "n1", "serviceAccountName": "sa1",
                    "volumes": [{"name": "v", "configMap": {"name": "cm1"}},
                                {"name": "s", "secret": {"secretName": "s1"}}]}}),
            )
            .with(
                "",
                "pods",
                json!({"metadata": {"name": "p2", "namespace": "ns"}, "spec": {
                    "nodeName": "n2", "volumes": [{"name": "s", "secret": {"secretName": "s2"}}]}}),
            );
        NodeAuthorizer::new(Arc::new(lookup))
    }

    fn decide(a: &NodeAuthorizer, node: &str, r: RequestInfo) -> Decision {
        a.authorize(&Attributes {
            user: &node_user(node),
            request: &r,
        })
    }

    const NO_REL: &str = "no relationship found between node 'n1' and this object";

    #[test]
    fn identity_needs_both_prefix_and_group() {
        assert_eq!(node_identity(&node_user("n1")), Some("n1"));
        let mut no_group = node_user("n1");
        no_group.groups.clear();
        assert_eq!(node_identity(&no_group), None);
        let other = UserInfo {
            name: "alice".into(),
            groups: vec![NODES_GROUP.into()],
            ..Default::default()
        };
        assert_eq!(node_identity(&other), None);
        let a = authorizer();
        let r = req("get", "", "secrets", "", "ns", "s1");
        assert_eq!(
            a.authorize(&Attributes {
                user: &other,
                request: &r
            }),
            Decision::NoOpinion(String::new())
        );
        assert_eq!(
            decide(&a, "", r),
            Decision::NoOpinion("unknown node for user \"system:node:\"".into())
        );
    }

    #[test]
    fn secrets_and_configmaps_follow_the_graph() {
        let a = authorizer();
        assert_eq!(
            decide(&a, "n1", req("get", "", "secrets", "", "ns", "s1")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("watch", "", "configmaps", "", "ns", "cm1")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("get", "", "secrets", "", "ns", "s2")),
            Decision::NoOpinion(NO_REL.into())
        );
        assert_eq!(
            decide(&a, "n1", req("list", "", "secrets", "", "ns", "")),
            Decision::NoOpinion("No Object name found".into())
        );
        assert_eq!(
            decide(&a, "n1", req("list", "", "secrets", "", "", "")),
            Decision::NoOpinion("can only read namespaced object of this type".into())
        );
        assert_eq!(
            decide(&a, "n1", req("update", "", "secrets", "", "ns", "s1")),
            Decision::NoOpinion("can only read resources of this type".into())
        );
    }

    #[test]
    fn tokens_only_for_service_accounts_of_node_pods() {
        let a = authorizer();
        assert_eq!(
            decide(
                &a,
                "n1",
                req("create", "", "serviceaccounts", "token", "ns", "sa1")
            ),
            Decision::Allow
        );
        assert_eq!(
            decide(
                &a,
                "n1",
                req("create", "", "serviceaccounts", "token", "ns", "default")
            ),
            Decision::NoOpinion(NO_REL.into())
        );
        assert_eq!(
            decide(&a, "n1", req("get", "", "serviceaccounts", "", "ns", "sa1")),
            Decision::NoOpinion("can only create tokens for individual service accounts".into())
        );
    }

    #[test]
    fn leases_csinodes_and_nodes_are_by_name() {
        let a = authorizer();
        let l = |verb, ns, name| req(verb, "coordination.k8s.io", "leases", "", ns, name);
        assert_eq!(
            decide(&a, "n1", l("update", "kube-node-lease", "n1")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", l("create", "kube-node-lease", "")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", l("update", "kube-node-lease", "n2")),
            Decision::NoOpinion(
                "can only access node lease with the same name as the requesting node".into()
            )
        );
        assert_eq!(
            decide(&a, "n1", l("get", "default", "n1")),
            Decision::NoOpinion(
                "can only access leases in the \"kube-node-lease\" system namespace".into()
            )
        );
        assert_eq!(
            decide(
                &a,
                "n1",
                req("delete", "storage.k8s.io", "csinodes", "", "", "n2")
            ),
            Decision::NoOpinion(
                "can only access CSINode with the same name as the requesting node".into()
            )
        );
        assert_eq!(
            decide(&a, "n1", req("get", "", "nodes", "", "", "n1")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("get", "", "nodes", "", "", "n2")),
            Decision::NoOpinion("node 'n1' cannot read 'n2', only its own Node object".into())
        );
        assert_eq!(
            decide(&a, "n1", req("list", "", "nodes", "", "", "")),
            Decision::NoOpinion("node 'n1' cannot read all nodes, only its own Node object".into())
        );
        assert_eq!(
            decide(&a, "n1", req("patch", "", "nodes", "status", "", "n2")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("delete", "", "nodes", "", "", "n1")),
            Decision::NoOpinion(String::new())
        );
    }

    #[test]
    fn pods_by_binding_and_selector() {
        let a = authorizer();
        let u = node_user("n1");
        assert_eq!(
            decide(&a, "n1", req("get", "", "pods", "", "ns", "p1")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("get", "", "pods", "", "ns", "p2")),
            Decision::NoOpinion(NO_REL.into())
        );
        let list = req("list", "", "pods", "", "", "");
        let mine = Selector::parse("spec.nodeName=n1").unwrap();
        let other = Selector::parse("spec.nodeName=n2").unwrap();
        assert_eq!(
            a.authorize_with_selector(&u, &list, Some(&mine)),
            Decision::Allow
        );
        assert_eq!(
            a.authorize_with_selector(&u, &list, Some(&other)),
            Decision::NoOpinion(
                "can only list/watch pods with spec.nodeName field selector".into()
            )
        );
        assert_eq!(
            a.authorize_with_selector(&u, &list, None),
            Decision::Allow,
            "static rules"
        );
        assert_eq!(
            decide(&a, "n1", req("create", "", "pods", "eviction", "ns", "p2")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("create", "", "pods", "exec", "ns", "p1")),
            Decision::NoOpinion(String::new())
        );
    }

    #[test]
    fn other_resources_use_the_static_node_rules() {
        let a = authorizer();
        assert_eq!(
            decide(&a, "n1", req("list", "", "services", "", "", "")),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("create", "", "events", "", "ns", "")),
            Decision::Allow
        );
        assert_eq!(
            decide(
                &a,
                "n1",
                req(
                    "create",
                    "authentication.k8s.io",
                    "tokenreviews",
                    "",
                    "",
                    ""
                )
            ),
            Decision::Allow
        );
        assert_eq!(
            decide(&a, "n1", req("list", "apps", "deployments", "", "", "")),
            Decision::NoOpinion(String::new())
        );
        assert_eq!(
            decide(&a, "n1", req("delete", "", "services", "", "ns", "x")),
            Decision::NoOpinion(String::new())
        );
    }
}
