//! Node lifecycle (health, taints) and taint-based eviction.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_taint_eviction(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
