//! The REST layer: resource requests decoded, dispatched to the generic registry, and encoded
//! back as upstream does (JSON, YAML, Table, watch streams).

pub mod errors;
pub mod query;
