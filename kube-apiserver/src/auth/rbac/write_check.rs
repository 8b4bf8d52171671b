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
use crate::http::status::ApiError;

const GROUP: &str = "rbac.authorization.k8s.io";

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
            let rules = role_rules(&state, &role_ref, namespace).map_err(ApiError::bad_request)?;
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
