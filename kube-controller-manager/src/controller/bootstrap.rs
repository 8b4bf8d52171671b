//! bootstrap-signer and token-cleaner: bootstrap token secrets.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init_signer(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_token_cleaner(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
