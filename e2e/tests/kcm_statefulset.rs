//! The StatefulSet controller for real: an apiserver and a kube-controller-manager running
//! `statefulset`; the test plays the kubelet (`mark_pod_running_ready`) and checks ordered
//! creation, claims, ordered scale-down, the partitioned rolling update and the real kubectl's
//! `rollout status` / `rollout history`.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{list, mark_pod_running_ready, wait_for};
use e2e::kcm_fixture::KcmCluster as Cluster;
use e2e::scheduler::{create, get, merge, merge_patch};
use serde_json::{Value, json};

const NS: &str = "sts";

async fn cluster() -> Cluster {
    Cluster::start(&[NS], &["--controllers=statefulset"]).await
}

fn set_path() -> String {
    format!("/apis/apps/v1/namespaces/{NS}/statefulsets/web")
}

fn pod_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/pods/{name}")
}

async fn create_set(api: &ApiServer, policy: &str, replicas: i64, extra_spec: Value) -> Value {
    let mut set = json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "serviceName": "web",
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": "web"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    });
    merge(&mut set["spec"], extra_spec);
    create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/statefulsets"),
        &set,
    )
    .await
}

/// The names of the set's pods that are not being deleted, sorted.
async fn pod_names(api: &ApiServer) -> Vec<String> {
    let mut names: Vec<String> = list(
        api,
        &format!("/api/v1/namespaces/{NS}/pods?labelSelector=app%3Dweb"),
    )
    .await
    .into_iter()
    .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
    .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
    .collect();
    names.sort();
    names
}

async fn wait_for_pods(api: &ApiServer, want: &[&str]) {
    wait_for(&format!("pods {want:?}"), || async {
        let names = pod_names(api).await;
        if names == want {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
}

async fn wait_for_pod(api: &ApiServer, name: &str) -> Value {
    wait_for(&format!("pod {name}"), || async {
        get(api, &pod_path(name))
            .await
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .ok_or_else(|| "absent".to_string())
    })
    .await
}

fn revision(pod: &Value) -> String {
    pod["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Waits for `name` to exist at `rev` (it is deleted and recreated to get there).
async fn wait_for_pod_at(api: &ApiServer, name: &str, rev: &str) -> Value {
    wait_for(&format!("pod {name} at revision {rev}"), || async {
        let pod = get(api, &pod_path(name)).await.ok_or("absent")?;
        if revision(&pod) == rev && pod["metadata"]["deletionTimestamp"].is_null() {
            Ok(pod)
        } else {
            Err(format!("at {}", revision(&pod)))
        }
    })
    .await
}

async fn wait_for_status(api: &ApiServer, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, || async {
        let set = get(api, &set_path()).await.ok_or("gone")?;
        if check(&set["status"]) {
            Ok(set["status"].clone())
        } else {
            Err(set["status"].to_string())
        }
    })
    .await
}

async fn wait_for_event(api: &ApiServer, reason: &str, message: &str) {
    wait_for(&format!("event {reason} {message:?}"), || async {
        let events = list(api, &format!("/api/v1/namespaces/{NS}/events")).await;
        let found = events.iter().any(|e| {
            e["involvedObject"]["name"] == "web" && e["reason"] == reason && e["message"] == message
        });
        if found {
            Ok(())
        } else {
            Err(format!("{} events", events.len()))
        }
    })
    .await;
}

#[tokio::test]
async fn ordered_ready_creation_scale_down_and_partitioned_rollout() {
    let c = cluster().await;
    let api = &c.api;
    let set = create_set(api, "OrderedReady", 3, json!({})).await;
    let uid = set["metadata"]["uid"].as_str().expect("uid").to_string();

    // web-0 first, with its identity, its claim and the set as controller.
    let web0 = wait_for_pod(api, "web-0").await;
    let labels = &web0["metadata"]["labels"];
    assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "web-0");
    assert_eq!(labels["apps.kubernetes.io/pod-index"], "0");
    assert!(!revision(&web0).is_empty());
    assert_eq!(web0["spec"]["hostname"], "web-0");
    assert_eq!(web0["spec"]["subdomain"], "web");
    let owner = &web0["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["uid"], &owner["controller"]),
        (&json!("StatefulSet"), &json!(uid), &json!(true))
    );
    let volume = web0["spec"]["volumes"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == "data"))
        .cloned()
        .expect("data volume");
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], "data-web-0");
    let claim = get(
        api,
        &format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data-web-0"),
    )
    .await
    .expect("claim data-web-0");
    assert_eq!(claim["metadata"]["labels"]["app"], "web");
    wait_for_event(
        api,
        "SuccessfulCreate",
        "create Pod web-0 in StatefulSet web successful",
    )
    .await;
    wait_for_event(
        api,
        "SuccessfulCreate",
        "create Claim data-web-0 Pod web-0 in StatefulSet web success",
    )
    .await;

    // The controller has seen web-0 (status counts it) and still waits for it to be Ready.
    wait_for_status(api, "replicas=1", |s| s["replicas"] == 1).await;
    assert_eq!(
        pod_names(api).await,
        ["web-0"],
        "web-1 before web-0 is ready"
    );

    mark_pod_running_ready(api, &web0).await;
    let web1 = wait_for_pod(api, "web-1").await;
    wait_for_status(api, "replicas=2 ready=1", |s| {
        s["replicas"] == 2 && s["readyReplicas"] == 1
    })
    .await;
    assert_eq!(
        pod_names(api).await,
        ["web-0", "web-1"],
        "web-2 before web-1 is ready"
    );
    mark_pod_running_ready(api, &web1).await;
    let web2 = wait_for_pod(api, "web-2").await;
    mark_pod_running_ready(api, &web2).await;
    let status = wait_for_status(api, "3 ready", |s| {
        s["readyReplicas"] == 3 && s["availableReplicas"] == 3
    })
    .await;
    let rev1 = revision(&web0);
    assert_eq!(status["currentRevision"], json!(rev1));
    assert_eq!(status["updateRevision"], json!(rev1));
    assert_eq!(status["currentReplicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    for n in 0..3 {
        let path = format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data-web-{n}");
        assert!(get(api, &path).await.is_some(), "claim data-web-{n}");
    }

    let kubectl = &c.kubectl;
    let out = kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        "statefulset/web",
        "--timeout=20s",
    ]);
    // kubectl reports every RollingUpdate with a partition (even 0) as partitioned.
    assert!(
        out.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{out}"
    );

    // Scale down removes the highest ordinal; the claims stay (Retain).
    merge_patch(api, &set_path(), &json!({"spec": {"replicas": 2}})).await;
    wait_for_pods(api, &["web-0", "web-1"]).await;
    wait_for_event(
        api,
        "SuccessfulDelete",
        "delete Pod web-2 in StatefulSet web successful",
    )
    .await;
    let path = format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data-web-2");
    assert!(get(api, &path).await.is_some(), "claim data-web-2 retained");
    merge_patch(api, &set_path(), &json!({"spec": {"replicas": 3}})).await;
    let web2 = wait_for_pod(api, "web-2").await;
    mark_pod_running_ready(api, &web2).await;
    wait_for_status(api, "3 ready again", |s| s["readyReplicas"] == 3).await;

    // A partitioned update: only web-2 moves to the new revision.
    merge_patch(
        api,
        &set_path(),
        &json!({"spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}},
        }}),
    )
    .await;
    let status = wait_for_status(api, "a new update revision", |s| {
        s["updateRevision"].as_str().is_some_and(|r| r != rev1)
    })
    .await;
    let rev2 = status["updateRevision"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let web2 = wait_for_pod_at(api, "web-2", &rev2).await;
    mark_pod_running_ready(api, &web2).await;
    let status = wait_for_status(api, "web-2 updated", |s| {
        s["updatedReplicas"] == 1 && s["readyReplicas"] == 3
    })
    .await;
    assert_eq!(status["currentRevision"], json!(rev1));
    assert_eq!(status["currentReplicas"], 2);
    for name in ["web-0", "web-1"] {
        let pod = get(api, &pod_path(name)).await.expect(name);
        assert_eq!(revision(&pod), rev1, "{name} is below the partition");
    }
    let out = kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        "statefulset/web",
        "--timeout=20s",
    ]);
    assert!(
        out.contains("partitioned roll out complete: 1 new pods have been updated"),
        "{out}"
    );

    // Partition 0: web-1 next while web-0 still runs the old revision, then web-0.
    merge_patch(
        api,
        &set_path(),
        &json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}),
    )
    .await;
    // The updated web-1 is not Ready yet, so web-0 must still be untouched.
    let web1 = wait_for_pod_at(api, "web-1", &rev2).await;
    let pod = get(api, &pod_path("web-0")).await.expect("web-0");
    assert_eq!(revision(&pod), rev1, "web-0 is updated last");
    mark_pod_running_ready(api, &web1).await;
    let web0 = wait_for_pod_at(api, "web-0", &rev2).await;
    mark_pod_running_ready(api, &web0).await;
    let status = wait_for_status(api, "rollout complete", |s| {
        s["currentRevision"] == json!(rev2) && s["updatedReplicas"] == 3 && s["readyReplicas"] == 3
    })
    .await;
    assert_eq!(status["currentReplicas"], 3);
    let out = kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        "statefulset/web",
        "--timeout=20s",
    ]);
    assert!(
        out.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{out}"
    );

    // Two revisions, numbered in order.
    let revisions = list(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/controllerrevisions"),
    )
    .await;
    let mut numbered: Vec<(i64, String)> = revisions
        .iter()
        .map(|r| {
            (
                r["revision"].as_i64().unwrap_or(0),
                r["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    numbered.sort();
    assert_eq!(numbered, [(1, rev1.clone()), (2, rev2.clone())]);
    let history = kubectl.ok(&["-n", NS, "rollout", "history", "statefulset/web"]);
    let rows: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(rows, ["1", "2"], "{history}");

    // Undo brings the first template back: its revision becomes the newest (3), no new one.
    kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "undo",
        "statefulset/web",
        "--to-revision=1",
    ]);
    wait_for_status(api, "update revision back to the first", |s| {
        s["updateRevision"] == json!(rev1)
    })
    .await;
    let path = format!("/apis/apps/v1/namespaces/{NS}/controllerrevisions/{rev1}");
    let first = get(api, &path).await.expect("first revision");
    assert_eq!(first["revision"], 3);
    let revisions = list(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/controllerrevisions"),
    )
    .await;
    assert_eq!(revisions.len(), 2);
    let web2 = wait_for_pod_at(api, "web-2", &rev1).await;
    assert_eq!(web2["spec"]["containers"][0]["image"], "nginx:1");
}

#[tokio::test]
async fn parallel_creates_all_at_once_and_claims_follow_retention_policy() {
    let c = cluster().await;
    let api = &c.api;
    // Claims go with the set, and with their pod when it is scaled away.
    let set = create_set(
        api,
        "Parallel",
        3,
        json!({"persistentVolumeClaimRetentionPolicy":
               {"whenDeleted": "Delete", "whenScaled": "Delete"}}),
    )
    .await;
    let set_uid = set["metadata"]["uid"].clone();
    // No pod is ever ready: Parallel does not wait.
    wait_for_pods(api, &["web-0", "web-1", "web-2"]).await;
    for n in 0..3 {
        let path = format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data-web-{n}");
        assert!(get(api, &path).await.is_some(), "claim data-web-{n}");
    }
    wait_for_status(api, "3 replicas", |s| {
        s["replicas"] == 3 && s["readyReplicas"] == 0
    })
    .await;

    // A failed pod is replaced.
    let web1 = get(api, &pod_path("web-1")).await.expect("web-1");
    let uid1 = web1["metadata"]["uid"].clone();
    e2e::controller_manager::mark_pod_finished(api, &web1, 1).await;
    wait_for("web-1 recreated", || async {
        let pod = get(api, &pod_path("web-1")).await.ok_or("absent")?;
        if pod["metadata"]["uid"] != uid1 {
            Ok(())
        } else {
            Err(format!("phase {}", pod["status"]["phase"]))
        }
    })
    .await;
    wait_for_event(
        api,
        "RecreatingFailedPod",
        &format!("StatefulSet {NS}/web is recreating failed Pod web-1"),
    )
    .await;

    let claim_owners = |n: i32| async move {
        let path = format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data-web-{n}");
        let claim = get(api, &path).await.unwrap_or_default();
        claim["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r["kind"].as_str().unwrap_or_default().to_string(),
                    r["uid"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        claim_owners(0).await,
        [("StatefulSet".to_string(), set_uid.clone())]
    );

    let web2 = get(api, &pod_path("web-2")).await.expect("web-2");
    merge_patch(api, &set_path(), &json!({"spec": {"replicas": 1}})).await;
    wait_for_pods(api, &["web-0"]).await;
    wait_for_status(api, "1 replica", |s| s["replicas"] == 1).await;
    // No garbage collector runs here: the claim stays, handed to its (deleted) pod.
    assert_eq!(
        claim_owners(2).await,
        [("Pod".to_string(), web2["metadata"]["uid"].clone())]
    );
    assert_eq!(
        claim_owners(0).await,
        [("StatefulSet".to_string(), set_uid)]
    );
}

#[tokio::test]
async fn on_delete_updates_only_pods_the_user_deletes() {
    let c = cluster().await;
    let api = &c.api;
    create_set(
        api,
        "Parallel",
        2,
        json!({"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}),
    )
    .await;
    wait_for_pods(api, &["web-0", "web-1"]).await;
    for name in ["web-0", "web-1"] {
        let pod = get(api, &pod_path(name)).await.expect(name);
        mark_pod_running_ready(api, &pod).await;
    }
    let status = wait_for_status(api, "2 ready", |s| s["readyReplicas"] == 2).await;
    let rev1 = status["currentRevision"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    merge_patch(
        api,
        &set_path(),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    )
    .await;
    let status = wait_for_status(api, "a new update revision", |s| {
        s["updateRevision"].as_str().is_some_and(|r| r != rev1)
    })
    .await;
    let rev2 = status["updateRevision"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(status["updatedReplicas"], 0, "{status}");
    for name in ["web-0", "web-1"] {
        let pod = get(api, &pod_path(name)).await.expect(name);
        assert_eq!(revision(&pod), rev1, "{name} untouched under OnDelete");
    }

    // The user deletes web-1: it comes back at the new revision, web-0 stays.
    let (code, body) = api
        .request("DELETE", &pod_path("web-1"), None, String::new())
        .await
        .expect("delete web-1");
    assert!(code < 300, "{code} {body}");
    let web1 = wait_for_pod_at(api, "web-1", &rev2).await;
    mark_pod_running_ready(api, &web1).await;
    let status = wait_for_status(api, "web-1 updated", |s| {
        s["updatedReplicas"] == 1 && s["readyReplicas"] == 2
    })
    .await;
    assert_eq!(status["currentRevision"], json!(rev1));
    assert_eq!(status["currentReplicas"], 1);
    let web0 = get(api, &pod_path("web-0")).await.expect("web-0");
    assert_eq!(revision(&web0), rev1);
}
