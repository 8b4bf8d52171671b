//! Job: pods run to completion.

mod backoff;
mod conditions;
mod failure_policy;
mod indexes;
mod pods;

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    super::not_implemented(ctx)
}
