//! Where `pods/proxy`, `services/proxy` and `nodes/proxy` go (upstream's `ResourceLocation`
//! of each), and upstream's errors for a backend's failure status.

use super::get;
use super::kubelet::KubeletClientConfig;
use super::transport::Target;
use crate::http::status::ApiError;
use crate::rest::state::ApiState;
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusDetails};
use serde_json::Value;
use std::net::IpAddr;

/// Upstream's `SplitSchemeNamePort`: `name`, `name:port` or `scheme:name:port`, the scheme
/// `http`, `https` or empty.
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

fn tls_for(
    scheme: &str,
    config: &KubeletClientConfig,
) -> Option<std::sync::Arc<rustls::ClientConfig>> {
    (scheme == "https").then(|| config.backend_tls.clone())
}

/// Go's `IP.IsGlobalUnicast`: not unspecified, loopback, multicast, link-local or the IPv4
/// broadcast address (private ranges count as global).
fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// `pods/proxy`: the pod's IP and the named port, else its first container's first port.
pub async fn pod(
    state: &ApiState,
    config: &KubeletClientConfig,
    namespace: &str,
    id: &str,
) -> Result<Target, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {id:?}")))?;
    let pod = get(state, "pods", Some(namespace), name).await?;
    let port = if port.is_empty() {
        pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|c| c["ports"][0]["containerPort"].as_u64())
            .map(|p| p.to_string())
            .unwrap_or_default()
    } else {
        port.to_string()
    };
    let ip = pod["status"]["podIP"]
        .as_str()
        .and_then(|s| s.parse::<IpAddr>().ok())
        .filter(|ip| is_global_unicast(*ip))
        .ok_or_else(|| ApiError::bad_request("address not allowed"))?;
    // Without a port upstream dials the scheme's default.
    let port = match port.parse::<u16>() {
        Ok(p) => p,
        Err(_) if port.is_empty() => default_port(scheme),
        Err(_) => {
            return Err(ApiError::bad_request(format!("invalid pod request {id:?}")));
        }
    };
    Ok(Target {
        tls: tls_for(scheme, config),
        host: ip.to_string(),
        port,
        path_and_query: String::new(),
        timeout: config.timeout,
    })
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

/// `services/proxy`: a ready endpoint address whose pod still has that IP, on the endpoint
/// port named like the service port (given by name or number). Upstream starts at a random
/// subset and address; we take the first valid one.
pub async fn service(
    state: &ApiState,
    config: &KubeletClientConfig,
    namespace: &str,
    id: &str,
) -> Result<Target, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid service request {id:?}")))?;
    let mut port_name = port.to_string();
    if let Ok(number) = port.parse::<i64>() {
        let svc = get(state, "services", Some(namespace), name).await?;
        port_name = svc["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_i64() == Some(number))
            .map(|p| p["name"].as_str().unwrap_or_default().to_string())
            .ok_or_else(|| {
                ApiError::service_unavailable(format!(
                    "no service port {number} found for service {name:?}"
                ))
            })?;
    }
    let endpoints = get(state, "endpoints", Some(namespace), name).await?;
    let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
    if subsets.is_empty() {
        return Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {name:?}"
        )));
    }
    for subset in &subsets {
        let Some(ep_port) = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or_default() == port_name)
        else {
            continue;
        };
        let Some(number) = ep_port["port"].as_u64().and_then(|p| u16::try_from(p).ok()) else {
            continue;
        };
        for address in subset["addresses"].as_array().into_iter().flatten() {
            if valid_address(state, namespace, address).await {
                return Ok(Target {
                    tls: tls_for(scheme, config),
                    host: address["ip"].as_str().unwrap_or_default().to_string(),
                    port: number,
                    path_and_query: String::new(),
                    timeout: config.timeout,
                });
            }
        }
    }
    Err(ApiError::service_unavailable(format!(
        "no endpoints available for service {id:?}"
    )))
}

/// Upstream's `isValidAddress`: the address names a pod of the namespace that has that IP.
async fn valid_address(state: &ApiState, namespace: &str, address: &Value) -> bool {
    let target = &address["targetRef"];
    let Some(pod_name) = target["name"].as_str() else {
        return false;
    };
    if target["namespace"].as_str().unwrap_or_default() != namespace {
        return false;
    }
    let Ok(pod) = get(state, "pods", Some(namespace), pod_name).await else {
        return false;
    };
    let ip = address["ip"].as_str().unwrap_or_default();
    pod["status"]["podIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| p["ip"].as_str() == Some(ip))
}

/// `nodes/proxy`: the kubelet (with the kubelet client's TLS) when no port or the kubelet's
/// port is named; any other port over the plain proxy transport, refused for loopback and
/// link-local addresses as upstream's `IsProxyableHostname`.
pub async fn node(
    state: &ApiState,
    config: &KubeletClientConfig,
    id: &str,
) -> Result<Target, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid node request {id:?}")))?;
    let node = get(state, "nodes", None, name).await?;
    let (host, kubelet_port) = config.connection(&node)?;
    if port.is_empty() || port == kubelet_port.to_string() {
        return Ok(Target {
            tls: Some(config.tls.clone()),
            host,
            port: kubelet_port,
            path_and_query: String::new(),
            timeout: config.timeout,
        });
    }
    if let Ok(ip) = host.parse::<IpAddr>()
        && (ip.is_loopback()
            || matches!(ip, IpAddr::V4(v4) if v4.is_link_local())
            || matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80))
    {
        return Err(ApiError::bad_request("address not allowed"));
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| ApiError::bad_request(format!("invalid node request {id:?}")))?;
    Ok(Target {
        tls: tls_for(scheme, config),
        host,
        port,
        path_and_query: String::new(),
        timeout: config.timeout,
    })
}

/// Upstream's `GenericHttpResponseChecker`: a backend's 500 is an internal error with its
/// body, a 400 a bad request with its body, anything else `NewGenericServerResponse`.
pub fn backend_error(code: u16, resource: &str, name: &str, body: String) -> ApiError {
    match code {
        500 => return ApiError::internal(body),
        400 => return ApiError::bad_request(body),
        _ => {}
    }
    let (reason, message) = match code {
        404 => (
            "NotFound",
            "the server could not find the requested resource".to_string(),
        ),
        401 => (
            "Unauthorized",
            "the server has asked for the client to provide credentials".to_string(),
        ),
        403 => (
            "Forbidden",
            "the server does not allow access to the requested resource".to_string(),
        ),
        405 => (
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".to_string(),
        ),
        409 => ("Conflict", "the server reported a conflict".to_string()),
        422 => (
            "Invalid",
            "the server rejected our request due to an error in our request".to_string(),
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request".to_string(),
        ),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still \
             be processing the request"
                .to_string(),
        ),
        c if c >= 500 => (
            "InternalError",
            format!("an error on the server ({body:?}) has prevented the request from succeeding"),
        ),
        c => (
            "",
            format!(
                "the server responded with the status code {c} but did not return more information"
            ),
        ),
    };
    // Upstream's verb is empty here, hence the space after the parenthesis.
    let message = format!("{message} ( {resource} {name})");
    ApiError::from_status(Status {
        status: Some("Failure".to_string()),
        code: Some(i32::from(code)),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: Some(message),
        details: Some(StatusDetails {
            kind: Some(resource.to_string()),
            name: Some(name.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_as_upstream() {
        assert_eq!(split_scheme_name_port("n1"), Some(("", "n1", "")));
        assert_eq!(split_scheme_name_port("s:http"), Some(("", "s", "http")));
        assert_eq!(
            split_scheme_name_port("https:s:443"),
            Some(("https", "s", "443"))
        );
        assert_eq!(split_scheme_name_port("ftp:s:21"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
    }

    #[test]
    fn only_global_unicast_pod_ips_are_proxied() {
        assert!(is_global_unicast("10.1.2.3".parse().unwrap()));
        assert!(!is_global_unicast("127.0.0.1".parse().unwrap()));
        assert!(!is_global_unicast("169.254.1.1".parse().unwrap()));
        assert!(!is_global_unicast("fe80::1".parse().unwrap()));
        assert!(is_global_unicast("fd00::1".parse().unwrap()));
    }

    #[test]
    fn backend_errors_have_upstreams_shape() {
        let err = backend_error(404, "pods/log", "p", "nope".into());
        assert_eq!(err.code().as_u16(), 404);
        assert_eq!(err.reason(), "NotFound");
        assert_eq!(
            err.message(),
            "the server could not find the requested resource ( pods/log p)"
        );
        let err = backend_error(400, "pods/log", "p", "container c is waiting".into());
        assert_eq!(err.message(), "container c is waiting");
        let err = backend_error(502, "pods/log", "p", "bad".into());
        assert_eq!(err.reason(), "InternalError");
    }
}
