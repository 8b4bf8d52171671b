//! The privilege-escalation guard on RBAC writes, as upstream's `policybased` REST storage of
//! roles, clusterroles and their bindings: a user may only grant what they hold, unless they
//! are allowed to `escalate` (for roles) or `bind` (for bindings) explicitly, or are in
//! `system:masters`.

use api_types::k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role, RoleRef};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::authorizer::role_rules;
use super::escalation::confirm_no_escalation;
use super::state::RbacStore;
use crate::http::auth::authorizer::{Attributes, Authorizer, Decision};
use crate::http::auth::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::http::request_info::RequestInfo;
use crate::http::status::{ApiError, go_quote};

const GROUP: &str = "rbac.authorization.k8s.io";

/// Whether writes of `group`/`plural` go through [`authorize_rbac_write`].
pub fn is_guarded(group: &str, plural: &str) -> bool {
    group == GROUP
        && matches!(
            plural,
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
}

/// Whether `user` may create or update `object`, a Role, ClusterRole, RoleBinding or
/// ClusterRoleBinding as `plural` says, in `namespace` (empty for the cluster-scoped two).
/// Other resources pass. The error is upstream's 403 (or its 400 when a binding's role cannot
/// be resolved).
pub fn authorize_rbac_write(
    authorizer: &dyn Authorizer,
    rbac: &RbacStore,
    user: &UserInfo,
    plural: &str,
    namespace: &str,
    object: &Value,
) -> Result<(), ApiError> {
    // The apiserver's own loopback client is in this group, so it is never held back here.
    if user.in_group(SYSTEM_PRIVILEGED_GROUP) {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let forbidden = |detail: &str| ApiError::forbidden(GROUP, plural, name, detail);
    let state = rbac.snapshot();
    match plural {
        "roles" | "clusterroles" => {
            if allowed(authorizer, user, "escalate", plural, name, namespace) {
                return Ok(());
            }
            let (rules, aggregated) = if plural == "roles" {
                let role: Role = decode(object)?;
                (role.rules.unwrap_or_default(), false)
            } else {
                let role: ClusterRole = decode(object)?;
                (
                    role.rules.unwrap_or_default(),
                    role.aggregation_rule.is_some(),
                )
            };
            confirm_no_escalation(&state, user, namespace, &rules).map_err(|m| forbidden(&m))?;
            // An aggregation rule can gather any rule, so it takes holding every permission.
            if aggregated
                && confirm_no_escalation(&state, user, namespace, &full_authority()).is_err()
            {
                return Err(forbidden(
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
            Ok(())
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref: RoleRef = serde_json::from_value(object["roleRef"].clone())
                .map_err(|e| ApiError::bad_request(format!("invalid roleRef: {e}")))?;
            let resource = match role_ref.kind.as_str() {
                "ClusterRole" => Some("clusterroles"),
                "Role" => Some("roles"),
                _ => None,
            };
            // Checked in the binding's namespace, so `bind` can be delegated per namespace.
            if let Some(resource) = resource
                && allowed_in_group(
                    authorizer,
                    user,
                    "bind",
                    &role_ref.api_group,
                    resource,
                    &role_ref.name,
                    namespace,
                )
            {
                return Ok(());
            }
            // The write path reads roles from storage, so a missing one is storage's plural
            // not-found, where the authorizer's informer path says the singular.
            let rules = role_rules(&state, &role_ref, namespace).map_err(|e| match resource {
                Some(resource) => ApiError::bad_request(format!(
                    "{resource}.{GROUP} {} not found",
                    go_quote(&role_ref.name)
                )),
                None => ApiError::bad_request(e),
            })?;
            confirm_no_escalation(&state, user, namespace, rules).map_err(|m| forbidden(&m))
        }
        _ => Ok(()),
    }
}

fn decode<T: DeserializeOwned>(object: &Value) -> Result<T, ApiError> {
    serde_json::from_value(object.clone()).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Every permission: what `cluster-admin` grants.
fn full_authority() -> Vec<PolicyRule> {
    let all = || Some(vec!["*".to_string()]);
    vec![
        PolicyRule {
            verbs: vec!["*".to_string()],
            api_groups: all(),
            resources: all(),
            ..Default::default()
        },
        PolicyRule {
            verbs: vec!["*".to_string()],
            non_resource_urls: all(),
            ..Default::default()
        },
    ]
}

fn allowed(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    verb: &str,
    resource: &str,
    name: &str,
    namespace: &str,
) -> bool {
    allowed_in_group(authorizer, user, verb, GROUP, resource, name, namespace)
}

fn allowed_in_group(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    verb: &str,
    group: &str,
    resource: &str,
    name: &str,
    namespace: &str,
) -> bool {
    let request = RequestInfo {
        is_resource_request: true,
        verb: verb.to_string(),
        api_group: group.to_string(),
        api_version: "*".to_string(),
        resource: resource.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        ..Default::default()
    };
    authorizer.authorize(&Attributes {
        user,
        request: &request,
    }) == Decision::Allow
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use api_types::k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding, Subject};
    use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    use super::*;
    use crate::auth::rbac::authorizer::RbacAuthorizer;
    use crate::auth::rbac::bootstrap::{bootstrap_cluster_role_bindings, bootstrap_cluster_roles};
    use crate::auth::rbac::state::RbacObject;
    use crate::http::auth::authorizer::with_privileged_groups;

    fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: namespace.map(str::to_string),
            ..Default::default()
        }
    }

    fn role_ref(kind: &str, name: &str) -> RoleRef {
        RoleRef {
            api_group: GROUP.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
        }
    }

    fn user_subject(name: &str) -> Subject {
        Subject {
            api_group: Some(GROUP.to_string()),
            kind: "User".to_string(),
            name: name.to_string(),
            namespace: None,
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    /// The bootstrap policy; bob can `edit` in ns1; carol may bind `cluster-admin` anywhere;
    /// dave may escalate roles in ns1.
    fn store() -> Arc<RbacStore> {
        let mut objects: Vec<RbacObject> = bootstrap_cluster_roles()
            .into_iter()
            .map(RbacObject::ClusterRole)
            .chain(
                bootstrap_cluster_role_bindings()
                    .into_iter()
                    .map(RbacObject::ClusterRoleBinding),
            )
            .collect();
        objects.push(RbacObject::RoleBinding(RoleBinding {
            metadata: meta(Some("ns1"), "bob-edit"),
            role_ref: role_ref("ClusterRole", "edit"),
            subjects: Some(vec![user_subject("bob")]),
        }));
        let privileged = |name: &str, verb: &str, resource: &str, names: Option<Vec<String>>| {
            RbacObject::ClusterRole(ClusterRole {
                metadata: meta(None, name),
                rules: Some(vec![PolicyRule {
                    verbs: vec![verb.to_string()],
                    api_groups: Some(vec![GROUP.to_string()]),
                    resources: Some(vec![resource.to_string()]),
                    resource_names: names,
                    non_resource_urls: None,
                }]),
                aggregation_rule: None,
            })
        };
        objects.push(privileged(
            "bind-cluster-admin",
            "bind",
            "clusterroles",
            Some(vec!["cluster-admin".to_string()]),
        ));
        objects.push(RbacObject::ClusterRoleBinding(ClusterRoleBinding {
            metadata: meta(None, "carol"),
            role_ref: role_ref("ClusterRole", "bind-cluster-admin"),
            subjects: Some(vec![user_subject("carol")]),
        }));
        objects.push(privileged("escalate-roles", "escalate", "roles", None));
        objects.push(RbacObject::RoleBinding(RoleBinding {
            metadata: meta(Some("ns1"), "dave"),
            role_ref: role_ref("ClusterRole", "escalate-roles"),
            subjects: Some(vec![user_subject("dave")]),
        }));
        Arc::new(RbacStore::new(objects))
    }

    fn binding_to(role: &str) -> Value {
        json!({
            "metadata": {"name": "x", "namespace": "ns1"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "eve"}],
        })
    }

    fn role_granting(verbs: &[&str], resource: &str) -> Value {
        json!({
            "metadata": {"name": "r", "namespace": "ns1"},
            "rules": [{"apiGroups": [GROUP], "resources": [resource], "verbs": verbs}],
        })
    }

    fn check(
        store: &Arc<RbacStore>,
        user: &UserInfo,
        plural: &str,
        object: &Value,
    ) -> Result<(), ApiError> {
        let authorizer = with_privileged_groups(RbacAuthorizer::new(store.clone()));
        authorize_rbac_write(&authorizer, store, user, plural, "ns1", object)
    }

    #[test]
    fn an_editor_cannot_bind_cluster_admin() {
        let store = store();
        let bob = user("bob", &["system:authenticated"]);
        let err = check(&store, &bob, "rolebindings", &binding_to("cluster-admin")).unwrap_err();
        assert_eq!(err.code().as_u16(), 403);
        assert_eq!(err.reason(), "Forbidden");
        assert_eq!(
            err.message(),
            "rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"bob\" \
             (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not \
             currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n\
             {NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
        );
        // What bob holds he may hand on.
        check(&store, &bob, "rolebindings", &binding_to("view")).unwrap();
        check(&store, &bob, "rolebindings", &binding_to("edit")).unwrap();
    }

    #[test]
    fn bind_permission_allows_exactly_the_named_role() {
        let store = store();
        let carol = user("carol", &["system:authenticated"]);
        check(&store, &carol, "rolebindings", &binding_to("cluster-admin")).unwrap();
        let mut cluster_binding = binding_to("cluster-admin");
        cluster_binding["metadata"] = json!({"name": "x"});
        let authorizer = with_privileged_groups(RbacAuthorizer::new(store.clone()));
        authorize_rbac_write(
            &authorizer,
            &store,
            &carol,
            "clusterrolebindings",
            "",
            &cluster_binding,
        )
        .unwrap();
        let err = check(&store, &carol, "rolebindings", &binding_to("admin")).unwrap_err();
        assert_eq!(err.code().as_u16(), 403);
    }

    #[test]
    fn system_masters_may_write_anything() {
        // Not even an RBAC authorizer: the group alone is enough.
        let store = Arc::new(RbacStore::default());
        let root = user("root", &["system:masters", "system:authenticated"]);
        let authorizer = RbacAuthorizer::new(store.clone());
        authorize_rbac_write(
            &authorizer,
            &store,
            &root,
            "rolebindings",
            "ns1",
            &binding_to("cluster-admin"),
        )
        .unwrap();
        authorize_rbac_write(
            &authorizer,
            &store,
            &root,
            "roles",
            "ns1",
            &role_granting(&["*"], "*"),
        )
        .unwrap();
    }

    #[test]
    fn roles_need_the_rules_held_or_escalate() {
        let store = store();
        let bob = user("bob", &["system:authenticated"]);
        // edit holds pods reads and writes in ns1.
        let pods = json!({
            "metadata": {"name": "r", "namespace": "ns1"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]}],
        });
        check(&store, &bob, "roles", &pods).unwrap();
        let err = check(
            &store,
            &bob,
            "roles",
            &role_granting(&["get", "list"], "roles"),
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\" \
             (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not \
             currently held:\n{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"roles\"], \
             Verbs:[\"get\" \"list\"]}"
        );
        let dave = user("dave", &["system:authenticated"]);
        check(&store, &dave, "roles", &role_granting(&["*"], "*")).unwrap();
    }

    #[test]
    fn aggregation_rules_need_full_authority() {
        let store = store();
        let bob = user("bob", &["system:authenticated"]);
        let aggregated = json!({
            "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]},
        });
        let authorizer = with_privileged_groups(RbacAuthorizer::new(store.clone()));
        let err = authorize_rbac_write(&authorizer, &store, &bob, "clusterroles", "", &aggregated)
            .unwrap_err();
        assert_eq!(
            err.message(),
            "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have \
             cluster-admin privileges to use the aggregationRule"
        );
    }

    #[test]
    fn guarded_resources() {
        assert!(is_guarded(GROUP, "clusterrolebindings"));
        assert!(!is_guarded(GROUP, "clusterroles/status"));
        assert!(!is_guarded("", "roles"));
    }

    #[test]
    fn a_missing_role_is_a_bad_request() {
        let store = store();
        let bob = user("bob", &["system:authenticated"]);
        let err = check(&store, &bob, "rolebindings", &binding_to("nope")).unwrap_err();
        assert_eq!(err.code().as_u16(), 400);
        assert_eq!(
            err.message(),
            "clusterroles.rbac.authorization.k8s.io \"nope\" not found"
        );
    }
}
