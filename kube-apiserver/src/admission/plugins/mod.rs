//! The admission plugins we implement, one module each (webhooks and PodSecurity have
//! several files).

pub mod always;
pub mod default_storage_class;
pub mod default_toleration;
pub mod limit_ranger;
pub mod namespace_lifecycle;
pub mod node_restriction;
pub mod pod_security;
pub mod priority;
pub use api_types::resource::quantity;
pub mod resource_quota;
pub mod runtime_class;
pub mod service_account;
pub mod storage_protection;
pub mod taint_nodes;
pub mod webhook;
