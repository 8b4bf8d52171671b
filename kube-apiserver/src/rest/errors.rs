//! Registry errors as the `Status` responses upstream gives for them.

use crate::http::status::ApiError;
use crate::registry::RegistryError;

impl From<RegistryError> for ApiError {
    fn from(err: RegistryError) -> Self {
        match err {
            RegistryError::NotFound {
                group,
                resource,
                name,
            } => ApiError::not_found(&group, &resource, &name),
            RegistryError::AlreadyExists {
                group,
                resource,
                name,
            } => ApiError::already_exists(&group, &resource, &name),
            RegistryError::Conflict {
                group,
                resource,
                name,
                message,
            } => ApiError::conflict(&group, &resource, &name, &message),
            RegistryError::Invalid {
                group,
                kind,
                name,
                errors,
            } => ApiError::invalid(&group, &kind, &name, &errors),
            RegistryError::Forbidden {
                group,
                resource,
                name,
                message,
            } => ApiError::forbidden(&group, &resource, &name, &message),
            RegistryError::BadRequest(message) => ApiError::bad_request(message),
            RegistryError::Gone(message) => ApiError::expired(message),
            RegistryError::Storage(err) => ApiError::from_storage(&err, "", "", ""),
            RegistryError::Rejected(err) => *err,
        }
    }
}
