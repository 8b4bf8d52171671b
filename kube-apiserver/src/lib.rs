//! kube-apiserver: the only component that touches storage. Today it serves `/version`,
//! `/healthz`, `/livez`, `/readyz` and `/metrics` over HTTPS; storage, REST and watch arrive
//! with their issue.

pub mod app;
pub mod registry;
pub mod rest;
pub mod http;
pub mod openapi;
pub mod patch;
pub mod storage;
pub mod tables;
