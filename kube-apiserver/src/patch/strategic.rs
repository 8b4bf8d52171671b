//! Strategic merge patch on `PATCH`: the merge itself lives in `api_types::strategicpatch`
//! (shared with kubectl's `apply`); here it meets the request body and the apiserver's errors.

use serde_json::Value;

pub use api_types::strategicpatch::{
    PatchTarget, Schema, SmpError, merge_objects, schema, strategies,
};

use super::PatchError;

/// Applies a strategic merge patch body to `original`.
pub(super) fn apply(
    original: &Value,
    body: &[u8],
    target: PatchTarget<'_>,
) -> Result<Value, PatchError> {
    let schema = match target {
        PatchTarget::Custom => return Err(PatchError::StrategicMergeNotSupported),
        PatchTarget::BuiltIn { group, kind } => Schema::for_kind(group, kind),
    };
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| PatchError::BadRequest(format!("invalid strategic merge patch: {e}")))?;
    Ok(merge_objects(original, &patch, schema)?)
}
