//! Probes end to end: our kubelet on a real containerd against our apiserver, pods bound to the
//! node by the test. A failing liveness exec probe restarts its container (restartCount grows);
//! a readiness httpGet probe against busybox httpd follows a file appearing and disappearing
//! (container `ready` and the pod's Ready condition); a startup probe holds readiness back until
//! it passes. Files are changed with CRI ExecSync, so nothing depends on timing in the pods.

use e2e::containerd::{BUSYBOX_IMAGE, Containerd};
use e2e::kubelet::{KubeletCluster, poll};
use k8s_cri::v1::ExecSyncRequest;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::api::{Api, PostParams};
use serde_json::json;

/// A busybox pod bound to `node` with one container `main` (merged with `container`).
fn pod(name: &str, node: &str, container: serde_json::Value) -> Pod {
    let mut c = json!({
        "name": "main",
        "image": BUSYBOX_IMAGE,
        "imagePullPolicy": "IfNotPresent",
    });
    for (k, v) in container.as_object().cloned().unwrap_or_default() {
        c[k] = v;
    }
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [c],
        },
    }))
    .expect("a valid pod")
}

fn main_status(p: &Pod) -> Result<ContainerStatus, String> {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == "main"))
        .cloned()
        .ok_or_else(|| "no status of main yet".to_string())
}

fn running_id(c: &ContainerStatus) -> Result<String, String> {
    match (
        c.state.as_ref().and_then(|s| s.running.as_ref()),
        &c.container_id,
    ) {
        (Some(_), Some(id)) => Ok(id.trim_start_matches("containerd://").to_string()),
        _ => Err(format!("main is not running: {:?}", c.state)),
    }
}

fn pod_ready(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

async fn exec(containerd: &Containerd, id: &str, script: &str) {
    let mut cri = RuntimeServiceClient::new(containerd.cri_channel().await.expect("CRI channel"));
    let out = cri
        .exec_sync(ExecSyncRequest {
            container_id: id.to_string(),
            cmd: vec!["sh".into(), "-c".into(), script.into()],
            timeout: 10,
        })
        .await
        .expect("ExecSync")
        .into_inner();
    assert_eq!(
        out.exit_code,
        0,
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_readiness_and_startup_probes() {
    let node = "probe-node";
    let n = KubeletCluster::start(node, serde_json::Value::Null).await;
    let logs = || n.logs();
    let pods: Api<Pod> = Api::namespaced(n.client.clone(), "default");

    let live = pod(
        "live",
        node,
        json!({
            "command": ["sleep", "3600"],
            "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 1, "failureThreshold": 1},
        }),
    );
    let web = pod(
        "web",
        node,
        json!({
            "command": ["httpd", "-f", "-p", "8080", "-h", "/tmp"],
            "ports": [{"name": "http", "containerPort": 8080}],
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1},
        }),
    );
    let slow = pod(
        "slow",
        node,
        json!({
            "command": ["sleep", "3600"],
            "startupProbe": {"exec": {"command": ["cat", "/tmp/started"]}, "periodSeconds": 1, "failureThreshold": 600},
        }),
    );
    for p in [&live, &web, &slow] {
        pods.create(&PostParams::default(), p)
            .await
            .expect("create pod");
    }

    // Liveness: the probe never passes, so the container is killed and restarted, again and
    // again (the second restart waits out the crash-loop backoff).
    let restarted = poll(
        "the live container to be restarted twice",
        &logs,
        async || {
            let c = main_status(&pods.get("live").await.map_err(|e| e.to_string())?)?;
            if c.restart_count >= 2 {
                Ok(c)
            } else {
                Err(format!("restartCount {}", c.restart_count))
            }
        },
    )
    .await;
    let last = restarted
        .last_state
        .and_then(|s| s.terminated)
        .expect("a terminated lastState");
    assert_ne!(last.exit_code, 0, "{last:?}");

    // Startup: running but neither started nor ready while its probe fails.
    let slow_id = poll("slow to run", &logs, async || {
        running_id(&main_status(
            &pods.get("slow").await.map_err(|e| e.to_string())?,
        )?)
    })
    .await;
    let c = main_status(&pods.get("slow").await.unwrap()).unwrap();
    assert_eq!((c.started, c.ready), (Some(false), false), "{c:?}");

    // Readiness: not ready while /ready is missing, ready once it is served, not ready again
    // once it is gone.
    let web_id = poll("web to run", &logs, async || {
        running_id(&main_status(
            &pods.get("web").await.map_err(|e| e.to_string())?,
        )?)
    })
    .await;
    let p = pods.get("web").await.unwrap();
    assert!(!main_status(&p).unwrap().ready);
    assert_ne!(pod_ready(&p).as_deref(), Some("True"));
    exec(&n.containerd, &web_id, "echo ok > /tmp/ready").await;
    poll("web to become ready", &logs, async || {
        let p = pods.get("web").await.map_err(|e| e.to_string())?;
        let ready = main_status(&p)?.ready;
        if ready && pod_ready(&p).as_deref() == Some("True") {
            Ok(())
        } else {
            Err(format!("ready {ready}, {:?}", pod_ready(&p)))
        }
    })
    .await;
    exec(&n.containerd, &web_id, "rm /tmp/ready").await;
    poll("web to become unready", &logs, async || {
        let p = pods.get("web").await.map_err(|e| e.to_string())?;
        let c = main_status(&p)?;
        if !c.ready && pod_ready(&p).as_deref() == Some("False") {
            Ok(())
        } else {
            Err(format!("ready {}", c.ready))
        }
    })
    .await;
    assert_eq!(
        main_status(&pods.get("web").await.unwrap())
            .unwrap()
            .restart_count,
        0
    );

    // Startup passes: started, and (no readiness probe) ready.
    exec(&n.containerd, &slow_id, "touch /tmp/started").await;
    poll("slow to start and become ready", &logs, async || {
        let c = main_status(&pods.get("slow").await.map_err(|e| e.to_string())?)?;
        if c.started == Some(true) && c.ready {
            Ok(())
        } else {
            Err(format!("started {:?} ready {}", c.started, c.ready))
        }
    })
    .await;
    let c = main_status(&pods.get("slow").await.unwrap()).unwrap();
    assert_eq!(c.restart_count, 0);
}
