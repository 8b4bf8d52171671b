//! Authenticates every request and stores the [`UserInfo`] as a request extension (upstream's
//! `WithAuthentication`); refused credentials are a 401 `Unauthorized` Status.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use http::{Request, Response, header};
use tower::{Layer, Service};

use crate::audit::context::AuthenticatedUser;
use crate::http::auth::authenticator::Authenticator;
use crate::http::auth::authorizer::Authorizer;
use crate::http::auth::user::UserInfo;
use crate::http::auth::{impersonation, x509};
use crate::http::response::Body;
use crate::http::status::ApiError;

/// Adds [`Authentication`].
#[derive(Clone)]
pub struct AuthenticationLayer {
    authenticator: Arc<Authenticator>,
    /// Who may impersonate whom; None leaves impersonation headers unanswered (tests).
    impersonation: Option<Arc<dyn Authorizer>>,
}

impl AuthenticationLayer {
    /// A layer authenticating with `authenticator`.
    pub fn new(authenticator: Arc<Authenticator>) -> Self {
        AuthenticationLayer {
            authenticator,
            impersonation: None,
        }
    }

    /// Honours impersonation headers for users `authorizer` lets `impersonate`.
    pub fn with_impersonation(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.impersonation = Some(authorizer);
        self
    }
}

impl<S> Layer<S> for AuthenticationLayer {
    type Service = Authentication<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Authentication {
            inner,
            authenticator: self.authenticator.clone(),
            impersonation: self.impersonation.clone(),
        }
    }
}

/// See the module documentation.
#[derive(Clone)]
pub struct Authentication<S> {
    inner: S,
    authenticator: Arc<Authenticator>,
    impersonation: Option<Arc<dyn Authorizer>>,
}

impl<S, B> Service<Request<B>> for Authentication<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        // The clone that was polled ready serves this request (tower's usual hand-over).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let authenticator = self.authenticator.clone();
        let impersonation = self.impersonation.clone();
        async move {
            let certificate_user = x509::user_from_extensions(req.extensions());
            match authenticator
                .authenticate(req.headers(), certificate_user)
                .await
            {
                Ok(mut user) => {
                    req.headers_mut().remove(header::AUTHORIZATION);
                    if let Some(authorizer) = &impersonation
                        && impersonation::requested(req.headers())
                    {
                        match impersonation::impersonate(authorizer.as_ref(), &user, req.headers())
                        {
                            Ok(acting) => {
                                // Audit records both the user who asked and the one acted as.
                                let asked = std::mem::replace(&mut user, acting);
                                req.extensions_mut().insert(AuthenticatedUser(asked));
                            }
                            Err(err) => {
                                let mut resp = err.into_response();
                                resp.extensions_mut().insert(AuthenticatedUser(user));
                                return Ok(resp);
                            }
                        }
                        strip_impersonation_headers(req.headers_mut());
                    }
                    req.extensions_mut().insert::<UserInfo>(user);
                    inner.call(req).await
                }
                Err(e) => {
                    tracing::info!(error = %e, uri = %req.uri(), "unable to authenticate the request");
                    Ok(ApiError::unauthorized("Unauthorized").into_response())
                }
            }
        }
        .boxed()
    }
}

/// Handlers must not see the headers of an impersonation already applied.
fn strip_impersonation_headers(headers: &mut http::HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}
