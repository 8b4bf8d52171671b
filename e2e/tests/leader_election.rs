//! `--leader-elect` for real: two schedulers (and two controller managers) against a real
//! apiserver; exactly one holds the Lease, and when it stops the other takes over.

use e2e::apiserver::{ApiServer, Backend};
use e2e::daemon::Daemon;
use e2e::{bin, free_port};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(30);

fn start(component: &str, dir: &Path, kubeconfig: &Path) -> Daemon {
    std::fs::create_dir_all(dir).unwrap();
    let args = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--secure-port={}", free_port()),
        "--bind-address=127.0.0.1".into(),
        "--leader-elect-lease-duration=3s".into(),
        "--leader-elect-renew-deadline=2s".into(),
        "--leader-elect-retry-period=200ms".into(),
    ];
    Daemon::start(&bin(component), &args, dir).unwrap()
}

/// The holder of `kube-system/<name>`, once there is one.
async fn holder(server: &ApiServer, name: &str) -> Option<String> {
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}");
    let (status, body) = e2e::https::get(server.addr(), &server.ca_file(), &path)
        .await
        .ok()?;
    if status != 200 {
        return None;
    }
    let lease: Value = serde_json::from_str(&body).ok()?;
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(String::from)
}

async fn wait_for_holder(server: &ApiServer, name: &str, not: Option<&str>) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(h) = holder(server, name).await
            && Some(h.as_str()) != not
        {
            return h;
        }
        assert!(Instant::now() < deadline, "no new holder of {name}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn hand_over(component: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let kubeconfig = dir.path().join("component.kubeconfig");
    e2e::kubectl::write_kubeconfig(&kubeconfig, &server.url(), &server.ca_file()).unwrap();
    let mut first = start(component, &dir.path().join("a"), &kubeconfig);
    let leader = wait_for_holder(&server, component, None).await;
    let mut second = start(component, &dir.path().join("b"), &kubeconfig);
    // The standby keeps campaigning while the leader renews: the holder stays.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        holder(&server, component).await.as_deref(),
        Some(leader.as_str())
    );
    assert!(
        second.try_status().is_none(),
        "the standby exited:\n{}",
        second.logs()
    );

    let status = first.terminate(Duration::from_secs(15)).unwrap();
    assert!(
        status.success(),
        "{component} exited with {status}:\n{}",
        first.logs()
    );
    let next = wait_for_holder(&server, component, Some(&leader)).await;
    assert_ne!(next, leader);
    assert!(second.terminate(Duration::from_secs(15)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn schedulers_hand_over_the_lease() {
    hand_over("kube-scheduler").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn controller_managers_hand_over_the_lease() {
    hand_over("kube-controller-manager").await;
}
