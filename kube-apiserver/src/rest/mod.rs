//! The REST layer: resource requests decoded, dispatched to the generic registry, and encoded
//! back as upstream does (JSON, YAML, Table, watch streams).

pub mod component_status;
pub mod deprecation;
pub mod encode;
pub mod errors;
pub mod eviction;
pub mod field_validation;
pub mod handler;
pub mod proxy;
pub mod query;
pub mod reviews;
pub mod state;
pub mod subresources;
pub mod token_request;
pub mod watch;
