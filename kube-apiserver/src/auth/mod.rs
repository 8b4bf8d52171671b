//! Authorization modes that need more than the request path's simple authorizers: RBAC.

pub mod rbac;
