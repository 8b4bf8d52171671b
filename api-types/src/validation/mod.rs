//! Validation of API objects, as upstream's `field` error types and per-kind validators.
//!
//! Errors are collected into an [`ErrorList`], which renders upstream's aggregate message and
//! converts into the 422 `Invalid` [`Status`](k8s_openapi::apimachinery::pkg::apis::meta::v1::Status).

mod errors;
pub mod names;
mod path;
mod quote;
mod status;

pub use errors::{BadValue, ErrorList, ErrorType, FieldError};
pub use path::FieldPath;
pub use quote::go_quote;
