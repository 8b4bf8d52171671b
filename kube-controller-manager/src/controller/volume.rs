//! PersistentVolume binding, protection finalizers and ephemeral volumes.

mod binder;
mod binder_sync;
mod ephemeral;
mod finalizers;
mod matching;
mod pv_protection;
mod pvc_protection;

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init_binder(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    binder::init(ctx)
}

pub fn init_pv_protection(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    pv_protection::init(ctx)
}

pub fn init_pvc_protection(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    pvc_protection::init(ctx)
}

pub fn init_ephemeral(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    ephemeral::init(ctx)
}
