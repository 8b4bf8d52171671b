//! The ReplicaSet and ReplicationController controllers for real: an apiserver and a
//! kube-controller-manager running `replicaset,replicationcontroller`; the test plays the
//! kubelet (`mark_pod_running_ready`) and drives scaling through the API and the real kubectl.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{list, mark_pod_finished, mark_pod_running_ready, wait_for};
use e2e::kcm_fixture::KcmCluster as Cluster;
use e2e::scheduler::{create, force_delete_pod, get, merge_patch};
use serde_json::{Value, json};
use std::collections::BTreeSet;

const NS: &str = "rs";

async fn cluster() -> Cluster {
    Cluster::start(&[NS], &["--controllers=replicaset,replicationcontroller"]).await
}

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    })
}

fn name(obj: &Value) -> String {
    obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn controller_uid(pod: &Value) -> Option<String> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
        .map(String::from)
}

/// The pods matching `app` that are neither being deleted nor finished.
async fn active_pods(api: &ApiServer, app: &str) -> Vec<Value> {
    list(
        api,
        &format!("/api/v1/namespaces/{NS}/pods?labelSelector=app%3D{app}"),
    )
    .await
    .into_iter()
    .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
    .filter(|p| p["status"]["phase"] != "Succeeded" && p["status"]["phase"] != "Failed")
    .collect()
}

/// Waits until exactly `n` active pods match `app`, all controlled by `owner_uid`.
async fn wait_for_owned_pods(api: &ApiServer, app: &str, owner_uid: &str, n: usize) -> Vec<Value> {
    wait_for(
        &format!("{n} pods of {app} owned by {owner_uid}"),
        || async {
            let pods = active_pods(api, app).await;
            let owned = pods
                .iter()
                .filter(|p| controller_uid(p).as_deref() == Some(owner_uid))
                .count();
            if pods.len() == n && owned == n {
                Ok(pods)
            } else {
                Err(format!(
                    "{} pods, {owned} owned: {:?}",
                    pods.len(),
                    pods.iter().map(name).collect::<Vec<_>>()
                ))
            }
        },
    )
    .await
}

async fn wait_for_status(api: &ApiServer, path: &str, field: &str, want: i64) {
    wait_for(&format!("{path} status.{field}={want}"), || async {
        let obj = get(api, path).await.ok_or("gone")?;
        let got = obj["status"][field].as_i64().unwrap_or(0);
        if got == want {
            Ok(())
        } else {
            Err(format!("{field}={got}; status {}", obj["status"]))
        }
    })
    .await;
}

async fn wait_for_event(api: &ApiServer, involved: &str, reason: &str, message: &str) {
    wait_for(
        &format!("event {reason} {message:?} on {involved}"),
        || async {
            let events = list(api, &format!("/api/v1/namespaces/{NS}/events")).await;
            let found = events.iter().any(|e| {
                e["involvedObject"]["name"] == involved
                    && e["reason"] == reason
                    && e["message"] == message
            });
            if found {
                Ok(())
            } else {
                Err(format!("{} events", events.len()))
            }
        },
    )
    .await;
}

#[tokio::test]
async fn replicaset_scales_adopts_releases_and_reports_status() {
    let c = cluster().await;
    let api = &c.api;
    let rs_path = format!("/apis/apps/v1/namespaces/{NS}/replicasets/web");
    let rs = create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/replicasets"),
        &json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                     "template": template("web")},
        }),
    )
    .await;
    let uid = rs["metadata"]["uid"].as_str().expect("uid").to_string();
    wait_for_status(api, &rs_path, "observedGeneration", 1).await;
    assert!(active_pods(api, "web").await.is_empty());

    // 0 -> 3: three pods, each controlled by the ReplicaSet, and upstream's events.
    merge_patch(api, &rs_path, &json!({"spec": {"replicas": 3}})).await;
    let pods = wait_for_owned_pods(api, "web", &uid, 3).await;
    for pod in &pods {
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicaSet");
        assert_eq!(owner["name"], "web");
        assert_eq!(owner["blockOwnerDeletion"], true);
        assert!(name(pod).starts_with("web-"), "{}", name(pod));
    }
    wait_for_event(
        api,
        "web",
        "SuccessfulCreate",
        &format!("Created pod: {}", name(&pods[0])),
    )
    .await;
    wait_for_status(api, &rs_path, "replicas", 3).await;
    wait_for_status(api, &rs_path, "fullyLabeledReplicas", 3).await;

    // Status follows readiness; then 3 -> 1 deletes the not-ready pods first.
    let survivor = name(&pods[1]);
    mark_pod_running_ready(api, &pods[1]).await;
    wait_for_status(api, &rs_path, "readyReplicas", 1).await;
    wait_for_status(api, &rs_path, "availableReplicas", 1).await;
    merge_patch(api, &rs_path, &json!({"spec": {"replicas": 1}})).await;
    let left = wait_for_owned_pods(api, "web", &uid, 1).await;
    assert_eq!(
        name(&left[0]),
        survivor,
        "the ready pod must survive the scale-down"
    );
    for gone in [&pods[0], &pods[2]] {
        wait_for_event(
            api,
            "web",
            "SuccessfulDelete",
            &format!("Deleted pod: {}", name(gone)),
        )
        .await;
    }
    wait_for_status(api, &rs_path, "replicas", 1).await;

    // A deleted pod is replaced.
    force_delete_pod(api, NS, &survivor).await;
    let replaced = wait_for_owned_pods(api, "web", &uid, 1).await;
    let replacement = name(&replaced[0]);
    assert_ne!(replacement, survivor);
    wait_for_status(api, &rs_path, "readyReplicas", 0).await;

    // An orphan matching the selector is adopted, and the surplus then deleted: the orphan's
    // higher deletion cost makes the replacement the one to go.
    create(
        api,
        &format!("/api/v1/namespaces/{NS}/pods"),
        &json!({
            "metadata": {"name": "orphan", "labels": {"app": "web"},
                         "annotations": {"controller.kubernetes.io/pod-deletion-cost": "100"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }),
    )
    .await;
    let left = wait_for_owned_pods(api, "web", &uid, 1).await;
    assert_eq!(name(&left[0]), "orphan", "the adopted orphan stays");
    wait_for_event(
        api,
        "web",
        "SuccessfulDelete",
        &format!("Deleted pod: {replacement}"),
    )
    .await;

    // A pod whose labels stop matching is released and replaced.
    let orphan_path = format!("/api/v1/namespaces/{NS}/pods/orphan");
    merge_patch(
        api,
        &orphan_path,
        &json!({"metadata": {"labels": {"app": "gone"}}}),
    )
    .await;
    wait_for("orphan released", || async {
        let pod = get(api, &orphan_path).await.ok_or("gone")?;
        match controller_uid(&pod) {
            None => Ok(()),
            Some(owner) => Err(format!("still owned by {owner}")),
        }
    })
    .await;
    let fresh = wait_for_owned_pods(api, "web", &uid, 1).await;
    assert_ne!(name(&fresh[0]), "orphan");

    // The real kubectl scales through the scale subresource.
    let kubectl = &c.kubectl;
    kubectl.ok(&["-n", NS, "scale", "rs/web", "--replicas=5"]);
    let five = wait_for_owned_pods(api, "web", &uid, 5).await;
    let names: BTreeSet<String> = five.iter().map(name).collect();
    assert_eq!(names.len(), 5);
    wait_for_status(api, &rs_path, "replicas", 5).await;
    for pod in &five {
        mark_pod_running_ready(api, pod).await;
    }
    wait_for_status(api, &rs_path, "availableReplicas", 5).await;
}

#[tokio::test]
async fn replication_controller_keeps_replicas_and_waits_min_ready_seconds() {
    let c = cluster().await;
    let api = &c.api;
    let rc_path = format!("/api/v1/namespaces/{NS}/replicationcontrollers/rc");
    let rc = create(
        api,
        &format!("/api/v1/namespaces/{NS}/replicationcontrollers"),
        &json!({
            "metadata": {"name": "rc"},
            "spec": {"replicas": 2, "minReadySeconds": 1, "selector": {"app": "rcweb"},
                     "template": template("rcweb")},
        }),
    )
    .await;
    let uid = rc["metadata"]["uid"].as_str().expect("uid").to_string();
    let pods = wait_for_owned_pods(api, "rcweb", &uid, 2).await;
    for pod in &pods {
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["kind"],
            "ReplicationController"
        );
    }
    wait_for_event(
        api,
        "rc",
        "SuccessfulCreate",
        &format!("Created pod: {}", name(&pods[0])),
    )
    .await;
    for pod in &pods {
        mark_pod_running_ready(api, pod).await;
    }
    wait_for_status(api, &rc_path, "readyReplicas", 2).await;
    // Available only after minReadySeconds: the controller requeues itself to see it.
    wait_for_status(api, &rc_path, "availableReplicas", 2).await;

    force_delete_pod(api, NS, &name(&pods[0])).await;
    let after = wait_for_owned_pods(api, "rcweb", &uid, 2).await;
    assert!(after.iter().any(|p| name(p) == name(&pods[1])));

    // A failed pod no longer counts: it is replaced, and left for the pod GC.
    mark_pod_finished(api, &pods[1], 1).await;
    let after = wait_for_owned_pods(api, "rcweb", &uid, 2).await;
    assert!(after.iter().all(|p| name(p) != name(&pods[1])));
    let failed = get(
        api,
        &format!("/api/v1/namespaces/{NS}/pods/{}", name(&pods[1])),
    )
    .await;
    assert_eq!(
        failed.expect("the failed pod stays")["status"]["phase"],
        "Failed"
    );
    merge_patch(api, &rc_path, &json!({"spec": {"replicas": 0}})).await;
    wait_for_owned_pods(api, "rcweb", &uid, 0).await;
    wait_for_status(api, &rc_path, "replicas", 0).await;
}

fn replica_failure(rs: &Value) -> Option<Value> {
    rs["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "ReplicaFailure")
        .cloned()
}

/// Creates refused by admission (a ResourceQuota of one pod) set the ReplicaFailure
/// condition and a FailedCreate event; once the quota allows it the set reaches its count and
/// the condition goes away.
#[tokio::test]
async fn refused_creates_set_replica_failure_until_they_succeed() {
    let c = cluster().await;
    let api = &c.api;
    // The test plays the quota controller: only status.hard limits.
    let quota_path = format!("/api/v1/namespaces/{NS}/resourcequotas/q");
    create(
        api,
        &format!("/api/v1/namespaces/{NS}/resourcequotas"),
        &json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}}),
    )
    .await;
    merge_patch(
        api,
        &format!("{quota_path}/status"),
        &json!({"status": {"hard": {"pods": "1"}, "used": {"pods": "0"}}}),
    )
    .await;

    let rs_path = format!("/apis/apps/v1/namespaces/{NS}/replicasets/capped");
    let rs = create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/replicasets"),
        &json!({
            "metadata": {"name": "capped"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "capped"}},
                     "template": template("capped")},
        }),
    )
    .await;
    let uid = rs["metadata"]["uid"].as_str().expect("uid").to_string();
    let condition = wait_for("ReplicaFailure", || async {
        let rs = get(api, &rs_path).await.ok_or("gone")?;
        replica_failure(&rs).ok_or_else(|| format!("status {}", rs["status"]))
    })
    .await;
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "FailedCreate");
    assert!(
        condition["message"]
            .as_str()
            .unwrap_or_default()
            .contains("quota"),
        "{condition}"
    );
    wait_for("a FailedCreate event", || async {
        let events = list(api, &format!("/api/v1/namespaces/{NS}/events")).await;
        events
            .iter()
            .find(|e| {
                e["involvedObject"]["name"] == "capped"
                    && e["reason"] == "FailedCreate"
                    && e["type"] == "Warning"
                    && e["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("Error creating:"))
            })
            .map(|_| ())
            .ok_or_else(|| format!("{} events", events.len()))
    })
    .await;
    assert_eq!(active_pods(api, "capped").await.len(), 1);

    merge_patch(
        api,
        &format!("{quota_path}/status"),
        &json!({"status": {"hard": {"pods": "10"}}}),
    )
    .await;
    wait_for_owned_pods(api, "capped", &uid, 3).await;
    wait_for("ReplicaFailure cleared", || async {
        let rs = get(api, &rs_path).await.ok_or("gone")?;
        match replica_failure(&rs) {
            None if rs["status"]["replicas"] == 3 => Ok(()),
            _ => Err(format!("status {}", rs["status"])),
        }
    })
    .await;
}
