//! OpenAPI documents of custom resources (helper-owned).

use serde_json::Value;
use std::sync::Arc;

/// The documents of every established CRD's served group-versions.
#[derive(Default)]
pub struct CustomDocuments {}

impl CustomDocuments {
    /// Rebuilds the documents from the established CRDs.
    pub fn rebuild(&self, _crds: &[Arc<Value>]) {}
}
