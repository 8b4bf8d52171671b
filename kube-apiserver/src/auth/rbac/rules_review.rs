//! The RBAC part of a `SelfSubjectRulesReview` (`kubectl auth can-i --list`), as upstream's
//! `RBACAuthorizer.RulesFor`: every rule of the ClusterRoleBindings and the namespace's
//! RoleBindings that name the user, split into resource and non-resource rules as stored.

use api_types::k8s_openapi::api::authorization::v1::{
    NonResourceRule, ResourceRule, SubjectRulesReviewStatus,
};
use serde_json::Value;

use super::authorizer::{aggregate, rules_for};
use super::state::RbacStore;
use crate::http::auth::user::UserInfo;

/// The `status` of a SelfSubjectRulesReview for `user` in `namespace`. Members of
/// `system:masters` see the rules of what that group is bound to, nothing more: the
/// privileged-group shortcut of the authorizer chain lists no rules upstream either.
pub fn rules_review_status(rbac: &RbacStore, user: &UserInfo, namespace: &str) -> Value {
    let state = rbac.snapshot();
    let (rules, errors) = rules_for(&state, user, namespace);
    // Upstream's JSON drops empty lists (`omitempty`), so an empty list is left out.
    let some = |v: &Option<Vec<String>>| v.clone().filter(|v| !v.is_empty());
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in &rules {
        // A rule with both resources and URLs (rejected by validation, yet possible in old
        // data) counts as both, as upstream lists it.
        if rule.resources.as_ref().is_some_and(|r| !r.is_empty()) {
            resource_rules.push(ResourceRule {
                verbs: rule.verbs.clone(),
                api_groups: some(&rule.api_groups),
                resources: some(&rule.resources),
                resource_names: some(&rule.resource_names),
            });
        }
        if rule
            .non_resource_urls
            .as_ref()
            .is_some_and(|u| !u.is_empty())
        {
            non_resource_rules.push(NonResourceRule {
                verbs: rule.verbs.clone(),
                non_resource_urls: some(&rule.non_resource_urls),
            });
        }
    }
    let status = SubjectRulesReviewStatus {
        resource_rules,
        non_resource_rules,
        incomplete: false,
        evaluation_error: (!errors.is_empty()).then(|| aggregate(&errors)),
    };
    serde_json::to_value(status).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use api_types::k8s_openapi::api::rbac::v1::{
        ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
    };
    use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    use super::*;
    use crate::auth::rbac::bootstrap::{bootstrap_cluster_role_bindings, bootstrap_cluster_roles};
    use crate::auth::rbac::state::RbacObject;

    const GROUP: &str = "rbac.authorization.k8s.io";

    fn store() -> RbacStore {
        let mut objects: Vec<RbacObject> = bootstrap_cluster_roles()
            .into_iter()
            .map(RbacObject::ClusterRole)
            .chain(
                bootstrap_cluster_role_bindings()
                    .into_iter()
                    .map(RbacObject::ClusterRoleBinding),
            )
            .collect();
        let meta = |ns: Option<&str>, name: &str| ObjectMeta {
            name: Some(name.to_string()),
            namespace: ns.map(str::to_string),
            ..Default::default()
        };
        objects.push(RbacObject::Role(Role {
            metadata: meta(Some("ns1"), "cm"),
            rules: Some(vec![PolicyRule {
                verbs: vec!["get".into()],
                api_groups: Some(vec!["".into()]),
                resources: Some(vec!["configmaps".into()]),
                resource_names: Some(vec!["one".into()]),
                non_resource_urls: None,
            }]),
        }));
        objects.push(RbacObject::RoleBinding(RoleBinding {
            metadata: meta(Some("ns1"), "cm"),
            role_ref: RoleRef {
                api_group: GROUP.into(),
                kind: "Role".into(),
                name: "cm".into(),
            },
            subjects: Some(vec![Subject {
                api_group: Some(GROUP.into()),
                kind: "User".into(),
                name: "jane".into(),
                namespace: None,
            }]),
        }));
        // A binding to a role that does not exist surfaces as the evaluation error.
        objects.push(RbacObject::ClusterRoleBinding(ClusterRoleBinding {
            metadata: meta(None, "dangling"),
            role_ref: RoleRef {
                api_group: GROUP.into(),
                kind: "ClusterRole".into(),
                name: "gone".into(),
            },
            subjects: Some(vec![Subject {
                api_group: Some(GROUP.into()),
                kind: "Group".into(),
                name: "dangling".into(),
                namespace: None,
            }]),
        }));
        objects.push(RbacObject::ClusterRole(ClusterRole {
            metadata: meta(None, "unused"),
            ..Default::default()
        }));
        RbacStore::new(objects)
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn lists_cluster_and_namespace_rules() {
        let store = store();
        let jane = user("jane", &["system:authenticated"]);
        let status = rules_review_status(&store, &jane, "ns1");
        let discovery_urls = json!([
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/livez",
            "/openapi",
            "/openapi/*",
            "/readyz",
            "/version",
            "/version/"
        ]);
        let public_urls = json!(["/healthz", "/livez", "/readyz", "/version", "/version/"]);
        // ClusterRoleBindings by name (system:basic-user, system:discovery,
        // system:public-info-viewer), then the namespace's RoleBindings.
        assert_eq!(
            status,
            json!({
                "resourceRules": [
                    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                     "resources": ["selfsubjectreviews"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                     "resourceNames": ["one"]},
                ],
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": discovery_urls},
                    {"verbs": ["get"], "nonResourceURLs": public_urls},
                ],
                "incomplete": false,
            })
        );
        // Another namespace: only the cluster-wide rules.
        let other = rules_review_status(&store, &jane, "ns2");
        assert_eq!(other["resourceRules"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn masters_get_cluster_admin_rules_and_errors_are_reported() {
        let store = store();
        let root = user(
            "root",
            &["system:masters", "dangling", "system:authenticated"],
        );
        let status = rules_review_status(&store, &root, "default");
        let resource_rules = status["resourceRules"].as_array().unwrap();
        assert_eq!(
            resource_rules[0],
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
        );
        assert_eq!(
            status["nonResourceRules"][0],
            json!({"verbs": ["*"], "nonResourceURLs": ["*"]})
        );
        assert_eq!(
            status["evaluationError"],
            "clusterrole.rbac.authorization.k8s.io \"gone\" not found"
        );
        assert_eq!(status["incomplete"], false);
        // An anonymous user sees only the public paths.
        let anon = rules_review_status(&store, &UserInfo::anonymous(), "default");
        assert_eq!(anon["resourceRules"], json!([]));
        assert_eq!(anon["nonResourceRules"].as_array().unwrap().len(), 1);
    }
}
