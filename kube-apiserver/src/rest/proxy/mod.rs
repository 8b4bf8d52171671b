//! The proxying subresources: `pods/log`, `pods/exec`, `pods/attach`, `pods/portforward`
//! (to the pod's node's kubelet), and `pods/proxy`, `services/proxy`, `nodes/proxy` (to the
//! pod, a ready endpoint of the service, or the kubelet), as upstream's connecters serve them.
//!
//! Authorization already happened in the layers (`get`/`create` on the subresource). Unlike
//! upstream, connect requests are not passed through admission (there is no CONNECT
//! operation in our admission chain yet).

mod kubelet;
mod location;
mod options;
mod transport;

pub use kubelet::{KubeletClientConfig, KubeletClientOptions};

use crate::http::request_info::RequestInfo;
use crate::http::response::{Body, BoxError};
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use api_types::registry::ResourceInfo;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Body as HttpBody;
use options::{LogOptions, StreamKind, StreamOptions};
use serde_json::Value;
use std::sync::Arc;
use transport::Target;

/// Whether `subresource` of `info` is one of the proxying subresources served here.
pub fn handles(info: &ResourceInfo, subresource: &str) -> bool {
    info.group.is_empty()
        && matches!(
            (info.plural, subresource),
            ("pods", "log" | "exec" | "attach" | "portforward" | "proxy")
                | ("services" | "nodes", "proxy")
        )
}

/// Serves a proxying subresource request.
pub async fn serve<B>(
    state: &Arc<ApiState>,
    info: &'static ResourceInfo,
    request: &RequestInfo,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: HttpBody + Send + 'static,
    B::Error: Into<BoxError>,
{
    let config = state.kubelet_client();
    let namespace = request.namespace.as_str();
    let name = request.name.as_str();
    let sub = request.subresource.as_str();
    let verb = request.verb.as_str();
    let method_allowed = match sub {
        "log" => verb == "get",
        "proxy" => true,
        _ => matches!(verb, "get" | "create"),
    };
    if !method_allowed {
        return Err(ApiError::method_not_supported(
            info.group,
            &format!("{}/{sub}", info.plural),
            verb,
        ));
    }
    match (info.plural, sub) {
        ("pods", "log") => logs(state, &config, namespace, name, req.uri().query()).await,
        ("pods", "exec" | "attach" | "portforward") => {
            let kind = match sub {
                "exec" => StreamKind::Exec,
                "attach" => StreamKind::Attach,
                _ => StreamKind::PortForward,
            };
            let options = StreamOptions::parse(req.uri().query(), kind)?;
            let pod = get(state, "pods", Some(namespace), name).await?;
            let path = match kind {
                StreamKind::PortForward => format!("/portForward/{namespace}/{name}"),
                _ => {
                    let container = options::choose_container(&pod, &options.container, name)?;
                    format!("/{sub}/{namespace}/{name}/{container}")
                }
            };
            let node_name = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            if node_name.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "pod {name} does not have a host assigned"
                )));
            }
            let node = get(state, "nodes", None, node_name).await?;
            let (host, port) = config.connection(&node)?;
            if !transport::is_upgrade(req.headers()) {
                return Err(ApiError::bad_request("Upgrade request required"));
            }
            let query = options.kubelet_query();
            let target = Target {
                tls: Some(config.tls.clone()),
                host,
                port,
                path_and_query: with_query(&path, &query),
                timeout: config.timeout,
            };
            proxy_to(&target, req).await
        }
        (_, "proxy") => {
            let suffix = proxy_suffix(req.uri().path(), info.plural);
            // Upstream redirects a GET of the bare `.../proxy` to `.../proxy/`.
            if suffix.is_empty()
                && !req.uri().path().ends_with('/')
                && matches!(req.method().as_str(), "GET" | "HEAD")
            {
                let query = req
                    .uri()
                    .query()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default();
                let mut response = Response::new(crate::http::response::empty());
                *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
                if let Ok(location) =
                    HeaderValue::from_str(&format!("{}/{query}", req.uri().path()))
                {
                    response.headers_mut().insert(header::LOCATION, location);
                }
                return Ok(response);
            }
            let base = match info.plural {
                "pods" => location::pod(state, &config, namespace, name).await?,
                "services" => location::service(state, &config, namespace, name).await?,
                _ => location::node(state, &config, name).await?,
            };
            let mut path = suffix.to_string();
            if !path.starts_with('/') {
                path.insert(0, '/');
            }
            let target = Target {
                path_and_query: with_query(&path, req.uri().query().unwrap_or_default()),
                ..base
            };
            proxy_to(&target, req).await
        }
        _ => Err(ApiError::path_not_found()),
    }
}

/// The object, or upstream's 404 for it.
pub(crate) async fn get(
    state: &ApiState,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let store = state
        .store("", "v1", plural)
        .ok_or_else(ApiError::path_not_found)?;
    Ok(store.get(namespace, name).await?)
}

fn with_query(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    }
}

/// The raw path after `<plural>/<name>/proxy`, as upstream's `proxyOpts.Path` (still
/// escaped, so a proxied path keeps its encoding).
fn proxy_suffix<'a>(path: &'a str, plural: &str) -> &'a str {
    let segments: Vec<&str> = path.split('/').collect();
    for i in 2..segments.len() {
        if segments[i] == "proxy" && segments[i - 2] == plural {
            let consumed = segments[..=i].iter().map(|s| s.len()).sum::<usize>() + i;
            return path.get(consumed..).unwrap_or_default();
        }
    }
    ""
}

/// Forwards the client's request; an unreachable backend is upstream's 503.
async fn proxy_to<B>(target: &Target, req: Request<B>) -> Result<Response<Body>, ApiError>
where
    B: HttpBody + Send + 'static,
    B::Error: Into<BoxError>,
{
    match transport::forward(target, req).await {
        Ok(response) => Ok(transport::relay(response)),
        Err(cause) => Err(ApiError::service_unavailable(format!(
            "error trying to reach service: {cause}"
        ))),
    }
}

/// `pods/log`: the kubelet's `containerLogs` streamed back as `text/plain`.
async fn logs(
    state: &ApiState,
    config: &KubeletClientConfig,
    namespace: &str,
    name: &str,
    query: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let options = LogOptions::parse(query, name)?;
    let pod = get(state, "pods", Some(namespace), name).await?;
    let container = options::choose_container(&pod, &options.container, name)?;
    let node_name = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    // An unscheduled pod has no logs yet: upstream answers with an empty stream.
    if node_name.is_empty() {
        return Ok(text_response(crate::http::response::empty()));
    }
    let node = get(state, "nodes", None, node_name).await?;
    let (host, port) = config.connection(&node)?;
    let tls = if options.insecure_skip_tls_verify_backend {
        config.insecure_tls.clone()
    } else {
        config.tls.clone()
    };
    let target = Target {
        tls: Some(tls),
        host,
        port,
        path_and_query: with_query(
            &format!("/containerLogs/{namespace}/{name}/{container}"),
            &options.kubelet_query(),
        ),
        timeout: config.timeout,
    };
    let request = Request::get(target.path_and_query.as_str())
        .body(Empty::<Bytes>::new().map_err(|never| match never {}))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let response = transport::forward(&target, request)
        .await
        .map_err(|cause| ApiError::internal(format!("Get {:?}: {cause}", target.url())))?;
    let status = response.status().as_u16();
    if !(200..=206).contains(&status) {
        let body = read_limited(response.into_body()).await;
        return Err(location::backend_error(status, "pods/log", name, body));
    }
    Ok(text_response(
        response
            .into_body()
            .map_err(|e| Box::new(e) as BoxError)
            .boxed_unsync(),
    ))
}

fn text_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// Upstream reads at most this much of an error body from the backend.
const MAX_ERROR_BODY: usize = 50_000;

async fn read_limited(mut body: hyper::body::Incoming) -> String {
    let mut out = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            out.extend_from_slice(data);
            if out.len() >= MAX_ERROR_BODY {
                out.truncate(MAX_ERROR_BODY);
                break;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_suffix_keeps_the_rest_of_the_path() {
        assert_eq!(
            proxy_suffix("/api/v1/nodes/n1/proxy/healthz", "nodes"),
            "/healthz"
        );
        assert_eq!(
            proxy_suffix(
                "/api/v1/namespaces/ns/services/https:s:443/proxy/a%2Fb/",
                "services"
            ),
            "/a%2Fb/"
        );
        assert_eq!(proxy_suffix("/api/v1/nodes/n1/proxy", "nodes"), "");
        assert_eq!(proxy_suffix("/api/v1/nodes/proxy/proxy/x", "nodes"), "/x");
    }

    #[test]
    fn only_the_proxying_subresources_are_handled() {
        let pods = api_types::registry::by_group_resource("", "pods").unwrap();
        let nodes = api_types::registry::by_group_resource("", "nodes").unwrap();
        assert!(handles(pods, "log"));
        assert!(handles(pods, "portforward"));
        assert!(!handles(pods, "status"));
        assert!(handles(nodes, "proxy"));
        assert!(!handles(nodes, "log"));
    }
}
