//! A one-request HTTP/1.1 client for probes and the manifest URL: plain or TLS without
//! certificate verification (upstream's probes use `InsecureSkipVerify`), a deadline, a body
//! read up to a limit.

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// One response: its status, headers and (possibly truncated) body.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Accepts any server certificate, still checking the handshake's signatures.
#[derive(Debug)]
struct AnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn insecure_tls() -> anyhow::Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

async fn send<S>(io: S, req: Request<Empty<Bytes>>, body_limit: usize) -> anyhow::Result<Response>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .context("HTTP handshake failed")?;
    let conn = tokio::spawn(conn);
    let resp = sender.send_request(req).await;
    let result = async {
        let resp = resp?;
        let (parts, body) = resp.into_parts();
        // A body larger than the limit is cut, not an error: probes only show its start.
        let mut body_bytes = Vec::new();
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| anyhow::anyhow!("reading the body: {e}"))?;
            if let Ok(data) = frame.into_data() {
                let room = body_limit.saturating_sub(body_bytes.len());
                body_bytes.extend_from_slice(&data[..data.len().min(room)]);
                if body_bytes.len() >= body_limit {
                    break;
                }
            }
        }
        Ok::<_, anyhow::Error>(Response {
            status: parts.status,
            headers: parts.headers,
            body: Bytes::from(body_bytes),
        })
    }
    .await;
    conn.abort();
    result
}

/// Sends one GET to an absolute `http://` or `https://` URL within `timeout`.
pub async fn get(
    uri: &Uri,
    headers: &[(String, String)],
    timeout: Duration,
    body_limit: usize,
) -> anyhow::Result<Response> {
    tokio::time::timeout(timeout, get_inner(uri, headers, body_limit))
        .await
        .map_err(|_| {
            anyhow::anyhow!("Get {uri:?}: context deadline exceeded (timeout {timeout:?})")
        })?
}

async fn get_inner(
    uri: &Uri,
    headers: &[(String, String)],
    body_limit: usize,
) -> anyhow::Result<Response> {
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        other => bail!("unsupported URL scheme {other:?} in {uri}"),
    };
    let host = uri.host().context("URL without a host")?;
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    let stream = TcpStream::connect((bare_host, port))
        .await
        .with_context(|| format!("dial tcp {host}:{port}"))?;
    let mut req = Request::get(uri.path_and_query().map_or("/", |p| p.as_str()));
    let mut has_host = false;
    let mut has_ua = false;
    let mut has_accept = false;
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .with_context(|| format!("bad header name {k:?}"))?;
        let value = HeaderValue::from_str(v).with_context(|| format!("bad value of header {k}"))?;
        has_host |= name == http::header::HOST;
        has_ua |= name == http::header::USER_AGENT;
        has_accept |= name == http::header::ACCEPT;
        req = req.header(name, value);
    }
    if !has_host {
        let authority = uri.authority().map_or(host, |a| a.as_str());
        req = req.header(http::header::HOST, authority);
    }
    if !has_ua {
        req = req.header(http::header::USER_AGENT, "kube-probe/1.33");
    }
    if !has_accept {
        req = req.header(http::header::ACCEPT, "*/*");
    }
    let req = req.body(Empty::new()).context("building the request")?;
    if tls {
        let name = ServerName::try_from(bare_host.to_string()).context("bad TLS server name")?;
        let stream = tokio_rustls::TlsConnector::from(insecure_tls()?)
            .connect(name, stream)
            .await
            .context("TLS handshake failed")?;
        send(stream, req, body_limit).await
    } else {
        send(stream, req, body_limit).await
    }
}
