//! Role-based access control, as upstream's `plugin/pkg/auth/authorizer/rbac`: an authorizer
//! answering from an in-memory, atomically swapped snapshot of Roles, ClusterRoles and their
//! bindings; ClusterRole aggregation; the bootstrap policy; and the escalation check.
//!
//! RBAC only ever allows or has no opinion: a request no rule grants gets `NoOpinion`, so the
//! next authorizer in a union (or the 403) decides.

pub mod authorizer;
pub mod bootstrap;
pub mod escalation;
pub mod rule;
pub mod state;

pub use authorizer::{
    RbacAuthorizer, Visit, applies_to, rules_for, service_account_username, visit_rules_for,
};
pub use bootstrap::{bootstrap_cluster_role_bindings, bootstrap_cluster_roles};
pub use escalation::{
    breakdown_rule, compact_string, confirm_no_escalation, covers, uncovered_rules,
};
pub use rule::{rule_allows, rules_allow};
pub use state::{RbacObject, RbacState, RbacStore};
