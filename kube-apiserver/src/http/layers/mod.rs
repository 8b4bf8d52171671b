//! The tower layers of the request path, one concern each. [`crate::http::stack`] assembles
//! them in upstream's order.

pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod inflight;
pub mod metrics;
pub mod panic;
pub mod request_info;
pub mod timeout;
