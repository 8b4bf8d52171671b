//! PersistentVolume binding, protection finalizers and ephemeral volumes.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init_binder(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_pv_protection(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_pvc_protection(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_ephemeral(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
