//! The official Kubernetes Python client (pip `kubernetes`, in a venv the test creates once under
//! target/e2e-venv) drives our apiserver: e2e/python/client_e2e.py creates, lists, watches
//! (resuming from resourceVersions) and deletes ConfigMaps and Pods.

use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::write_kubeconfig;
use e2e::python;
use std::time::Duration;

async fn python_client(backend: Backend) {
    let python = python::venv_python().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), backend)
        .await
        .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    write_kubeconfig(&kubeconfig, &server.url(), &server.ca_file()).unwrap();

    let (ok, stdout, stderr) = python::run_script(
        &python,
        &python::script("client_e2e.py"),
        &[&kubeconfig.display().to_string()],
        &[],
        Duration::from_secs(120),
    )
    .unwrap();
    assert!(
        ok && stdout.ends_with("OK\n"),
        "client_e2e.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    // What the script left, seen from outside it: its namespace, and no ConfigMaps or Pods.
    let ns = server.get_json("/api/v1/namespaces/py-e2e").await;
    assert_eq!(ns["status"]["phase"], "Active", "{ns}");
    for path in [
        "/api/v1/namespaces/py-e2e/configmaps",
        "/api/v1/namespaces/py-e2e/pods",
    ] {
        let list = server.get_json(path).await;
        assert_eq!(list["items"], serde_json::json!([]), "{path}: {list}");
    }
    drop(server);
    drop(dir);
}

#[tokio::test]
async fn python_client_on_the_embedded_store() {
    python_client(Backend::Embedded).await;
}

#[tokio::test]
async fn python_client_on_etcd() {
    python_client(Backend::Etcd).await;
}
