//! The apiserver's top-level routing: health, metrics and version (component-base), discovery,
//! and resource requests (the REST layer); anything else is a 404 `Status`.

use crate::http::discovery::DiscoveryHandler;
use crate::http::request_info::RequestInfo;
use crate::http::response::{Body, BoxError};
use crate::http::status::ApiError;
use crate::rest::handler::handle;
use crate::rest::reviews::{self, Reviewers};
use crate::rest::state::ApiState;
use component_base::debug::DebugHandlers;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Body as HttpBody;
use std::sync::Arc;

/// Paths component-base answers.
const DEBUG_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/metrics", "/version"];

/// Everything a request may be routed to; cloning shares it.
#[derive(Clone)]
pub struct Router {
    pub state: Arc<ApiState>,
    /// What the review APIs (whoami, can-i, TokenReview) consult.
    pub reviewers: Reviewers,
    pub debug: DebugHandlers,
    pub discovery: DiscoveryHandler,
}

impl Router {
    /// Routes one request.
    pub async fn route<B>(&self, req: Request<B>) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let path = req.uri().path();
        if DEBUG_PATHS
            .iter()
            .any(|p| path == *p || path.starts_with(&format!("{p}/")))
        {
            return self
                .debug
                .handle(req)
                .await
                .map(|body| body.map_err(|never| match never {}).boxed_unsync());
        }
        if let Some(resp) = crate::openapi::serve(
            path,
            req.headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
            &self.state.custom_openapi,
        ) {
            return resp;
        }
        if let Some(response) = self.discovery.serve(&req) {
            return response;
        }
        match RequestInfo::from_request(&req) {
            Ok(info) if reviews::is_review(&info) => {
                match reviews::serve(&self.reviewers, &info, req).await {
                    Ok(response) => response,
                    Err(err) => err.into_response(),
                }
            }
            Ok(info) if info.is_resource_request => handle(&self.state, &info, req).await,
            Ok(_) => ApiError::path_not_found().into_response(),
            Err(err) => ApiError::bad_request(err.to_string()).into_response(),
        }
    }
}
