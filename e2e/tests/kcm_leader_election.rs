//! Two controller managers with `--leader-elect`: only the holder of the Lease runs the
//! controllers; when it is killed the standby takes over, and a ReplicaSet gets no extra pods
//! from the change of hands.

use e2e::apiserver::{ApiServer, Backend};
use e2e::controller_manager::{ControllerManager, list, mark_pod_running_ready, wait_for};
use e2e::scheduler::{create, create_namespace, merge_patch};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const LEASE_DURATION: Duration = Duration::from_secs(3);

async fn holder(api: &ApiServer) -> Option<String> {
    let lease = e2e::scheduler::get(
        api,
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
    )
    .await?;
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(String::from)
}

async fn start(dir: &std::path::Path, api: &ApiServer) -> ControllerManager {
    ControllerManager::start(
        dir,
        api,
        &[
            "--controllers=replicaset",
            "--leader-elect=true",
            "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=200ms",
        ],
    )
    .await
    .unwrap()
}

async fn pods(api: &ApiServer) -> Vec<Value> {
    list(api, "/api/v1/namespaces/le/pods?labelSelector=app%3Dle").await
}

/// Watches the pod count for `hold`, failing if it ever differs from `want`.
async fn assert_pod_count_stays(api: &ApiServer, want: usize, hold: Duration) {
    let until = Instant::now() + hold;
    while Instant::now() < until {
        let n = pods(api).await.len();
        assert_eq!(n, want, "the ReplicaSet should have exactly {want} pods");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn wait_for_pods(api: &ApiServer, want: usize) -> Vec<Value> {
    wait_for(&format!("{want} pods"), || async {
        let pods = pods(api).await;
        if pods.len() == want {
            Ok(pods)
        } else {
            Err(format!("{} pods", pods.len()))
        }
    })
    .await
}

fn started_controllers(cm: &ControllerManager) -> usize {
    cm.logs().matches("started controller").count()
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_leader_acts_and_the_standby_takes_over() {
    let dir = tempfile::tempdir().unwrap();
    let api = ApiServer::start(&dir.path().join("api"), Backend::Embedded)
        .await
        .unwrap();
    let mut first = start(&dir.path().join("a"), &api).await;
    let leader = wait_for("a lease holder", || async {
        holder(&api).await.ok_or_else(|| "none".to_string())
    })
    .await;
    let second = start(&dir.path().join("b"), &api).await;

    create_namespace(&api, "le").await;
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "le", "namespace": "le"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "le"}},
            "template": {
                "metadata": {"labels": {"app": "le"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    });
    create(&api, "/apis/apps/v1/namespaces/le/replicasets", &rs).await;
    for pod in wait_for_pods(&api, 3).await {
        mark_pod_running_ready(&api, &pod).await;
    }
    assert_pod_count_stays(&api, 3, Duration::from_secs(1)).await;
    assert!(started_controllers(&first) > 0, "{}", first.logs());
    assert_eq!(
        started_controllers(&second),
        0,
        "the standby ran controllers:\n{}",
        second.logs()
    );

    // kill -9: the lease is not released, so the standby must wait for it to expire.
    first.kill();
    let killed = Instant::now();
    let next = wait_for("a new lease holder", || async {
        match holder(&api).await {
            Some(h) if h != leader => Ok(h),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let took = killed.elapsed();
    eprintln!("standby took over {took:?} after the leader was killed");
    // A hang guard, not a timing claim: expiry plus a few retry periods.
    assert!(took < LEASE_DURATION * 3, "took over after {took:?}");
    assert_ne!(next, leader);
    wait_for("the standby to start its controllers", || async {
        if started_controllers(&second) > 0 {
            Ok(())
        } else {
            Err(second.logs())
        }
    })
    .await;
    assert_pod_count_stays(&api, 3, Duration::from_secs(2)).await;

    merge_patch(
        &api,
        "/apis/apps/v1/namespaces/le/replicasets/le",
        &json!({"spec": {"replicas": 5}}),
    )
    .await;
    wait_for_pods(&api, 5).await;
    assert_pod_count_stays(&api, 5, Duration::from_secs(1)).await;
}
