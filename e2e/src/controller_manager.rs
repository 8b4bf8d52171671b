//! Our kube-controller-manager started as a real process against a test's apiserver, and what
//! its tests need beside it: no kubelet runs, so tests play the kubelet by setting pod status.

use crate::apiserver::ApiServer;
use crate::served::Served;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A hang guard for waits on controllers, not a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A running kube-controller-manager, killed on drop; [`Served`] gives its address, log,
/// stop and kill.
pub struct ControllerManager(Served);

impl ControllerManager {
    /// Starts kube-controller-manager with the apiserver's admin kubeconfig, leader election
    /// off (unless `extra_args` say otherwise) and `extra_args` (e.g. `--controllers=...`),
    /// and waits for its `/healthz`.
    pub async fn start(
        dir: &Path,
        apiserver: &ApiServer,
        extra_args: &[&str],
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let kubeconfig = dir.join("controller-manager.kubeconfig");
        crate::kubectl::write_kubeconfig(&kubeconfig, &apiserver.url(), &apiserver.ca_file())?;
        let mut args = vec![format!("--kubeconfig={}", kubeconfig.display())];
        if !extra_args.iter().any(|a| a.starts_with("--leader-elect")) {
            args.push("--leader-elect=false".into());
        }
        args.extend(extra_args.iter().map(|a| a.to_string()));
        Ok(Self(
            Served::start("kube-controller-manager", dir, args, PATIENCE).await?,
        ))
    }
}

impl std::ops::Deref for ControllerManager {
    type Target = Served;

    fn deref(&self) -> &Served {
        &self.0
    }
}

impl std::ops::DerefMut for ControllerManager {
    fn deref_mut(&mut self) -> &mut Served {
        &mut self.0
    }
}

/// Polls `check` until it returns `Some`, panicking after [`PATIENCE`] with `what` and the
/// last value seen (from `describe`).
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) if Instant::now() > deadline => {
                panic!("timed out waiting for {what}; last: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Lists `path` (a collection URL, optionally with `?labelSelector=...`) and returns its items.
pub async fn list(api: &ApiServer, path: &str) -> Vec<Value> {
    let list = api.get_json(path).await;
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Plays the kubelet for `pod`: sets phase Running with Ready=True and a running container
/// status per container, through the `status` subresource (the pod stays unbound: controllers
/// do not look at `nodeName` for availability).
pub async fn mark_pod_running_ready(api: &ApiServer, pod: &Value) {
    mark_pod_running_ready_with_ip(api, pod, "10.0.0.1").await;
}

/// [`mark_pod_running_ready`] with the pod IP the "kubelet" reports (endpoints tests need one
/// address per pod).
pub async fn mark_pod_running_ready_with_ip(api: &ApiServer, pod: &Value, ip: &str) {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let now = jiff::Timestamp::now().to_string();
    let statuses: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": true,
                   "restartCount": 0, "started": true,
                   "state": {"running": {"startedAt": now}}})
        })
        .collect();
    let patch = json!({"status": {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "True", "lastTransitionTime": now},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        ],
        "containerStatuses": statuses,
    }});
    set_pod_status(api, ns, name, patch).await;
}

/// Plays the kubelet for a finished pod: phase `Succeeded` (exit code 0) or `Failed`
/// (`exit_code`), every container terminated.
pub async fn mark_pod_finished(api: &ApiServer, pod: &Value, exit_code: i32) {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let now = jiff::Timestamp::now().to_string();
    let reason = if exit_code == 0 { "Completed" } else { "Error" };
    let statuses: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": false,
                   "restartCount": 0, "started": false,
                   "state": {"terminated": {"exitCode": exit_code, "reason": reason,
                                            "startedAt": now, "finishedAt": now}}})
        })
        .collect();
    let phase = if exit_code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    let patch = json!({"status": {
        "phase": phase,
        "startTime": now,
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now},
        ],
        "containerStatuses": statuses,
    }});
    set_pod_status(api, ns, name, patch).await;
}

async fn set_pod_status(api: &ApiServer, ns: &str, name: &str, patch: Value) {
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}/status");
    let (status, body) = api
        .request(
            "PATCH",
            &path,
            Some("application/merge-patch+json"),
            patch.to_string(),
        )
        .await
        .unwrap_or_else(|err| panic!("PATCH {path}: {err:#}"));
    // A pod deleted meanwhile is not the caller's failure.
    assert!(
        status == 200 || status == 404,
        "PATCH {path}: {status} {body}"
    );
}
