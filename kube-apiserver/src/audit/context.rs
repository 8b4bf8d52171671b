//! What the layers of the request path hand the audit layers through request and response
//! extensions: the audit ID, annotations added while serving (authorization's decision), and
//! the user before impersonation.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::http::auth::user::UserInfo;

/// Authorization's decision annotation (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// Authorization's reason annotation.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// A request's audit ID (the client's `Audit-ID` header or a new UUID) and when it arrived; a
/// request extension set by the outer audit layer on every request.
#[derive(Debug, Clone)]
pub struct AuditId {
    /// The ID, echoed in the `Audit-ID` response header.
    pub id: Arc<str>,
    /// When the request arrived.
    pub received: jiff::Timestamp,
}

/// Annotations of the request's audit event. A request extension present only on requests
/// that are audited, so adding to it costs nothing otherwise.
#[derive(Debug, Clone, Default)]
pub struct AuditAnnotations(Arc<Mutex<BTreeMap<String, String>>>);

impl AuditAnnotations {
    /// Adds (or replaces) an annotation.
    pub fn add(&self, key: &str, value: &str) {
        self.0.lock().insert(key.to_string(), value.to_string());
    }

    /// The annotations so far.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        self.0.lock().clone()
    }
}

/// Adds an annotation to the request's audit event, if the request is audited.
pub fn add_annotation(extensions: &http::Extensions, key: &str, value: &str) {
    if let Some(annotations) = extensions.get::<AuditAnnotations>() {
        annotations.add(key, value);
    }
}

/// Records authorization's decision as upstream's annotations.
pub fn record_authorization(extensions: &http::Extensions, allowed: bool, reason: &str) {
    if let Some(annotations) = extensions.get::<AuditAnnotations>() {
        annotations.add(
            DECISION_ANNOTATION,
            if allowed { "allow" } else { "forbid" },
        );
        annotations.add(REASON_ANNOTATION, reason);
    }
}

/// The user who authenticated, when the request impersonates another: a request extension
/// beside the acting [`UserInfo`], or a response extension on a refused impersonation, so the
/// audit layers record both users as upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedUser(pub UserInfo);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_only_on_audited_requests() {
        let mut ext = http::Extensions::new();
        record_authorization(&ext, true, "");
        assert!(ext.get::<AuditAnnotations>().is_none());
        let annotations = AuditAnnotations::default();
        ext.insert(annotations.clone());
        record_authorization(&ext, false, "no rule");
        add_annotation(&ext, "example.com/x", "y");
        let got = annotations.snapshot();
        assert_eq!(got[DECISION_ANNOTATION], "forbid");
        assert_eq!(got[REASON_ANNOTATION], "no rule");
        assert_eq!(got["example.com/x"], "y");
    }
}
