//! The writer against a fake apiserver that serves one pod: what it requests, in which order.

use super::super::StatusManager;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The one pod the fake serves, the requests it got, and the answer forced on PATCH.
#[derive(Default)]
struct Fake {
    pod: Mutex<Value>,
    requests: Mutex<Vec<String>>,
    /// An HTTP status every PATCH answers with instead of applying it, while set.
    patch_fails: Mutex<Option<u16>>,
}

fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

/// The next resourceVersion, as every write gets.
fn bump(pod: &mut Value) {
    let rv: u64 = pod["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(1);
    pod["metadata"]["resourceVersion"] = json!((rv + 1).to_string());
}

fn answer(code: u16, body: &Value) -> http::Response<Full<Bytes>> {
    http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap_or_default()
}

fn status_body(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
           "reason": reason, "message": reason})
}

impl Fake {
    async fn serve(
        &self,
        request: http::Request<kube::client::Body>,
    ) -> http::Response<Full<Bytes>> {
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        let body = request
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        self.requests.lock().push(format!("{method} {path}"));
        let exists = !self.pod.lock().is_null();
        match (method.as_str(), exists) {
            (_, false) => answer(404, &status_body(404, "NotFound")),
            ("GET", true) => answer(200, &self.pod.lock()),
            ("PATCH", true) => {
                if let Some(code) = *self.patch_fails.lock() {
                    return answer(code, &status_body(code, "Conflict"));
                }
                let patch: Value = serde_json::from_slice(&body).unwrap_or_default();
                let mut pod = self.pod.lock();
                if patch["metadata"]["uid"] != pod["metadata"]["uid"] {
                    return answer(409, &status_body(409, "Conflict"));
                }
                let mut status = pod["status"].clone();
                merge(&mut status, &patch["status"]);
                pod["status"] = status;
                bump(&mut pod);
                answer(200, &pod)
            }
            _ => answer(405, &status_body(405, "MethodNotAllowed")),
        }
    }
}

fn client(fake: &Arc<Fake>) -> kube::Client {
    let fake = fake.clone();
    let service = tower::service_fn(move |request| {
        let fake = fake.clone();
        async move { Ok::<_, std::convert::Infallible>(fake.serve(request).await) }
    });
    kube::Client::new(service, "default")
}

fn pod(uid: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": phase, "qosClass": "BestEffort"},
    }))
    .unwrap_or_default()
}

fn status(phase: &str) -> PodStatus {
    PodStatus {
        phase: Some(phase.into()),
        qos_class: Some("BestEffort".into()),
        ..Default::default()
    }
}

/// Polls until the fake's pod shows `phase` (a hang guard of 10 s, not a timing assertion).
async fn until_phase(fake: &Fake, phase: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.pod.lock()["status"]["phase"] != phase {
        assert!(
            Instant::now() < deadline,
            "never {phase}: {:?}",
            fake.requests.lock()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn patches_from_the_last_answer_and_reads_only_after_a_failure() {
    let fake = Arc::new(Fake::default());
    let pod_object = pod("u1", "Pending");
    *fake.pod.lock() = serde_json::to_value(&pod_object).unwrap_or_default();
    let manager = Arc::new(StatusManager::default());
    let shutdown = CancellationToken::new();
    tokio::spawn(manager.clone().run_writer(client(&fake), shutdown.clone()));

    // A new pod and a later change: each one PATCH, never a GET before it.
    manager.set_pod_status(&pod_object, status("Pending"));
    manager.set_pod_status(
        &pod_object,
        PodStatus {
            pod_ip: Some("10.0.0.7".into()),
            ..status("Running")
        },
    );
    until_phase(&fake, "Running").await;
    // The Pending status equals the pod's own: nothing to send for it.
    let requests = fake.requests.lock().clone();
    assert!(
        requests.iter().all(|r| r.starts_with("PATCH ")),
        "{requests:?}"
    );
    assert_eq!(fake.pod.lock()["status"]["podIP"], "10.0.0.7");

    // A failed patch leaves the base unknown: the retry reads the pod first.
    fake.requests.lock().clear();
    *fake.patch_fails.lock() = Some(500);
    let with_ip = |ip: &str| PodStatus {
        pod_ip: Some(ip.into()),
        ..status("Running")
    };
    manager.set_pod_status(&pod_object, with_ip("10.0.0.8"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.requests.lock().is_empty() {
        assert!(Instant::now() < deadline, "no write attempted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    *fake.patch_fails.lock() = None;
    // The failed status would be retried by the resync; a newer change is written at once.
    manager.set_pod_status(&pod_object, with_ip("10.0.0.9"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.pod.lock()["status"]["podIP"] != "10.0.0.9" {
        assert!(Instant::now() < deadline, "{:?}", fake.requests.lock());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let requests = fake.requests.lock().clone();
    let get = requests.iter().position(|r| r.starts_with("GET "));
    let last_patch = requests.iter().rposition(|r| r.starts_with("PATCH "));
    assert!(
        get.is_some() && get < last_patch,
        "a GET before the successful PATCH: {requests:?}"
    );
    shutdown.cancel();
}

#[tokio::test]
async fn a_replaced_pod_is_never_patched_and_its_status_forgotten() {
    let fake = Arc::new(Fake::default());
    let old = pod("old-uid", "Pending");
    // The apiserver has a new pod of the same name.
    *fake.pod.lock() = serde_json::to_value(pod("new-uid", "Pending")).unwrap_or_default();
    let manager = Arc::new(StatusManager::default());
    let shutdown = CancellationToken::new();
    tokio::spawn(manager.clone().run_writer(client(&fake), shutdown.clone()));
    manager.set_pod_status(&old, status("Running"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while manager.get_pod_status("old-uid").is_some() {
        assert!(Instant::now() < deadline, "{:?}", fake.requests.lock());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(fake.pod.lock()["status"]["phase"], "Pending");
    assert_eq!(fake.pod.lock()["metadata"]["uid"], "new-uid");
    shutdown.cancel();
}

#[tokio::test]
async fn a_status_overwritten_after_our_write_is_written_again() {
    let fake = Arc::new(Fake::default());
    let pod_object = pod("u1", "Pending");
    *fake.pod.lock() = serde_json::to_value(&pod_object).unwrap_or_default();
    let manager = Arc::new(StatusManager::default());
    let shutdown = CancellationToken::new();
    tokio::spawn(manager.clone().run_writer(client(&fake), shutdown.clone()));
    manager.set_pod_status(&pod_object, status("Running"));
    until_phase(&fake, "Running").await;
    let copy = |fake: &Fake| -> Pod {
        serde_json::from_value(fake.pod.lock().clone()).unwrap_or_default()
    };
    let written = copy(&fake);

    // A copy from before our write (the watch lags) tells nothing: no request.
    fake.requests.lock().clear();
    manager.reconcile(&pod_object);
    manager.reconcile(&written);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        fake.requests.lock().is_empty(),
        "{:?}",
        fake.requests.lock()
    );

    // Someone else put the status back after our write: ours is written again.
    {
        let mut pod = fake.pod.lock();
        pod["status"]["phase"] = json!("Pending");
        bump(&mut pod);
    }
    manager.reconcile(&copy(&fake));
    until_phase(&fake, "Running").await;
    shutdown.cancel();
}
