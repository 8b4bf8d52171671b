//! ReplicaSet and ReplicationController.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}

pub fn init_replication_controller(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
