//! Each daemon started as a real process on free ports: it serves its health, metrics, configz
//! and version endpoints over HTTPS with the certificate it generated, fails readiness checks it
//! does not have, and exits 0 on SIGTERM. The kubelet is not here: it needs an apiserver and a
//! container runtime to start, so `kubelet_env.rs` (its harness start, /healthz on the plain
//! healthz port, kill, restart, clean stop) and `kubelet_server.rs` (its secure endpoints) cover it.

use e2e::daemon::Daemon;
use e2e::{bin, free_port, https};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

const STARTUP: Duration = Duration::from_secs(20);
const GRACE: Duration = Duration::from_secs(15);

struct Case {
    binary: &'static str,
    /// File name of the generated certificate inside the cert dir.
    cert: &'static str,
    /// The configz key the component publishes, if it has configz.
    configz: Option<&'static str>,
    args: fn(port: u16, cert_dir: &str) -> Vec<String>,
}

const CASES: &[Case] = &[
    Case {
        binary: "kube-apiserver",
        cert: "apiserver.crt",
        configz: None,
        args: |port, dir| {
            vec![
                format!("--secure-port={port}"),
                "--bind-address=127.0.0.1".into(),
                format!("--cert-dir={dir}"),
            ]
        },
    },
    Case {
        binary: "kube-scheduler",
        cert: "kube-scheduler.crt",
        configz: Some("componentconfig"),
        args: |port, dir| {
            vec![
                format!("--secure-port={port}"),
                "--bind-address=127.0.0.1".into(),
                format!("--cert-dir={dir}"),
                "--v=2".into(),
                // No apiserver here (the scheduler keeps waiting for its informers to sync);
                // leader election is tested in leader_election.rs.
                "--master=https://127.0.0.1:1".into(),
                "--leader-elect=false".into(),
            ]
        },
    },
    Case {
        binary: "kube-controller-manager",
        cert: "kube-controller-manager.crt",
        configz: Some("kubecontrollermanager.config.k8s.io"),
        args: |port, dir| {
            vec![
                format!("--secure-port={port}"),
                "--bind-address=127.0.0.1".into(),
                format!("--cert-dir={dir}"),
                "--controllers=*,-job".into(),
                // No apiserver here: the controllers keep waiting for their informers.
                "--master=https://127.0.0.1:1".into(),
                "--leader-elect=false".into(),
            ]
        },
    },
];

#[tokio::test]
async fn daemons_serve_their_endpoints_and_stop_on_sigterm() {
    for case in CASES {
        let dir = tempfile::tempdir().unwrap();
        let cert_dir = dir.path().join("certs");
        let port = free_port();
        let args = (case.args)(port, cert_dir.to_str().unwrap());
        let mut daemon = Daemon::start(&bin(case.binary), &args, dir.path()).unwrap();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let ca: PathBuf = cert_dir.join(case.cert);

        let body = https::wait_ok(addr, &ca, "/healthz", STARTUP)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:#}\n{}", case.binary, daemon.logs()));
        assert_eq!(body, "ok", "{}", case.binary);
        for path in ["/livez", "/readyz", "/healthz/ping"] {
            assert_eq!(
                https::get(addr, &ca, path).await.unwrap(),
                (200, "ok".into()),
                "{} {path}",
                case.binary
            );
        }
        let (status, body) = https::get(addr, &ca, "/readyz?verbose").await.unwrap();
        assert_eq!(status, 200);
        assert!(
            body.contains("[+]shutdown ok") && body.ends_with("readyz check passed\n"),
            "{body}"
        );
        assert_eq!(
            https::get(addr, &ca, "/healthz/nonexistent")
                .await
                .unwrap()
                .0,
            404
        );

        let (status, metrics) = https::get(addr, &ca, "/metrics").await.unwrap();
        assert_eq!(status, 200);
        assert!(
            metrics.contains("kubernetes_build_info{"),
            "{}: {metrics}",
            case.binary
        );

        let (_, version) = https::get(addr, &ca, "/version").await.unwrap();
        let version: serde_json::Value = serde_json::from_str(&version).unwrap();
        assert_eq!(version["gitVersion"], "v1.33.0");

        if let Some(key) = case.configz {
            let (status, configz) = https::get(addr, &ca, "/configz").await.unwrap();
            assert_eq!(status, 200);
            let configz: serde_json::Value = serde_json::from_str(&configz).unwrap();
            assert!(
                configz.get(key).is_some(),
                "{}: configz lacks {key}: {configz}",
                case.binary
            );
        }

        let status = daemon
            .terminate(GRACE)
            .unwrap_or_else(|e| panic!("{e:#}\n{}", daemon.logs()));
        assert!(
            status.success(),
            "{} exited with {status} after SIGTERM\n{}",
            case.binary,
            daemon.logs()
        );
        assert!(
            https::get(addr, &ca, "/healthz").await.is_err(),
            "{} still serving after exit",
            case.binary
        );
    }
}

#[tokio::test]
async fn controller_manager_configz_shows_resolved_controllers() {
    let dir = tempfile::tempdir().unwrap();
    let cert_dir = dir.path().join("certs");
    let port = free_port();
    let args = vec![
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".into(),
        format!("--cert-dir={}", cert_dir.display()),
        "--controllers=replicaset,garbagecollector,-garbagecollector,tokencleaner".into(),
        "--master=https://127.0.0.1:1".into(),
        "--leader-elect=false".into(),
    ];
    let mut daemon = Daemon::start(&bin("kube-controller-manager"), &args, dir.path()).unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let ca = cert_dir.join("kube-controller-manager.crt");
    https::wait_ok(addr, &ca, "/healthz", STARTUP)
        .await
        .unwrap();
    let (_, configz) = https::get(addr, &ca, "/configz").await.unwrap();
    let configz: serde_json::Value = serde_json::from_str(&configz).unwrap();
    assert_eq!(
        configz["kubecontrollermanager.config.k8s.io"]["Generic"]["Controllers"],
        serde_json::json!(["replicaset-controller", "token-cleaner-controller"])
    );
    assert!(daemon.terminate(GRACE).unwrap().success());
}
