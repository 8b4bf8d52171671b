//! HTTPS serving shared by every daemon (upstream's SecureServingOptions): the flags, the
//! serving certificate (given files, or a self-signed pair kept in `--cert-dir` or in memory),
//! the TLS policy (`--tls-min-version`, `--tls-cipher-suites`, optional client certificates),
//! and a hyper server speaking HTTP/1.1 and HTTP/2 that drains connections on shutdown.

use anyhow::{Context, Result, bail};
use clap::Args;
use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
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

    #[command(flatten)]
    pub tls: TlsOptions,
}

/// The TLS policy flags every secure server shares.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsOptions {
    /// Minimum TLS version supported. Possible values: VersionTLS12, VersionTLS13 (VersionTLS10
    /// and VersionTLS11 are refused: this server does not implement them). Default VersionTLS12.
    #[arg(long = "tls-min-version", value_name = "string")]
    pub min_version: Option<String>,

    /// Comma-separated list of cipher suites for the server. If omitted, all of the following
    /// are used. Possible values: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
    /// TLS_CHACHA20_POLY1305_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    /// TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,
    /// TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    /// TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,
    /// TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256.
    #[arg(
        long = "tls-cipher-suites",
        value_name = "strings",
        value_delimiter = ','
    )]
    pub cipher_suites: Vec<String>,
}

/// The lowest TLS version a server accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TlsMinVersion {
    /// TLS 1.2 and 1.3 (upstream's default).
    #[default]
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

impl TlsMinVersion {
    /// Parses a `--tls-min-version` value; empty means the default.
    pub fn from_flag(name: &str) -> Result<Self> {
        match name {
            "" | "VersionTLS12" => Ok(TlsMinVersion::Tls12),
            "VersionTLS13" => Ok(TlsMinVersion::Tls13),
            // Upstream accepts these; rustls has no TLS 1.0/1.1 at all, so serving with them
            // would silently be a different policy than the one asked for.
            "VersionTLS10" | "VersionTLS11" => bail!(
                "--tls-min-version={name} is not supported: this server implements only \
                 VersionTLS12 and VersionTLS13"
            ),
            other => bail!("unknown tls version {other:?}"),
        }
    }

    fn protocol_versions(self) -> &'static [&'static SupportedProtocolVersion] {
        static TLS13_ONLY: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];
        match self {
            TlsMinVersion::Tls12 => rustls::ALL_VERSIONS,
            TlsMinVersion::Tls13 => TLS13_ONLY,
        }
    }
}

/// Upstream's cipher suite names that this server implements, as `--tls-cipher-suites` spells
/// them (IANA names, plus Go's legacy CHACHA20 names without `_SHA256`).
pub const SUPPORTED_CIPHER_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
];

/// Names upstream accepts (Go implements them) that rustls deliberately does not: CBC modes,
/// RSA key exchange, 3DES and RC4. Told apart from typos so the error says why.
const UNIMPLEMENTED_CIPHER_SUITES: &[&str] = &[
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

fn cipher_suite(name: &str) -> Option<SupportedCipherSuite> {
    use rustls::crypto::ring::cipher_suite as cs;
    Some(match name {
        "TLS_AES_128_GCM_SHA256" => cs::TLS13_AES_128_GCM_SHA256,
        "TLS_AES_256_GCM_SHA384" => cs::TLS13_AES_256_GCM_SHA384,
        "TLS_CHACHA20_POLY1305_SHA256" => cs::TLS13_CHACHA20_POLY1305_SHA256,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => {
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => {
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        }
        _ => return None,
    })
}

/// Resolves `--tls-cipher-suites` names, in the order given, without duplicates.
pub fn parse_cipher_suites(names: &[String]) -> Result<Vec<SupportedCipherSuite>> {
    let mut suites: Vec<SupportedCipherSuite> = Vec::with_capacity(names.len());
    for name in names {
        let name = name.trim();
        let Some(suite) = cipher_suite(name) else {
            if UNIMPLEMENTED_CIPHER_SUITES.contains(&name) {
                bail!(
                    "Cipher suite {name} not supported or doesn't exist: this server's TLS \
                     stack does not implement it (supported: {})",
                    SUPPORTED_CIPHER_SUITES.join(", ")
                );
            }
            bail!("Cipher suite {name} not supported or doesn't exist");
        };
        if !suites.iter().any(|s| s.suite() == suite.suite()) {
            suites.push(suite);
        }
    }
    Ok(suites)
}

/// What a TLS server accepts: protocol versions, cipher suites and, optionally, client
/// certificates. The secure serving flags give the first two (`SecureServingOptions::
/// tls_settings`); the client CA comes from the caller (the apiserver's `--client-ca-file`).
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    pub min_version: TlsMinVersion,
    /// Empty means every suite this server implements. Listing only TLS 1.2 suites leaves all
    /// TLS 1.3 suites enabled, as Go does (it ignores the list for TLS 1.3); listing any TLS 1.3
    /// suite restricts TLS 1.3 to the listed ones, which Go cannot do.
    pub cipher_suites: Vec<SupportedCipherSuite>,
    /// CAs whose client certificates are verified; empty means no client certificate is asked
    /// for.
    pub client_ca: Vec<CertificateDer<'static>>,
}

impl TlsSettings {
    /// Asks clients for a certificate and verifies any given one against the CAs in `pem`.
    /// `what` names the source in errors (e.g. the file).
    pub fn with_client_ca_pem(mut self, pem: &[u8], what: &str) -> Result<Self> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("parsing certificates in {what}"))?;
        if certs.is_empty() {
            bail!("no certificate found in {what}");
        }
        self.client_ca.extend(certs);
        Ok(self)
    }

    /// As `with_client_ca_pem`, reading the bundle from `path` (`--client-ca-file`).
    pub fn with_client_ca_file(self, path: &Path) -> Result<Self> {
        let pem = std::fs::read(path)
            .with_context(|| format!("reading client CA file {}", path.display()))?;
        self.with_client_ca_pem(&pem, &path.display().to_string())
    }

    fn provider(&self) -> rustls::crypto::CryptoProvider {
        let mut provider = rustls::crypto::ring::default_provider();
        if !self.cipher_suites.is_empty() {
            let is_tls13 = |s: &SupportedCipherSuite| s.version() == &rustls::version::TLS13;
            let lists_tls13 = self.cipher_suites.iter().any(is_tls13);
            let mut suites = self.cipher_suites.clone();
            if !lists_tls13 {
                suites.extend(provider.cipher_suites.iter().copied().filter(is_tls13));
            }
            provider.cipher_suites = suites;
        }
        provider
    }
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
        let tls = tls_config_with(self.serving_cert(pair_name)?, &self.tls_settings()?)?;
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("failed to listen on {addr}"))?;
        let server = serve(listener, Some(tls), service, shutdown)?;
        tracing::info!(address = %server.local_addr, "serving securely");
        Ok(Some(server))
    }

    /// The TLS policy the flags ask for, without client certificates; fails on unknown or
    /// unsupported `--tls-min-version` and `--tls-cipher-suites` values.
    pub fn tls_settings(&self) -> Result<TlsSettings> {
        Ok(TlsSettings {
            min_version: TlsMinVersion::from_flag(self.tls.min_version.as_deref().unwrap_or(""))?,
            cipher_suites: parse_cipher_suites(&self.tls.cipher_suites)?,
            client_ca: Vec::new(),
        })
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

/// A rustls server configuration offering HTTP/2 and HTTP/1.1 with the default policy (TLS 1.2
/// and 1.3, every implemented suite) and no client certificates.
pub fn tls_config(cert: ServingCert) -> Result<Arc<ServerConfig>> {
    tls_config_with(cert, &TlsSettings::default())
}

/// A rustls server configuration offering HTTP/2 and HTTP/1.1 under `settings`.
///
/// With a client CA, clients are asked for a certificate but may send none, so anonymous and
/// token clients still connect; [`serve`] hands a verified chain to the service as
/// [`PeerCertificates`]. Unlike upstream, which completes the handshake and answers 401 when
/// a presented certificate does not verify, rustls fails the handshake itself (an unknown CA,
/// an expired certificate, or an extended key usage without clientAuth).
pub fn tls_config_with(cert: ServingCert, settings: &TlsSettings) -> Result<Arc<ServerConfig>> {
    let provider = Arc::new(settings.provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(settings.min_version.protocol_versions())
        .context("no cipher suite of --tls-cipher-suites works with --tls-min-version")?;
    let builder = if settings.client_ca.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        for ca in &settings.client_ca {
            roots
                .add(ca.clone())
                .context("a client CA certificate is not a usable trust anchor")?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .context("building the client certificate verifier")?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut config = builder
        .with_single_cert(cert.chain, cert.key)
        .context("the serving certificate does not match its key")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The certificate chain a client presented on this request's TLS connection, leaf first,
/// already verified against the client CA. A request extension; absent when the client sent
/// no certificate or the connection is plain HTTP.
#[derive(Debug, Clone)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// The address of the peer a request came from. A request extension on every served request
/// (audit events record it among their source IPs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr(pub SocketAddr);

/// Puts one connection's client certificates and peer address on each of its requests: the
/// handshake is per connection, but authentication is per request.
#[derive(Clone)]
struct WithPeerCertificates<S> {
    inner: S,
    peer: Option<PeerCertificates>,
    remote: SocketAddr,
}

impl<S, B> hyper::service::Service<Request<B>> for WithPeerCertificates<S>
where
    S: hyper::service::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, mut req: Request<B>) -> Self::Future {
        if let Some(peer) = &self.peer {
            req.extensions_mut().insert(peer.clone());
        }
        req.extensions_mut().insert(RemoteAddr(self.remote));
        self.inner.call(req)
    }
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
                        let service = WithPeerCertificates {
                            inner: service,
                            peer: None,
                            remote: peer,
                        };
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
                        let certificates = tls_stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .filter(|chain| !chain.is_empty())
                            .map(|chain| PeerCertificates(Arc::new(chain.to_vec())));
                        let service = WithPeerCertificates {
                            inner: service,
                            peer: certificates,
                            remote: peer,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty, Full};
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    use rustls::pki_types::ServerName;
    use std::convert::Infallible;
    use tokio::net::TcpStream;
    use tokio_rustls::TlsConnector;

    struct Ca {
        cert: CertificateDer<'static>,
        pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    fn ca(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            cert: cert.der().clone(),
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    fn issue(ca: &Ca, cn: &str, sans: &[&str], eku: ExtendedKeyUsagePurpose) -> ServingCert {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![eku];
        let cert = params.signed_by(&key, &ca.issuer).unwrap().der().clone();
        ServingCert {
            chain: vec![cert],
            key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        }
    }

    fn server_cert(ca: &Ca) -> ServingCert {
        issue(
            ca,
            "server",
            &["localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// Answers with the DER of the client's leaf certificate, or `none`.
    async fn start(config: Arc<ServerConfig>) -> (RunningServer, CancellationToken) {
        let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
            let body = match req.extensions().get::<PeerCertificates>() {
                Some(peer) => peer.0[0].to_vec(),
                None => b"none".to_vec(),
            };
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let shutdown = CancellationToken::new();
        let server = serve(listener, Some(config), service, shutdown.clone()).unwrap();
        (server, shutdown)
    }

    fn client_config(
        server_ca: &Ca,
        versions: &[&'static SupportedProtocolVersion],
        client: Option<ServingCert>,
    ) -> rustls::ClientConfig {
        let mut roots = RootCertStore::empty();
        roots.add(server_ca.cert.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        match client {
            Some(cert) => builder.with_client_auth_cert(cert.chain, cert.key).unwrap(),
            None => builder.with_no_client_auth(),
        }
    }

    async fn handshake(
        addr: SocketAddr,
        config: rustls::ClientConfig,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(addr).await?;
        TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
    }

    async fn get(addr: SocketAddr, config: rustls::ClientConfig) -> Vec<u8> {
        let tls = handshake(addr, config).await.expect("handshake");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = Request::get("/").body(Empty::<Bytes>::new()).unwrap();
        let resp = sender.send_request(req).await.unwrap();
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec()
    }

    fn with_ca(ca: &Ca) -> TlsSettings {
        TlsSettings {
            client_ca: vec![ca.cert.clone()],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_verified_client_certificate_reaches_every_request_of_its_connection() {
        let ca = ca("ca");
        let config = tls_config_with(server_cert(&ca), &with_ca(&ca)).unwrap();
        let (server, shutdown) = start(config).await;
        let client = issue(&ca, "alice", &[], ExtendedKeyUsagePurpose::ClientAuth);
        let leaf = client.chain[0].to_vec();
        let cfg = client_config(&ca, rustls::ALL_VERSIONS, Some(client));

        let tls = handshake(server.local_addr, cfg).await.expect("handshake");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        for _ in 0..2 {
            let req = Request::get("/").body(Empty::<Bytes>::new()).unwrap();
            let resp = sender.send_request(req).await.unwrap();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body.as_ref(), leaf.as_slice());
        }
        shutdown.cancel();
        server.wait().await;
    }

    #[tokio::test]
    async fn a_client_without_a_certificate_still_connects() {
        let ca = ca("ca");
        let config = tls_config_with(server_cert(&ca), &with_ca(&ca)).unwrap();
        let (server, shutdown) = start(config).await;
        let body = get(
            server.local_addr,
            client_config(&ca, rustls::ALL_VERSIONS, None),
        )
        .await;
        assert_eq!(body, b"none");
        shutdown.cancel();
        server.wait().await;
    }

    #[tokio::test]
    async fn client_certificates_are_not_asked_for_without_a_client_ca() {
        let ca = ca("ca");
        let (server, shutdown) = start(tls_config(server_cert(&ca)).unwrap()).await;
        let client = issue(&ca, "alice", &[], ExtendedKeyUsagePurpose::ClientAuth);
        let body = get(
            server.local_addr,
            client_config(&ca, rustls::ALL_VERSIONS, Some(client)),
        )
        .await;
        assert_eq!(body, b"none");
        shutdown.cancel();
        server.wait().await;
    }

    #[tokio::test]
    async fn a_certificate_from_another_ca_fails_the_handshake() {
        let other = ca("other");
        let ca = ca("ca");
        let config = tls_config_with(server_cert(&ca), &with_ca(&ca)).unwrap();
        let (server, shutdown) = start(config).await;
        let client = issue(&other, "mallory", &[], ExtendedKeyUsagePurpose::ClientAuth);
        let cfg = client_config(&ca, rustls::ALL_VERSIONS, Some(client));
        // TLS 1.3 clients learn of the rejection on their first read, not in `connect`.
        let result = async {
            let mut tls = handshake(server.local_addr, cfg).await?;
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            tls.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await?;
            let mut buf = [0u8; 1];
            tls.read(&mut buf).await
        }
        .await;
        assert!(result.is_err(), "{result:?}");
        shutdown.cancel();
        server.wait().await;
    }

    #[tokio::test]
    async fn min_version_13_refuses_a_tls12_only_client() {
        let ca = ca("ca");
        let settings = TlsSettings {
            min_version: TlsMinVersion::Tls13,
            ..Default::default()
        };
        let (server, shutdown) = start(tls_config_with(server_cert(&ca), &settings).unwrap()).await;
        let tls12 = client_config(&ca, &[&rustls::version::TLS12], None);
        assert!(handshake(server.local_addr, tls12).await.is_err());
        let tls13 = client_config(&ca, &[&rustls::version::TLS13], None);
        let tls = handshake(server.local_addr, tls13).await.expect("TLS 1.3");
        assert_eq!(
            tls.get_ref().1.protocol_version(),
            Some(rustls::ProtocolVersion::TLSv1_3)
        );
        shutdown.cancel();
        server.wait().await;
    }

    async fn negotiated(
        addr: SocketAddr,
        ca: &Ca,
        version: &'static SupportedProtocolVersion,
    ) -> std::io::Result<rustls::CipherSuite> {
        let tls = handshake(addr, client_config(ca, &[version], None)).await?;
        Ok(tls.get_ref().1.negotiated_cipher_suite().unwrap().suite())
    }

    #[tokio::test]
    async fn listed_tls12_suites_restrict_tls12_and_leave_tls13_alone() {
        let ca = ca("ca");
        // Not the clients' first choice, so only the restriction can make it the one chosen.
        let names = ["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305".to_string()];
        let settings = TlsSettings {
            cipher_suites: parse_cipher_suites(&names).unwrap(),
            ..Default::default()
        };
        let (server, shutdown) = start(tls_config_with(server_cert(&ca), &settings).unwrap()).await;
        let addr = server.local_addr;
        assert_eq!(
            negotiated(addr, &ca, &rustls::version::TLS12)
                .await
                .unwrap(),
            rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        );
        assert_eq!(
            negotiated(addr, &ca, &rustls::version::TLS13)
                .await
                .unwrap(),
            rustls::CipherSuite::TLS13_AES_256_GCM_SHA384
        );
        shutdown.cancel();
        server.wait().await;
    }

    #[tokio::test]
    async fn listed_tls13_suites_restrict_tls13() {
        let ca = ca("ca");
        let names = ["TLS_CHACHA20_POLY1305_SHA256".to_string()];
        let settings = TlsSettings {
            cipher_suites: parse_cipher_suites(&names).unwrap(),
            ..Default::default()
        };
        let (server, shutdown) = start(tls_config_with(server_cert(&ca), &settings).unwrap()).await;
        let addr = server.local_addr;
        assert_eq!(
            negotiated(addr, &ca, &rustls::version::TLS13)
                .await
                .unwrap(),
            rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
        );
        assert!(
            negotiated(addr, &ca, &rustls::version::TLS12)
                .await
                .is_err(),
            "no TLS 1.2 suite was listed"
        );
        shutdown.cancel();
        server.wait().await;
    }

    #[test]
    fn flag_values_are_checked() {
        let err = parse_cipher_suites(&["TLS_BOGUS".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cipher suite TLS_BOGUS not supported or doesn't exist"
        );
        let err = parse_cipher_suites(&["TLS_RSA_WITH_AES_128_CBC_SHA".into()]).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "Cipher suite TLS_RSA_WITH_AES_128_CBC_SHA not supported or doesn't exist: this \
                 server's TLS stack does not implement it"
            ),
            "{err}"
        );
        let legacy = parse_cipher_suites(&[
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305".into(),
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256".into(),
        ])
        .unwrap();
        assert_eq!(legacy.len(), 1, "the legacy alias is the same suite");
        for name in SUPPORTED_CIPHER_SUITES {
            assert!(cipher_suite(name).is_some(), "{name}");
        }

        assert_eq!(
            TlsMinVersion::from_flag("VersionTLS14")
                .unwrap_err()
                .to_string(),
            "unknown tls version \"VersionTLS14\""
        );
        assert!(
            TlsMinVersion::from_flag("VersionTLS11")
                .unwrap_err()
                .to_string()
                .contains("--tls-min-version=VersionTLS11 is not supported")
        );
        assert_eq!(TlsMinVersion::from_flag("").unwrap(), TlsMinVersion::Tls12);
    }

    #[test]
    fn the_flags_parse_into_settings() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cmd {
            #[command(flatten)]
            serving: SecureServingOptions<443>,
        }
        let cmd = Cmd::try_parse_from([
            "x",
            "--tls-min-version=VersionTLS13",
            "--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
        ])
        .unwrap();
        let settings = cmd.serving.tls_settings().unwrap();
        assert_eq!(settings.min_version, TlsMinVersion::Tls13);
        assert_eq!(settings.cipher_suites.len(), 2);
        assert!(settings.client_ca.is_empty());

        let cmd = Cmd::try_parse_from(["x", "--tls-cipher-suites=NOPE"]).unwrap();
        assert!(cmd.serving.tls_settings().is_err());
    }

    #[test]
    fn a_client_ca_bundle_must_hold_a_certificate() {
        let err = TlsSettings::default()
            .with_client_ca_pem(b"not pem", "ca.crt")
            .unwrap_err();
        assert_eq!(err.to_string(), "no certificate found in ca.crt");
        let (a, b) = (ca("a"), ca("b"));
        let bundle = format!("{}{}", a.pem, b.pem);
        let settings = TlsSettings::default()
            .with_client_ca_pem(bundle.as_bytes(), "ca.crt")
            .unwrap();
        assert_eq!(settings.client_ca, vec![a.cert, b.cert]);
    }
}
