//! bootstrap-signer and token-cleaner: bootstrap token secrets
//! (`bootstrap.kubernetes.io/token` in kube-system).

mod cleaner;
mod signer;
mod token;

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init_signer(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(signer::init(ctx))
}

pub fn init_token_cleaner(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(cleaner::init(ctx))
}
