//! Kubernetes API types: k8s-openapi (v1_33) re-exported, plus what the API machinery adds on
//! top of plain structs: the resource registry, defaulting, validation and selectors.

pub use k8s_openapi;

pub mod defaults;
pub mod duration;
pub mod fields;
pub mod labels;
pub mod registry;
pub mod resource;
pub mod strategicpatch;
pub mod validation;
