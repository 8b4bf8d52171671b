//! Admission, as upstream's `k8s.io/apiserver/pkg/admission`: after a write request is decoded
//! and before it is stored, an ordered chain of plugins may change the object (the mutating
//! phase, before defaulting and validation) and may refuse it (the validating phase, after the
//! registry's validation, right before the write). Both phases run for dry runs too.
//!
//! Plugins see the request's [`Attributes`] and consult other objects through the apiserver's
//! own state (watch caches and stores), as upstream's plugins read informers.

pub mod chain;
pub mod plugins;

pub use chain::{AdmissionConfig, Chain, RequestAdmission};

use crate::http::auth::user::UserInfo;
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use api_types::registry::ResourceInfo;
use async_trait::async_trait;
use serde_json::Value;

/// The kind of write, as upstream's `admission.Operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// The upper-case name AdmissionReview and webhook rules use.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What a write asks, as upstream's `admission.Attributes` (the objects travel separately).
#[derive(Debug, Clone)]
pub struct Attributes {
    pub operation: Operation,
    /// The resource written (group, version, plural, kind, scope).
    pub resource: &'static ResourceInfo,
    /// `status`, `binding`, `scale`, ...; empty for the main resource.
    pub subresource: String,
    /// The namespace of the request; empty for cluster-scoped resources.
    pub namespace: String,
    /// The object's name; empty on a create with `generateName` (upstream's too).
    pub name: String,
    /// Who asks.
    pub user: UserInfo,
    /// `dryRun=All`: plugins must not have side effects (a webhook without
    /// `sideEffects: None|NoneOnDryRun` refuses the request instead).
    pub dry_run: bool,
    /// What plugins want the client told (`Warning` response headers).
    pub warnings: Warnings,
}

/// Warnings collected while a request is admitted; clones share one list.
#[derive(Debug, Clone, Default)]
pub struct Warnings(std::sync::Arc<parking_lot::Mutex<Vec<String>>>);

impl Warnings {
    /// Adds a warning (once: a write retried after a conflict is admitted again).
    pub fn push(&self, warning: impl Into<String>) {
        let warning = warning.into();
        let mut list = self.0.lock();
        if !list.contains(&warning) {
            list.push(warning);
        }
    }

    /// The warnings so far.
    pub fn list(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

impl Attributes {
    /// Whether this is a write of `group`/`plural` (main resource or `subresource`).
    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.resource.group == group && self.resource.plural == plural
    }

    /// Whether this is a write of the main resource `group`/`plural` (no subresource).
    pub fn is_main(&self, group: &str, plural: &str) -> bool {
        self.is(group, plural) && self.subresource.is_empty()
    }
}

/// One admission plugin. A plugin implements either phase or both; the defaults admit.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The name `--enable-admission-plugins` uses, e.g. `ServiceAccount`.
    fn name(&self) -> &'static str;

    /// The mutating phase: may change `object` (the new object of a create or update) and
    /// may refuse. `old` is the stored object on update. Not called for deletes.
    async fn admit(
        &self,
        _attrs: &Attributes,
        _object: &mut Value,
        _old: Option<&Value>,
        _state: &ApiState,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// The validating phase: may only refuse. `object` is what would be stored (None on
    /// delete), `old` the stored object (update and delete).
    async fn validate(
        &self,
        _attrs: &Attributes,
        _object: Option<&Value>,
        _old: Option<&Value>,
        _state: &ApiState,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Upstream's 403 for an admission refusal:
/// `<resource>[.<group>] "<name>" is forbidden: <reason>`.
pub fn forbidden(attrs: &Attributes, name: &str, reason: &str) -> ApiError {
    ApiError::forbidden(attrs.resource.group, attrs.resource.plural, name, reason)
}

/// The name an admission error names: the request's, or the object's own (a create with
/// generateName has none until it is stored).
pub fn object_name<'a>(attrs: &'a Attributes, object: Option<&'a Value>) -> &'a str {
    if !attrs.name.is_empty() {
        return &attrs.name;
    }
    object
        .and_then(|o| o["metadata"]["name"].as_str())
        .unwrap_or_default()
}
