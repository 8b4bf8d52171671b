//! Authenticates every request and stores the [`UserInfo`] as a request extension (upstream's
//! `WithAuthentication`); refused credentials are a 401 `Unauthorized` Status.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use http::{Request, Response, header};
use tower::{Layer, Service};

use crate::http::auth::authenticator::Authenticator;
use crate::http::auth::user::UserInfo;
use crate::http::response::Body;
use crate::http::status::ApiError;

/// Adds [`Authentication`].
#[derive(Debug, Clone)]
pub struct AuthenticationLayer {
    authenticator: Arc<Authenticator>,
}

impl AuthenticationLayer {
    /// A layer authenticating with `authenticator`.
    pub fn new(authenticator: Arc<Authenticator>) -> Self {
        AuthenticationLayer { authenticator }
    }
}

impl<S> Layer<S> for AuthenticationLayer {
    type Service = Authentication<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Authentication {
            inner,
            authenticator: self.authenticator.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Authentication<S> {
    inner: S,
    authenticator: Arc<Authenticator>,
}

impl<S, B> Service<Request<B>> for Authentication<S>
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

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        match self.authenticator.authenticate(req.headers()) {
            Ok(user) => {
                // As upstream: nothing past authentication gets to see (and leak) the token.
                req.headers_mut().remove(header::AUTHORIZATION);
                req.extensions_mut().insert::<UserInfo>(user);
                self.inner.call(req).boxed()
            }
            Err(e) => {
                tracing::debug!(error = %e, uri = %req.uri(), "unable to authenticate the request");
                futures::future::ready(Ok(ApiError::unauthorized("Unauthorized").into_response()))
                    .boxed()
            }
        }
    }
}
