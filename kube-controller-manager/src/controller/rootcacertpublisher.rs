//! The kube-root-ca.crt ConfigMap in every namespace.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
