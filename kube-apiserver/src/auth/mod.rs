//! Authorization modes that need more than the request path's simple authorizers: RBAC and
//! Node.

pub mod node;
pub mod rbac;
