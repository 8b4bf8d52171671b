//! Role-based access control, as upstream's `plugin/pkg/auth/authorizer/rbac`: an authorizer
//! answering from an in-memory, atomically swapped snapshot of Roles, ClusterRoles and their
//! bindings; ClusterRole aggregation; the bootstrap policy and its start-up reconciliation
//! (`reconcile`); the watch that keeps the snapshot current (`sync`); the escalation and bind
//! checks on RBAC writes (`write_check`); and the rules a `SelfSubjectRulesReview` lists
//! (`rules_review`).
//!
//! RBAC only ever allows or has no opinion: a request no rule grants gets `NoOpinion`, so the
//! next authorizer in a union (or the 403) decides.

pub mod authorizer;
pub mod bootstrap;
pub mod escalation;
pub mod reconcile;
pub mod rule;
pub mod rules_review;
pub mod state;
pub mod sync;
pub mod write_check;

pub use authorizer::{
    RbacAuthorizer, Visit, applies_to, rules_for, service_account_username, visit_rules_for,
};
pub use bootstrap::{
    bootstrap_cluster_role_bindings, bootstrap_cluster_roles, bootstrap_role_bindings,
    bootstrap_roles,
};
pub use escalation::{
    breakdown_rule, compact_string, confirm_no_escalation, covers, uncovered_rules,
};
pub use reconcile::reconcile_bootstrap_policy;
pub use rule::{rule_allows, rules_allow};
pub use rules_review::rules_review_status;
pub use state::{RbacKind, RbacObject, RbacState, RbacStore};
pub use write_check::{authorize_rbac_write, is_guarded};
