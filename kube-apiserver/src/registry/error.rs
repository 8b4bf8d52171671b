//! What the generic store reports; the REST layer turns each into upstream's `Status`.

use crate::storage::backend::StorageError;
use api_types::validation::ErrorList;

/// An error of a registry operation, with the context upstream's messages name.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{resource} \"{name}\" not found")]
    NotFound {
        group: String,
        resource: String,
        name: String,
    },
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists {
        group: String,
        resource: String,
        name: String,
    },
    /// Optimistic concurrency or a delete precondition failed.
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {message}")]
    Conflict {
        group: String,
        resource: String,
        name: String,
        message: String,
    },
    /// Validation failed: 422 with the field causes.
    #[error("{kind} \"{name}\" is invalid")]
    Invalid {
        group: String,
        kind: String,
        name: String,
        errors: ErrorList,
    },
    #[error("{message}")]
    Forbidden {
        group: String,
        resource: String,
        name: String,
        message: String,
    },
    #[error("{0}")]
    BadRequest(String),
    /// A resourceVersion or continue token older than the kept history (410).
    #[error("{0}")]
    Gone(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An admission plugin refused the write; its Status is answered as it is.
    #[error("{}", .0.message())]
    Rejected(Box<crate::http::status::ApiError>),
}

/// The upstream message of a conflict on update.
pub const MODIFIED_CONFLICT: &str =
    "the object has been modified; please apply your changes to the latest version and try again";
