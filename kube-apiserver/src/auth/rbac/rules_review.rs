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
