//! Patch application for the REST handlers: JSON patch (RFC 6902), JSON merge patch (RFC 7386)
//! and Kubernetes' strategic merge patch, as pure functions over `serde_json::Value`.
//!
//! The handler maps the request's `Content-Type` to a [`PatchType`], calls [`apply_patch`] on the
//! current object, and turns a [`PatchError`] into a `Status` with [`PatchError::status_code`].

mod error;
mod json_patch;
mod merge_patch;
pub mod strategic;

pub use error::PatchError;
pub use strategic::{PatchTarget, SmpError};

use serde_json::Value;

/// Upstream's cap on the number of operations in one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The patch formats the apiserver accepts on `PATCH` (server-side apply is handled elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
}

impl PatchType {
    /// The media type a client sends for this patch type.
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
        }
    }

    /// The patch type for a request's `Content-Type` (parameters such as `charset` ignored).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge]
            .into_iter()
            .find(|t| essence.eq_ignore_ascii_case(t.media_type()))
    }
}

/// Applies `patch` (the raw request body) of type `kind` to `original` and returns the patched
/// object. `target` says which type `original` is; only strategic merge patch uses it, to find
/// the patch strategies of the built-in types.
pub fn apply_patch(
    kind: PatchType,
    original: &Value,
    patch: &[u8],
    target: PatchTarget<'_>,
) -> Result<Value, PatchError> {
    match kind {
        PatchType::Json => json_patch::apply(original, patch),
        PatchType::Merge => merge_patch::apply(original, patch),
        PatchType::StrategicMerge => strategic::apply(original, patch, target),
    }
}
