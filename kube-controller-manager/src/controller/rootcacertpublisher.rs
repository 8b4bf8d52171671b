//! root-ca-certificate-publisher-controller: the `kube-root-ca.crt` ConfigMap in every
//! namespace, holding `--root-ca-file`, restored when edited or deleted.

mod publisher;

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(publisher::init(ctx))
}
