//! CertificateSigningRequest approving, signing and cleaning.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init_approving(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_cleaner(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_signing(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
