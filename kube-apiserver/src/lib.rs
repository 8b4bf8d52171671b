//! kube-apiserver: the only component that touches storage. It serves REST and watch for every
//! built-in resource over HTTPS, with discovery and OpenAPI, on the embedded store or etcd.

pub mod admission;
pub mod app;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod crd;
pub mod http;
pub mod openapi;
pub mod patch;
pub mod registry;
pub mod rest;
pub mod storage;
pub mod tables;
#[cfg(test)]
pub(crate) mod test_support;
