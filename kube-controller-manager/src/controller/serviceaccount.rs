//! ServiceAccounts (a default per namespace) and their token secrets.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_tokens(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
