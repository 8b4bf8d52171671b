//! `RbacAuthorizer`: walks the bindings that apply to a user, as upstream's
//! `DefaultRuleResolver.VisitRulesFor`, and allows the request as soon as one rule grants it.

use std::sync::Arc;

use api_types::k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef, Subject};
use api_types::validation::go_quote;

use super::rule::rule_allows;
use super::state::{RbacState, RbacStore};
use crate::http::auth::authorizer::{Attributes, Authorizer, Decision};
use crate::http::auth::user::UserInfo;

/// The user name prefix of service accounts: `system:serviceaccount:<namespace>:<name>`.
pub const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";

/// Authorizes requests against the RBAC objects of a shared `RbacStore`.
#[derive(Debug, Clone, Default)]
pub struct RbacAuthorizer {
    store: Arc<RbacStore>,
}

impl RbacAuthorizer {
    /// An authorizer reading `store`, which an informer keeps current.
    pub fn new(store: Arc<RbacStore>) -> Self {
        RbacAuthorizer { store }
    }

    /// The store this authorizer reads.
    pub fn store(&self) -> &Arc<RbacStore> {
        &self.store
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        self.decide(attrs).0
    }
}

impl RbacAuthorizer {
    /// The decision with upstream's reason: `RBAC: allowed by <binding>` when allowed (what
    /// audit records), the role-resolution errors when not.
    pub fn decide(&self, attrs: &Attributes<'_>) -> (Decision, String) {
        let state = self.store.snapshot();
        let mut errors = Vec::new();
        let mut allowed_by = None;
        visit_rules_for(&state, attrs.user, &attrs.request.namespace, &mut |v| {
            match v {
                Visit::Rule(source, rule) if rule_allows(attrs.request, rule) => {
                    allowed_by = Some(source());
                    return false;
                }
                Visit::Rule(..) => {}
                Visit::Error(e) => errors.push(e),
            }
            true
        });
        if let Some(source) = allowed_by {
            return (Decision::Allow, format!("RBAC: allowed by {source}"));
        }
        let reason = if errors.is_empty() {
            String::new()
        } else {
            format!("RBAC: {}", aggregate(&errors))
        };
        (Decision::NoOpinion(reason.clone()), reason)
    }
}

/// What the rule walk hands its visitor: a rule with a lazily built description of where it
/// came from, or an error resolving a binding's role.
pub enum Visit<'a> {
    /// A rule and its source, e.g. `ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`.
    Rule(&'a dyn Fn() -> String, &'a PolicyRule),
    /// A binding whose role cannot be found or has an unknown kind.
    Error(String),
}

/// Calls `visitor` with every rule that applies to `user` in `namespace`: the rules of every
/// ClusterRoleBinding's ClusterRole, then (for a namespace) of the namespace's RoleBindings'
/// Roles or ClusterRoles. Stops when `visitor` returns false.
pub fn visit_rules_for(
    state: &RbacState,
    user: &UserInfo,
    namespace: &str,
    visitor: &mut dyn FnMut(Visit<'_>) -> bool,
) {
    for binding in state.cluster_role_bindings() {
        let subjects = binding.subjects.as_deref().unwrap_or_default();
        let Some(subject) = subjects.iter().find(|s| applies_to(user, s, "")) else {
            continue;
        };
        match role_rules(state, &binding.role_ref, "") {
            Err(e) => {
                if !visitor(Visit::Error(e)) {
                    return;
                }
            }
            Ok(rules) => {
                let name = binding.metadata.name.clone().unwrap_or_default();
                let describe = || {
                    format!(
                        "ClusterRoleBinding {} of {} {} to {}",
                        go_quote(&name),
                        binding.role_ref.kind,
                        go_quote(&binding.role_ref.name),
                        describe_subject(subject, "")
                    )
                };
                for rule in rules {
                    if !visitor(Visit::Rule(&describe, rule)) {
                        return;
                    }
                }
            }
        }
    }
    if namespace.is_empty() {
        return;
    }
    for binding in state.role_bindings(namespace) {
        let subjects = binding.subjects.as_deref().unwrap_or_default();
        let Some(subject) = subjects.iter().find(|s| applies_to(user, s, namespace)) else {
            continue;
        };
        match role_rules(state, &binding.role_ref, namespace) {
            Err(e) => {
                if !visitor(Visit::Error(e)) {
                    return;
                }
            }
            Ok(rules) => {
                let name = binding.metadata.name.clone().unwrap_or_default();
                let describe = || {
                    format!(
                        "RoleBinding {} of {} {} to {}",
                        go_quote(&format!("{name}/{namespace}")),
                        binding.role_ref.kind,
                        go_quote(&binding.role_ref.name),
                        describe_subject(subject, namespace)
                    )
                };
                for rule in rules {
                    if !visitor(Visit::Rule(&describe, rule)) {
                        return;
                    }
                }
            }
        }
    }
}

/// Every rule that applies to `user` in `namespace`, with the errors met on the way (upstream's
/// `RulesFor`, the owner's rules for the escalation check and `SelfSubjectRulesReview`).
pub fn rules_for(
    state: &RbacState,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    visit_rules_for(state, user, namespace, &mut |v| {
        match v {
            Visit::Rule(_, r) => rules.push(r.clone()),
            Visit::Error(e) => errors.push(e),
        }
        true
    });
    (rules, errors)
}

/// The rules a role reference grants; a RoleBinding's `Role` is looked up in its namespace.
/// The error is upstream's, e.g. `clusterrole.rbac.authorization.k8s.io "x" not found`.
pub fn role_rules<'a>(
    state: &'a RbacState,
    role_ref: &RoleRef,
    namespace: &str,
) -> Result<&'a [PolicyRule], String> {
    match role_ref.kind.as_str() {
        "Role" => state
            .role(namespace, &role_ref.name)
            .map(|r| r.rules.as_deref().unwrap_or_default())
            .ok_or_else(|| {
                format!(
                    "role.rbac.authorization.k8s.io {} not found",
                    go_quote(&role_ref.name)
                )
            }),
        "ClusterRole" => state.cluster_role_rules(&role_ref.name).ok_or_else(|| {
            format!(
                "clusterrole.rbac.authorization.k8s.io {} not found",
                go_quote(&role_ref.name)
            )
        }),
        other => Err(format!(
            "unsupported role reference kind: {}",
            go_quote(other)
        )),
    }
}

/// Whether a binding subject names `user`. A ServiceAccount subject without a namespace means
/// the binding's own namespace (never matching from a ClusterRoleBinding).
pub fn applies_to(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let sa_namespace = match subject.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => ns,
                _ => namespace,
            };
            // Compared piecewise: this runs for every binding of every request.
            !sa_namespace.is_empty()
                && user
                    .name
                    .strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)
                    .and_then(|rest| rest.strip_prefix(sa_namespace))
                    .and_then(|rest| rest.strip_prefix(':'))
                    .is_some_and(|name| name == subject.name)
        }
        _ => false,
    }
}

/// The user name a service account authenticates as.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}")
}

fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    if s.kind == "ServiceAccount" {
        let ns = match s.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => binding_namespace,
        };
        format!("{} {}", s.kind, go_quote(&format!("{}/{ns}", s.name)))
    } else {
        format!("{} {}", s.kind, go_quote(&s.name))
    }
}

/// Upstream's error aggregate: one message alone, several as `[a, b]` (duplicates once).
pub fn aggregate(errors: &[String]) -> String {
    let mut unique: Vec<&String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if unique.len() == 1 {
        unique[0].clone()
    } else {
        let joined: Vec<&str> = unique.iter().map(|s| s.as_str()).collect();
        format!("[{}]", joined.join(", "))
    }
}
