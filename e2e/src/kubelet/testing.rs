//! What the `kubelet_*` tests share beyond the processes: a poll with a hang guard that prints the
//! kubelet's log, and an admin client of the test's apiserver.

use crate::apiserver::ApiServer;
use crate::pki::Pki;
use std::path::Path;
use std::time::{Duration, Instant};

/// A hang guard for polls, not a timing assertion: pods on a loaded 2-core machine take seconds.
const PATIENCE: Duration = Duration::from_secs(120);

/// Polls `check` until it is Ok; past the hang guard, panics with the last answer and `logs()`.
pub async fn poll<T>(
    what: &str,
    logs: &dyn Fn() -> String,
    mut check: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => {
                panic!("timed out on {what}: {last}\n{}", logs())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A client of `api` as a `system:masters` user with a certificate from the test's `pki`; its
/// kubeconfig is left at `dir/admin.kubeconfig` for the real kubectl.
pub async fn admin_client(api: &ApiServer, pki: &Pki, dir: &Path) -> kube::Client {
    let (cert, key) = pki.issue_client("e2e-admin", &["system:masters"]);
    let kubeconfig = dir.join("admin.kubeconfig");
    crate::pki::write_cert_kubeconfig(
        &kubeconfig,
        &api.url(),
        &api.ca_file(),
        &cert,
        &key,
        "e2e-admin",
    );
    client_go_rs::config::load_client_config(Some(&kubeconfig), None, None)
        .await
        .expect("admin kubeconfig")
        .build_client()
        .expect("admin client")
}
