//! The real upstream kubectl (/usr/bin/kubectl, the compatibility oracle) and ours, against our
//! apiserver started as a real process.

use e2e::daemon::Daemon;
use e2e::{bin, free_port, https};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const UPSTREAM_KUBECTL: &str = "/usr/bin/kubectl";

fn kubectl(binary: &Path, server: &str) -> (bool, String, String) {
    let out = Command::new(binary)
        .args([
            &format!("--server={server}"),
            "--insecure-skip-tls-verify",
            "--token=e2e",
            "version",
        ])
        .env("KUBECONFIG", "/nonexistent")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn real_and_our_kubectl_read_the_server_version() {
    assert!(
        Path::new(UPSTREAM_KUBECTL).exists(),
        "{UPSTREAM_KUBECTL} (the upstream kubectl) is required by this test"
    );
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cert_dir = dir.path().join("certs");
    let args = vec![
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".into(),
        format!("--cert-dir={}", cert_dir.display()),
    ];
    let mut apiserver = Daemon::start(&bin("kube-apiserver"), &args, dir.path()).unwrap();
    https::wait_ok(
        ([127, 0, 0, 1], port).into(),
        &cert_dir.join("apiserver.crt"),
        "/readyz",
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    let server = format!("https://127.0.0.1:{port}");

    let (ok, stdout, stderr) = kubectl(Path::new(UPSTREAM_KUBECTL), &server);
    assert!(
        ok,
        "upstream kubectl version failed: {stderr}\n{}",
        apiserver.logs()
    );
    assert!(stdout.contains("Server Version: v1.33.0"), "{stdout}");
    // The dispatcher picks the kubectl matching our /version: it must be 1.33.
    assert!(stdout.contains("Client Version: v1.33"), "{stdout}");

    let (ok, stdout, stderr) = kubectl(&bin("kubectl"), &server);
    assert!(ok, "our kubectl version failed: {stderr}");
    assert_eq!(stdout, "Client Version: v1.33.0\nServer Version: v1.33.0\n");

    assert!(
        apiserver
            .terminate(Duration::from_secs(15))
            .unwrap()
            .success()
    );

    let (ok, _, stderr) = kubectl(&bin("kubectl"), &server);
    assert!(!ok, "kubectl version succeeded with the server gone");
    assert!(
        stderr.contains(&format!(
            "The connection to the server 127.0.0.1:{port} was refused"
        )),
        "{stderr}"
    );
}
