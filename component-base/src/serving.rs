//! HTTPS serving shared by every daemon (upstream's SecureServingOptions): the flags, the
//! serving certificate (given files, or a self-signed pair kept in `--cert-dir` or in memory),
//! and a hyper server speaking HTTP/1.1 and HTTP/2 that drains connections on shutdown.

use anyhow::{Context, Result, bail};
use clap::Args;
use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long a client has to finish the TLS handshake before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long in-flight requests may run once shutdown starts.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The secure serving flags. `PORT` is the component's default `--secure-port`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Secure serving flags")]
pub struct SecureServingOptions<const PORT: u16> {
    /// The IP address on which to listen for the --secure-port port. If blank or an unspecified
    /// address (0.0.0.0 or ::), all interfaces will be used.
    #[arg(long, value_name = "ip", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    pub bind_address: IpAddr,

    /// The port on which to serve HTTPS with authentication and authorization. If 0, don't
    /// serve HTTPS at all.
    #[arg(long, value_name = "int", default_value_t = PORT)]
    pub secure_port: u16,

    /// The directory where the TLS certs are located. If --tls-cert-file and
    /// --tls-private-key-file are provided, this flag will be ignored. If empty, a generated
    /// self-signed pair is kept in memory.
    #[arg(long, value_name = "string")]
    pub cert_dir: Option<PathBuf>,

    /// File containing the default x509 Certificate for HTTPS (CA cert, if any, concatenated
    /// after server cert). If HTTPS serving is enabled, and --tls-cert-file and
    /// --tls-private-key-file are not provided, a self-signed certificate and key are generated.
    #[arg(long, value_name = "string", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long, value_name = "string", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
}

/// A certificate chain and its key, ready for rustls.
pub struct ServingCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl<const PORT: u16> SecureServingOptions<PORT> {
    /// The address to listen on, or None when serving is disabled (`--secure-port=0`).
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        (self.secure_port != 0).then(|| SocketAddr::new(self.bind_address, self.secure_port))
    }

    /// Loads the serving certificate, generating a self-signed one named `pair_name` if none
    /// was given (kept in `--cert-dir` when set, so restarts present the same certificate).
    pub fn serving_cert(&self, pair_name: &str) -> Result<ServingCert> {
        if let (Some(cert), Some(key)) = (&self.tls_cert_file, &self.tls_private_key_file) {
            return load_pair(cert, key);
        }
        let hosts = self.certificate_hosts();
        match &self.cert_dir {
            Some(dir) => {
                let cert = dir.join(format!("{pair_name}.crt"));
                let key = dir.join(format!("{pair_name}.key"));
                if cert.exists() && key.exists() {
                    return load_pair(&cert, &key);
                }
                let (cert_pem, key_pem) = self_signed_pem(&hosts)?;
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating cert dir {}", dir.display()))?;
                write_private(&key, key_pem.as_bytes())?;
                std::fs::write(&cert, cert_pem.as_bytes())
                    .with_context(|| format!("writing {}", cert.display()))?;
                load_pair(&cert, &key)
            }
            None => {
                let (cert_pem, key_pem) = self_signed_pem(&hosts)?;
                parse_pair(
                    cert_pem.as_bytes(),
                    key_pem.as_bytes(),
                    "generated certificate",
                )
            }
        }
    }

    /// Binds the port and serves `service` over TLS until `shutdown`; `None` when serving is
    /// disabled (`--secure-port=0`).
    pub async fn start<S, B>(
        &self,
        pair_name: &str,
        service: S,
        shutdown: CancellationToken,
    ) -> Result<Option<RunningServer>>
    where
        S: hyper::service::Service<Request<Incoming>, Response = Response<B>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Some(addr) = self.listen_addr() else {
            return Ok(None);
        };
        let tls = tls_config(self.serving_cert(pair_name)?)?;
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("failed to listen on {addr}"))?;
        let server = serve(listener, Some(tls), service, shutdown)?;
        tracing::info!(address = %server.local_addr, "serving securely");
        Ok(Some(server))
    }

    fn certificate_hosts(&self) -> Vec<String> {
        let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        if !self.bind_address.is_unspecified() && !self.bind_address.is_loopback() {
            hosts.push(self.bind_address.to_string());
        }
        hosts
    }
}

fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(contents)
        .with_context(|| format!("writing {}", path.display()))
}

fn self_signed_pem(hosts: &[String]) -> Result<(String, String)> {
    let generated = rcgen::generate_simple_self_signed(hosts.to_vec())
        .context("generating a self-signed serving certificate")?;
    Ok((generated.cert.pem(), generated.signing_key.serialize_pem()))
}

fn load_pair(cert: &Path, key: &Path) -> Result<ServingCert> {
    let cert_pem = std::fs::read(cert)
        .with_context(|| format!("reading --tls-cert-file {}", cert.display()))?;
    let key_pem = std::fs::read(key)
        .with_context(|| format!("reading --tls-private-key-file {}", key.display()))?;
    parse_pair(&cert_pem, &key_pem, &cert.display().to_string())
}

fn parse_pair(cert_pem: &[u8], key_pem: &[u8], what: &str) -> Result<ServingCert> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing certificates in {what}"))?;
    if chain.is_empty() {
        bail!("no certificate found in {what}");
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .with_context(|| format!("parsing the private key for {what}"))?;
    Ok(ServingCert { chain, key })
}

/// A rustls server configuration offering HTTP/2 and HTTP/1.1 without client certificates.
pub fn tls_config(cert: ServingCert) -> Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("choosing TLS versions")?
        .with_no_client_auth()
        .with_single_cert(cert.chain, cert.key)
        .context("the serving certificate does not match its key")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A server accepting connections in the background.
pub struct RunningServer {
    /// The address actually bound (useful when the port was chosen by the OS).
    pub local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl RunningServer {
    /// Waits until the server has stopped accepting and drained its connections.
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Serves `service` on `listener` (over TLS when `tls` is given, plain HTTP otherwise, as the
/// kubelet's healthz port) until `shutdown` is cancelled, then stops accepting and gives open
/// connections up to 30 s to finish.
pub fn serve<S, B>(
    listener: TcpListener,
    tls: Option<Arc<ServerConfig>>,
    service: S,
    shutdown: CancellationToken,
) -> Result<RunningServer>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let local_addr = listener.local_addr().context("reading the bound address")?;
    let acceptor = tls.map(TlsAcceptor::from);
    let task = tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        let builder = auto::Builder::new(TokioExecutor::new());
        loop {
            let (stream, peer) = tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(conn) => conn,
                    Err(err) => {
                        // Running out of file descriptors is transient: back off, keep serving.
                        tracing::warn!(%err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            // Small writes (watch events, short responses) must not wait for the peer's delayed
            // ACK under Nagle's algorithm: that alone adds ~40 ms to a watch event.
            if let Err(err) = stream.set_nodelay(true) {
                tracing::debug!(%peer, %err, "setting TCP_NODELAY failed");
            }
            let acceptor = acceptor.clone();
            let service = service.clone();
            let builder = builder.clone();
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let result = match acceptor {
                    None => {
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        watcher.watch(conn.into_owned()).await
                    }
                    Some(acceptor) => {
                        let handshake =
                            tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                        let tls_stream = match handshake {
                            Ok(Ok(s)) => s,
                            Ok(Err(err)) => {
                                tracing::debug!(%peer, %err, "TLS handshake failed");
                                return;
                            }
                            Err(_) => return,
                        };
                        let conn = builder
                            .serve_connection_with_upgrades(TokioIo::new(tls_stream), service);
                        watcher.watch(conn.into_owned()).await
                    }
                };
                if let Err(err) = result {
                    tracing::debug!(%peer, err = %err, "connection ended with an error");
                }
            });
        }
        drop(listener);
        if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("connections still open after the drain timeout");
        }
    });
    Ok(RunningServer { local_addr, task })
}
