//! The request path assembled: every handler is wrapped in the same layers, in upstream's
//! order (`DefaultBuildHandlerChain`, outermost first): audit ID, panic recovery, request info,
//! metrics and access log, the request deadline, authentication, audit, in-flight limit,
//! authorization, handler.
//!
//! Upstream counts a request against the in-flight limit before authorizing it (authorization
//! is work too), so the limit sits between authentication (it exempts `system:masters`, so it
//! needs the user) and authorization.
//!
//! Audit sits right inside authentication, as upstream's: it knows who asked, and the
//! refusals of the in-flight limit and authorization are audited too.

use std::sync::Arc;

use http::{Request, Response};
use tower::{Service, ServiceBuilder, ServiceExt};

use crate::audit::Auditor;
use crate::http::auth::authenticator::Authenticator;
use crate::http::auth::authorizer::{AlwaysAllow, Authorizer, with_privileged_groups};
use crate::http::layers::audit::{Audit, AuditInit, AuditInitLayer, AuditLayer};
use crate::http::layers::authentication::{Authentication, AuthenticationLayer};
use crate::http::layers::authorization::{Authorization, AuthorizationLayer};
use crate::http::layers::inflight::{
    DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT, DEFAULT_MAX_REQUESTS_INFLIGHT, InFlightLimit,
    InFlightLimitLayer,
};
use crate::http::layers::metrics::{Metrics, MetricsLayer};
use crate::http::layers::panic::{PanicRecovery, PanicRecoveryLayer};
use crate::http::layers::request_info::{RequestInfoLayer, RequestInfoService};
use crate::http::layers::timeout::{DEFAULT_REQUEST_TIMEOUT, RequestTimeout, RequestTimeoutLayer};
use crate::http::response::Body;

/// What the layers need from the command line.
#[derive(Clone)]
pub struct StackConfig {
    /// `--token-auth-file` and `--anonymous-auth`.
    pub authenticator: Arc<Authenticator>,
    /// `--authorization-mode` (already including the `system:masters` short-cut).
    pub authorizer: Arc<dyn Authorizer>,
    /// `--max-requests-inflight` (0: unlimited).
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight` (0: unlimited).
    pub max_mutating_requests_inflight: usize,
    /// `--request-timeout` (zero: none).
    pub request_timeout: std::time::Duration,
    /// `--audit-policy-file` and `--audit-log-*`; None audits nothing (responses still carry
    /// an `Audit-ID`).
    pub audit: Option<Arc<Auditor>>,
}

impl Default for StackConfig {
    /// Anonymous requests, `AlwaysAllow`, upstream's default limits.
    fn default() -> Self {
        StackConfig {
            authenticator: Arc::new(Authenticator::default()),
            authorizer: Arc::new(with_privileged_groups(AlwaysAllow)),
            max_requests_inflight: DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight: DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            audit: None,
        }
    }
}

/// The handler wrapped in every layer.
pub type Stack<S> = AuditInit<
    PanicRecovery<
        RequestInfoService<
            Metrics<RequestTimeout<Authentication<Audit<InFlightLimit<Authorization<S>>>>>>,
        >,
    >,
>;

/// Wraps `handler` (any `tower::Service<Request<B>>` answering `Response<Body>`, for any
/// request body `B`: hyper's `Incoming` in the server, something simpler in tests) in the
/// layers of the request path. The handler finds the `RequestInfo` and `UserInfo` extensions
/// on every request it gets.
pub fn stack<S>(handler: S, config: &StackConfig) -> Stack<S> {
    ServiceBuilder::new()
        .layer(AuditInitLayer::new(config.audit.clone()))
        .layer(PanicRecoveryLayer)
        .layer(RequestInfoLayer)
        .layer(MetricsLayer)
        .layer(RequestTimeoutLayer::new(config.request_timeout))
        .layer(
            AuthenticationLayer::new(config.authenticator.clone())
                .with_impersonation(config.authorizer.clone()),
        )
        .layer(AuditLayer::new(config.audit.clone()))
        .layer(InFlightLimitLayer::new(
            config.max_requests_inflight,
            config.max_mutating_requests_inflight,
        ))
        .layer(AuthorizationLayer::new(config.authorizer.clone()))
        .service(handler)
}

/// Adapts a tower service (such as a [`Stack`]) to the hyper service
/// `component_base::serving` serves: every connection's requests go to a clone of it.
pub fn into_hyper<S, B>(
    service: S,
) -> impl hyper::service::Service<
    Request<B>,
    Response = Response<Body>,
    Error = S::Error,
    Future = impl Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
{
    hyper::service::service_fn(move |req| service.clone().oneshot(req))
}
