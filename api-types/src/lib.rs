//! Kubernetes API types: k8s-openapi (v1_33) re-exported, plus what the API machinery adds.

pub use k8s_openapi;
