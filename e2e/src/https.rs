//! Minimal HTTPS requests for tests, trusting exactly the certificate the daemon generated.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The HTTP version a [`Conn`] speaks (negotiated with ALPN for HTTP/2, as kubectl does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http1,
    Http2,
}

/// A TLS connection to `addr` verified against the PEM certificate in `ca_file`, offering the
/// `alpn` protocols; Nagle is off so small requests are not held back.
pub async fn tls(
    addr: SocketAddr,
    ca_file: &Path,
    alpn: &[&[u8]],
) -> anyhow::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    Ok(TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?)
}

enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    Http2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// One client connection that can carry several requests, one after the other.
pub struct Conn {
    sender: Sender,
}

impl Conn {
    /// Connects to `addr`, verifying the server against the PEM certificate in `ca_file`.
    pub async fn open(addr: SocketAddr, ca_file: &Path, version: Version) -> anyhow::Result<Self> {
        let sender = match version {
            Version::Http1 => {
                let io = TokioIo::new(tls(addr, ca_file, &[b"http/1.1"]).await?);
                let (sender, conn) = hyper::client::conn::http1::handshake(io).await?;
                tokio::spawn(conn);
                Sender::Http1(sender)
            }
            Version::Http2 => {
                let stream = tls(addr, ca_file, &[b"h2"]).await?;
                anyhow::ensure!(
                    stream.get_ref().1.alpn_protocol() == Some(b"h2"),
                    "the server did not negotiate h2"
                );
                let (sender, conn) = hyper::client::conn::http2::handshake(
                    TokioExecutor::new(),
                    TokioIo::new(stream),
                )
                .await?;
                tokio::spawn(conn);
                Sender::Http2(sender)
            }
        };
        Ok(Self { sender })
    }

    /// Sends one request with the bearer token `e2e`; `content_type` is set when there is a
    /// body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<Bytes>,
    ) -> anyhow::Result<(u16, String)> {
        self.send_as(Some("e2e"), method, path, content_type, body)
            .await
    }

    /// Sends one request with the bearer token `token`, or without credentials.
    pub async fn send_as(
        &mut self,
        token: Option<&str>,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<Bytes>,
    ) -> anyhow::Result<(u16, String)> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("accept", "application/json");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = match &mut self.sender {
            Sender::Http1(sender) => {
                let request = request
                    .header("host", "localhost")
                    .body(Full::new(body.into()))?;
                sender.send_request(request).await?
            }
            Sender::Http2(sender) => {
                let request = request
                    .uri(format!("https://localhost{path}"))
                    .body(Full::new(body.into()))?;
                sender.send_request(request).await?
            }
        };
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// Sends one request on a new HTTP/1.1 connection.
pub async fn request(
    addr: SocketAddr,
    ca_file: &Path,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Bytes>,
) -> anyhow::Result<(u16, String)> {
    Conn::open(addr, ca_file, Version::Http1)
        .await?
        .send(method, path, content_type, body)
        .await
}

/// GETs `path` as the holder of `token` (anonymously with None).
pub async fn get_as(
    addr: SocketAddr,
    ca_file: &Path,
    token: Option<&str>,
    path: &str,
) -> anyhow::Result<(u16, String)> {
    Conn::open(addr, ca_file, Version::Http1)
        .await?
        .send_as(token, "GET", path, None, Bytes::new())
        .await
}

/// GETs `path` from `addr`, verifying the server against the PEM certificate in `ca_file`.
pub async fn get(addr: SocketAddr, ca_file: &Path, path: &str) -> anyhow::Result<(u16, String)> {
    request(addr, ca_file, "GET", path, None, Bytes::new()).await
}

/// POSTs a JSON `body` to `path`.
pub async fn post(
    addr: SocketAddr,
    ca_file: &Path,
    path: &str,
    body: impl Into<Bytes>,
) -> anyhow::Result<(u16, String)> {
    request(addr, ca_file, "POST", path, Some("application/json"), body).await
}

/// Retries [`get`] until the certificate exists and `path` answers 200, or `timeout` passes.
pub async fn wait_ok(
    addr: SocketAddr,
    ca_file: &Path,
    path: &str,
    timeout: Duration,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match get(addr, ca_file, path).await {
            Ok((200, body)) => return Ok(body),
            Ok((status, body)) => format!("status {status}: {body}"),
            Err(err) => format!("{err:#}"),
        };
        if Instant::now() > deadline {
            anyhow::bail!("{addr}{path} not ok after {timeout:?}: {last}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
