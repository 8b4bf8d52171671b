//! The errors of patch application, each knowing the HTTP status upstream answers with.

use super::strategic::SmpError;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch of the declared type (bad JSON, unknown operation): 400.
    #[error("{0}")]
    BadRequest(String),
    /// A JSON patch with more operations than upstream allows: 413.
    #[error("The allowed maximum operations in a JSON patch is {limit}, got {got}")]
    TooManyOperations {
        /// The limit ([`super::MAX_JSON_PATCH_OPERATIONS`]).
        limit: usize,
        /// How many operations the patch holds.
        got: usize,
    },
    /// A JSON patch operation did not apply (a `test` failed, a path is missing): 422.
    #[error("{0}")]
    JsonPatchFailed(String),
    /// Strategic merge patch asked for a custom resource, which has no patch strategies: 415.
    #[error("strategic merge patch is not supported for custom resources")]
    StrategicMergeNotSupported,
    /// The strategic merge patch was malformed or did not fit the object.
    #[error(transparent)]
    StrategicMerge(#[from] SmpError),
}

impl PatchError {
    /// The HTTP status code upstream answers this error with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::JsonPatchFailed(_) => 422,
            PatchError::StrategicMergeNotSupported => 415,
            PatchError::StrategicMerge(e) => e.status_code(),
        }
    }
}
