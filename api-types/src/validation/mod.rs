//! Validation of API objects, as upstream's `field` error types and per-kind validators.
//!
//! Errors are collected into an [`ErrorList`], which renders upstream's aggregate message and
//! converts into the 422 `Invalid` [`Status`](k8s_openapi::apimachinery::pkg::apis::meta::v1::Status)
//! with [`ErrorList::to_status`]. [`validate_create`] and [`validate_update`] validate any
//! built-in kind given as JSON.

mod apps;
mod config;
mod errors;
mod meta;
pub mod names;
mod object;
mod path;
mod pod;
mod quantity;
mod quote;
mod service;
mod status;

pub use apps::{
    validate_daemon_set, validate_daemon_set_update, validate_deployment,
    validate_deployment_update, validate_replica_set, validate_replica_set_update,
    validate_stateful_set, validate_stateful_set_update,
};
pub use config::{
    MAX_CONFIG_SIZE_BYTES, validate_config_map, validate_config_map_update, validate_namespace,
    validate_namespace_update, validate_secret, validate_secret_update,
};
pub use errors::{BadValue, ErrorList, ErrorType, FieldError};
pub use meta::{
    FIELD_IMMUTABLE_ERROR_MSG, NameValidator, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES, name_is_dns_label,
    name_is_dns_subdomain, name_is_dns1035_label, name_is_path_segment, validate_annotations,
    validate_labels, validate_object_meta, validate_object_meta_update,
};
pub use object::{has_validator, validate_create, validate_update};
pub use path::FieldPath;
pub use pod::{
    POD_UPDATE_FORBIDDEN_MSG, validate_pod, validate_pod_spec, validate_pod_template_spec,
    validate_pod_update,
};
pub use quantity::{QUANTITY_FORMAT_ERROR, parse_quantity};
pub use quote::go_quote;
pub use service::{validate_service, validate_service_update};
