//! Asks the [`Authorizer`] about every request (upstream's `WithAuthorization`); anything but
//! an allow is a 403 `Forbidden` Status with upstream's message.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use http::{Request, Response};
use tower::{Layer, Service};

use crate::http::auth::authorizer::{Attributes, Authorizer, Decision, forbidden};
use crate::http::auth::user::UserInfo;
use crate::http::request_info::RequestInfo;
use crate::http::response::Body;
use crate::http::status::ApiError;

/// Adds [`Authorization`].
#[derive(Clone)]
pub struct AuthorizationLayer {
    authorizer: Arc<dyn Authorizer>,
}

impl AuthorizationLayer {
    /// A layer consulting `authorizer`.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        AuthorizationLayer { authorizer }
    }
}

impl<S> Layer<S> for AuthorizationLayer {
    type Service = Authorization<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Authorization {
            inner,
            authorizer: self.authorizer.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct Authorization<S> {
    inner: S,
    authorizer: Arc<dyn Authorizer>,
}

impl<S, B> Service<Request<B>> for Authorization<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let (Some(info), Some(user)) = (
            req.extensions().get::<RequestInfo>(),
            req.extensions().get::<UserInfo>(),
        ) else {
            // The stack is built wrongly: refuse rather than let an unchecked request through.
            let err = ApiError::internal("no RequestInfo or user found in the context");
            return futures::future::ready(Ok(err.into_response())).boxed();
        };
        let attrs = Attributes {
            user,
            request: info,
        };
        match self.authorizer.authorize(&attrs) {
            Decision::Allow => {
                // Our authorizers give no reason for an allow; upstream's RBAC names the binding.
                crate::audit::context::record_authorization(req.extensions(), true, "");
                self.inner.call(req).boxed()
            }
            Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                crate::audit::context::record_authorization(req.extensions(), false, &reason);
                let err = forbidden(&attrs, &reason);
                tracing::debug!(user = %user.name, message = %err.message(), "forbidden");
                futures::future::ready(Ok(err.into_response())).boxed()
            }
        }
    }
}
