//! ServiceAccounts (a default per namespace) and their legacy token secrets.

mod default_account;
mod jwt;
mod tokens;

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub use jwt::LegacyTokenSigner;

/// serviceaccount-controller: the `default` ServiceAccount of every active namespace.
pub fn init(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(default_account::init(ctx))
}

/// serviceaccount-token-controller: fills and garbage-collects `kubernetes.io/service-account-token`
/// secrets.
pub fn init_tokens(ctx: ControllerContext) -> BoxFuture<'static, InitResult> {
    Box::pin(tokens::init(ctx))
}

/// The HTTP status of an apiserver error, if the error is one.
pub(crate) fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

pub(crate) fn is_not_found(err: &kube::Error) -> bool {
    status_code(err) == Some(404)
}

pub(crate) fn is_already_exists(err: &kube::Error) -> bool {
    status_code(err) == Some(409)
        && matches!(err, kube::Error::Api(s) if s.reason == "AlreadyExists")
}
