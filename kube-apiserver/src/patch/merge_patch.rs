//! JSON merge patch (RFC 7386): objects merge recursively, `null` deletes, anything else replaces.

use serde_json::Value;

use super::PatchError;

/// Applies a merge patch body to `original`.
pub(super) fn apply(original: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let patch: Value = serde_json::from_slice(patch)
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON merge patch: {e}")))?;
    let mut doc = original.clone();
    ::json_patch::merge(&mut doc, &patch);
    Ok(doc)
}
