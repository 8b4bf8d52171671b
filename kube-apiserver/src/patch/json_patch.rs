//! JSON patch (RFC 6902) on top of the `json-patch` crate, with upstream's operation limit and
//! upstream's wording for operations that do not apply (clients and tests match on it).

use ::json_patch::{Patch, PatchErrorKind, PatchOperation};
use serde_json::Value;

use super::{MAX_JSON_PATCH_OPERATIONS, PatchError};

/// Applies a JSON patch body to `original`.
pub(super) fn apply(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let raw: Value = serde_json::from_slice(body)
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
    let Value::Array(ops) = &raw else {
        return Err(PatchError::BadRequest(
            "invalid JSON patch: a JSON patch is a list of operations".to_string(),
        ));
    };
    // Count before decoding the operations so a huge patch costs nothing more.
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            limit: MAX_JSON_PATCH_OPERATIONS,
            got: ops.len(),
        });
    }
    let patch: Patch = serde_json::from_value(raw)
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;

    // `patch_unsafe` on a copy: a failed patch leaves the copy half-done, which we drop, and it
    // avoids the crate's undo path (which panics if undoing fails).
    let mut doc = original.clone();
    match ::json_patch::patch_unsafe(&mut doc, &patch.0) {
        Ok(()) => Ok(doc),
        Err(e) => {
            let op = patch.0.get(e.operation);
            Err(PatchError::JsonPatchFailed(describe_failure(
                &doc, op, &e.kind,
            )))
        }
    }
}

/// Upstream's (evanphx/json-patch) message for an operation that failed on `doc`, the document
/// as it was just before that operation.
fn describe_failure(doc: &Value, op: Option<&PatchOperation>, kind: &PatchErrorKind) -> String {
    let Some(op) = op else {
        return kind.to_string();
    };
    let path = op.path().as_str();
    if matches!(kind, PatchErrorKind::TestFailed) {
        return format!("testing value {path} failed: test failed");
    }
    match op {
        PatchOperation::Move(m) if matches!(kind, PatchErrorKind::InvalidFromPointer) => format!(
            "move operation does not apply: doc is missing from path: {}: missing value",
            m.from.as_str()
        ),
        PatchOperation::Copy(c) if matches!(kind, PatchErrorKind::InvalidFromPointer) => format!(
            "copy operation does not apply: doc is missing from path: {}: missing value",
            c.from.as_str()
        ),
        PatchOperation::Move(_) if matches!(kind, PatchErrorKind::CannotMoveInsideItself) => {
            format!("move operation does not apply: cannot move {path} inside itself")
        }
        _ => missing_target(doc, op_name(op), path),
    }
}

fn op_name(op: &PatchOperation) -> &'static str {
    match op {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    }
}

/// The message for a `path` whose parent or last segment is not in `doc`.
fn missing_target(doc: &Value, op: &str, path: &str) -> String {
    let (parent_path, last) = match path.rfind('/') {
        Some(i) => (&path[..i], unescape(&path[i + 1..])),
        None => ("", String::new()),
    };
    match doc.pointer(parent_path) {
        Some(Value::Array(_)) => {
            format!("Unable to access invalid index: {last}: invalid index referenced")
        }
        Some(Value::Object(_)) if op == "remove" => {
            format!("Unable to remove nonexistent key: {last}: missing value")
        }
        Some(Value::Object(_)) if op == "replace" => {
            format!("replace operation does not apply: doc is missing key: {path}: missing value")
        }
        _ => {
            format!("{op} operation does not apply: doc is missing path: \"{path}\": missing value")
        }
    }
}

/// Decodes a JSON pointer segment (`~1` is `/`, `~0` is `~`).
fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}
