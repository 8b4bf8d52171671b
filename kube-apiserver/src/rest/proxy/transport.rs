//! Sending a proxied request to its backend over HTTP/1.1 (plain or TLS) and handing back the
//! response as it streams; an upgrade answered with 101 is spliced both ways.

use crate::http::response::{Body, BoxError};
use bytes::{Buf, Bytes};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Body as HttpBody;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::either::Either;

/// Where a proxied request goes.
#[derive(Clone)]
pub struct Target {
    /// `None` for plain HTTP.
    pub tls: Option<Arc<ClientConfig>>,
    pub host: String,
    pub port: u16,
    /// Path and query sent to the backend.
    pub path_and_query: String,
    /// Dial and handshake timeout.
    pub timeout: Duration,
}

impl Target {
    /// `host:port`, IPv6 hosts in brackets (Go's `net.JoinHostPort`).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The URL, for error messages.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority(), self.path_and_query)
    }
}

/// Headers that describe one hop and are not forwarded (RFC 7230 6.1), plus the caller's
/// credentials, which the apiserver consumed and must not hand to the backend.
const NOT_FORWARDED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "authorization",
];

/// Whether the request asks to switch protocols (`Connection: Upgrade` and an `Upgrade`).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

fn forwarded_headers(from: &HeaderMap, upgrade: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in from {
        let n = name.as_str();
        if n == "host" || n.starts_with("impersonate-") {
            continue;
        }
        if NOT_FORWARDED.contains(&n) && !(upgrade && matches!(n, "connection" | "upgrade")) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

async fn connect(
    target: &Target,
) -> Result<Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>, String> {
    let dial = async {
        let tcp = TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| format!("dial tcp {}: {e}", target.authority()))?;
        let _ = tcp.set_nodelay(true);
        match &target.tls {
            None => Ok(Either::Left(tcp)),
            Some(tls) => {
                let host = target.host.trim_start_matches('[').trim_end_matches(']');
                let name = ServerName::try_from(host.to_string())
                    .map_err(|e| format!("invalid server name {host:?}: {e}"))?;
                let stream = TlsConnector::from(tls.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("tls: {e}"))?;
                Ok(Either::Right(stream))
            }
        }
    };
    tokio::time::timeout(target.timeout, dial)
        .await
        .map_err(|_| format!("dial tcp {}: i/o timeout", target.authority()))?
}

/// Sends `req` (method, headers and body) to `target` and returns the backend's response
/// with its body streaming; the error is why the backend could not be reached.
pub async fn forward<B>(
    target: &Target,
    mut req: Request<B>,
) -> Result<Response<hyper::body::Incoming>, String>
where
    B: HttpBody + Send + 'static,
    B::Error: Into<BoxError>,
{
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let body = body
        .map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(Into::<BoxError>::into)
        .boxed_unsync();
    let mut out = Request::builder()
        .method(parts.method)
        .uri(target.path_and_query.as_str())
        .body(body)
        .map_err(|e| e.to_string())?;
    *out.headers_mut() = forwarded_headers(&parts.headers, upgrade);
    if let Ok(host) = HeaderValue::from_str(&target.authority()) {
        out.headers_mut().insert(header::HOST, host);
    }
    let stream = connect(target).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake::<
        _,
        http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>,
    >(TokioIo::new(stream))
    .await
    .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "proxied connection ended");
        }
    });
    let mut response = sender.send_request(out).await.map_err(|e| e.to_string())?;
    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let backend_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            let (client, backend) = match tokio::try_join!(client_upgrade, backend_upgrade) {
                Ok(both) => both,
                Err(e) => {
                    tracing::debug!(error = %e, "upgrade of a proxied connection failed");
                    return;
                }
            };
            let mut client = TokioIo::new(client);
            let mut backend = TokioIo::new(backend);
            if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
                tracing::debug!(error = %e, "spliced connection ended");
            }
        });
    }
    Ok(response)
}

/// The backend's response for the client: hop-by-hop headers dropped (a 101 keeps its
/// `Connection`/`Upgrade`), the body streamed as it arrives.
pub fn relay(response: Response<hyper::body::Incoming>) -> Response<Body> {
    let switching = response.status() == StatusCode::SWITCHING_PROTOCOLS;
    let (parts, body) = response.into_parts();
    let mut out = Response::new(if switching {
        crate::http::response::empty()
    } else {
        body.map_err(|e| Box::new(e) as BoxError).boxed_unsync()
    });
    *out.status_mut() = parts.status;
    *out.headers_mut() = forwarded_headers(&parts.headers, switching);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_and_credentials_are_dropped() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        h.insert(header::CONNECTION, "Upgrade".parse().unwrap());
        h.insert(header::UPGRADE, "websocket".parse().unwrap());
        h.insert("impersonate-user", "bob".parse().unwrap());
        h.insert(
            "sec-websocket-protocol",
            "v5.channel.k8s.io".parse().unwrap(),
        );
        h.insert(
            "x-stream-protocol-version",
            "v4.channel.k8s.io".parse().unwrap(),
        );
        assert!(is_upgrade(&h));
        let plain = forwarded_headers(&h, false);
        let names: Vec<&str> = plain.keys().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(plain.contains_key("sec-websocket-protocol"));
        let upgraded = forwarded_headers(&h, true);
        assert!(upgraded.contains_key(header::UPGRADE));
        assert!(upgraded.contains_key(header::CONNECTION));
        assert!(!upgraded.contains_key(header::AUTHORIZATION));
    }

    #[test]
    fn authority_brackets_ipv6() {
        let t = Target {
            tls: None,
            host: "fd00::1".into(),
            port: 10250,
            path_and_query: "/healthz".into(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(t.url(), "http://[fd00::1]:10250/healthz");
    }
}
