//! The HTTP machinery of the apiserver's request path (shared/DESIGN.md section 2): parsing what
//! a request is about, errors as `Status` objects, content negotiation and body decoding,
//! discovery documents, and the tower layers every request passes through.

pub mod auth;
pub mod body;
pub mod discovery;
pub mod duplicate_fields;
pub mod layers;
pub mod negotiation;
pub mod protobuf;
pub mod request_info;
pub mod response;
pub mod stack;
pub mod status;
pub mod tls_client;

pub use stack::{Stack, StackConfig, into_hyper, stack};
