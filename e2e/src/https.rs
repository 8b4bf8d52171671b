//! A minimal HTTPS GET for tests, trusting exactly the certificate the daemon generated.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// GETs `path` from `addr`, verifying the server against the PEM certificate in `ca_file`.
pub async fn get(addr: SocketAddr, ca_file: &Path, path: &str) -> anyhow::Result<(u16, String)> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    let request = hyper::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
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
