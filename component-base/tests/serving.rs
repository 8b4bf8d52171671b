//! Serves the debug endpoints over real TLS on a loopback port and talks to them with a TLS
//! client over HTTP/1.1 and HTTP/2, as kubectl and Prometheus would.

use bytes::Bytes;
use component_base::debug::DebugHandlers;
use component_base::healthz::HealthCheck;
use component_base::serving::{SecureServingOptions, serve, tls_config};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

fn options(cert_dir: Option<std::path::PathBuf>) -> SecureServingOptions<10259> {
    SecureServingOptions {
        bind_address: "127.0.0.1".parse().unwrap(),
        secure_port: 10259,
        cert_dir,
        tls_cert_file: None,
        tls_private_key_file: None,
        tls: Default::default(),
    }
}

async fn connect(
    addr: SocketAddr,
    root: &CertificateDer<'static>,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

async fn get_h1(addr: SocketAddr, root: &CertificateDer<'static>, path: &str) -> (u16, String) {
    let tls = connect(addr, root, b"http/1.1").await;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn get_h2(addr: SocketAddr, root: &CertificateDer<'static>, path: &str) -> (u16, String) {
    let tls = connect(addr, root, b"h2").await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::get(format!("https://localhost{path}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn serves_health_metrics_configz_version_over_h1_and_h2() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(Some(dir.path().join("certs")));
    let cert = opts.serving_cert("kube-scheduler").unwrap();
    let root = cert.chain[0].clone();
    let handlers = DebugHandlers::default();
    handlers
        .health
        .readyz
        .add(HealthCheck::new("never-ready", || async {
            Err("no".to_string())
        }));
    handlers.configz.set(
        "kubescheduler.config.k8s.io",
        serde_json::json!({"parallelism": 16}),
    );

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let shutdown = CancellationToken::new();
    let server = serve(
        listener,
        Some(tls_config(cert).unwrap()),
        handlers.clone().service(),
        shutdown.clone(),
    )
    .unwrap();
    let addr = server.local_addr;

    assert_eq!(get_h1(addr, &root, "/healthz").await, (200, "ok".into()));
    assert_eq!(get_h2(addr, &root, "/livez").await, (200, "ok".into()));
    let (status, body) = get_h2(addr, &root, "/readyz?verbose").await;
    assert_eq!(status, 500);
    assert!(
        body.contains("[-]never-ready failed: reason withheld"),
        "{body}"
    );

    let (status, body) = get_h1(addr, &root, "/version").await;
    assert_eq!(status, 200);
    let version: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(version["gitVersion"], "v1.33.0");

    let (_, body) = get_h2(addr, &root, "/configz").await;
    let configz: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(configz["kubescheduler.config.k8s.io"]["parallelism"], 16);

    let (status, body) = get_h1(addr, &root, "/metrics").await;
    assert_eq!(status, 200);
    assert!(body.contains("kubernetes_build_info"), "{body}");
    assert_eq!(get_h1(addr, &root, "/nope").await.0, 404);

    shutdown.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(10), server.wait())
        .await
        .expect("server stops after shutdown");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}

#[test]
fn self_signed_pair_is_kept_in_cert_dir_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(Some(dir.path().to_path_buf()));
    let first = opts.serving_cert("kube-controller-manager").unwrap();
    assert!(dir.path().join("kube-controller-manager.crt").exists());
    assert!(dir.path().join("kube-controller-manager.key").exists());
    let second = opts.serving_cert("kube-controller-manager").unwrap();
    assert_eq!(first.chain, second.chain);
    // Without a cert dir each start generates a fresh pair.
    let a = options(None).serving_cert("x").unwrap();
    let b = options(None).serving_cert("x").unwrap();
    assert_ne!(a.chain, b.chain);
}

#[test]
fn bad_certificate_files_are_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("tls.crt");
    let key = dir.path().join("tls.key");
    std::fs::write(&cert, "not a certificate").unwrap();
    std::fs::write(&key, "not a key").unwrap();
    let mut opts = options(None);
    opts.tls_cert_file = Some(cert);
    opts.tls_private_key_file = Some(key);
    let err = opts.serving_cert("x").err().expect("garbage accepted");
    assert!(format!("{err:#}").contains("tls.crt"), "{err:#}");
    opts.tls_cert_file = Some(dir.path().join("missing.crt"));
    let err = opts.serving_cert("x").err().expect("missing file accepted");
    assert!(format!("{err:#}").contains("--tls-cert-file"), "{err:#}");
}
