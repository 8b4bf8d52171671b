//! The deployment controller for real: an apiserver, a kube-controller-manager running the
//! replicaset and deployment controllers, and a task playing the kubelet (every new pod turns
//! Running and Ready shortly after it appears, except pods of the `never-ready` image). The
//! rollout commands are the real kubectl's.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{ControllerManager, list, mark_pod_running_ready, wait_for};
use e2e::kcm_fixture::KcmCluster as Cluster;
use e2e::scheduler::{create, create_namespace, get, merge_patch};
use e2e::secure::SecureCluster;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

const NS: &str = "apps";
/// Pods of this image never become ready.
const NEVER_READY: &str = "never-ready";
/// How long the fake kubelet takes to make a pod ready.
const READY_AFTER: Duration = Duration::from_millis(300);

async fn cluster() -> Cluster {
    let mut c = Cluster::start(&[NS], &["--controllers=replicaset,deployment"]).await;
    c.play_kubelet(async |api| play_kubelet(&api).await);
    c
}

/// Makes every pod Running and Ready `READY_AFTER` after it was first seen.
async fn play_kubelet(api: &ApiServer) {
    let mut seen: HashMap<String, Instant> = HashMap::new();
    loop {
        for pod in list(api, &format!("/api/v1/namespaces/{NS}/pods")).await {
            let uid = pod["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let ready = pod["status"]["phase"] == "Running";
            let image = pod["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or_default();
            if ready || image == NEVER_READY || pod["metadata"]["deletionTimestamp"].is_string() {
                continue;
            }
            let first = *seen.entry(uid).or_insert_with(Instant::now);
            if first.elapsed() >= READY_AFTER {
                mark_pod_running_ready(api, &pod).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn deployment(name: &str, replicas: i32, image: &str, strategy: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    })
}

fn rolling(surge: Value, unavailable: Value) -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
}

fn path(name: &str) -> String {
    format!("/apis/apps/v1/namespaces/{NS}/deployments/{name}")
}

async fn create_deployment(api: &ApiServer, d: &Value) {
    create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
        d,
    )
    .await;
}

async fn get_deployment(api: &ApiServer, name: &str) -> Value {
    get(api, &path(name)).await.expect("deployment exists")
}

async fn replica_sets(api: &ApiServer, name: &str) -> Vec<Value> {
    list(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/replicasets?labelSelector=app%3D{name}"),
    )
    .await
}

async fn live_pods(api: &ApiServer, name: &str) -> Vec<Value> {
    list(
        api,
        &format!("/api/v1/namespaces/{NS}/pods?labelSelector=app%3D{name}"),
    )
    .await
    .into_iter()
    .filter(|p| !p["metadata"]["deletionTimestamp"].is_string())
    .collect()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn revision(rs: &Value) -> &str {
    rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        .as_str()
        .unwrap_or_default()
}

fn image_of(rs: &Value) -> &str {
    rs["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

fn condition<'a>(d: &'a Value, type_: &str) -> Option<&'a Value> {
    d["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Observed, complete and every desired replica updated and available.
fn rolled_out(d: &Value) -> bool {
    let want = int(&d["spec"]["replicas"]);
    let s = &d["status"];
    int(&s["observedGeneration"]) >= int(&d["metadata"]["generation"])
        && int(&s["updatedReplicas"]) == want
        && int(&s["replicas"]) == want
        && int(&s["availableReplicas"]) == want
}

async fn wait_rolled_out(api: &ApiServer, name: &str) -> Value {
    wait_for(&format!("deployment {name} rolled out"), || async {
        let d = get_deployment(api, name).await;
        if rolled_out(&d) {
            Ok(d)
        } else {
            Err(d["status"].to_string())
        }
    })
    .await
}

/// The ReplicaSet running `image`, with its size.
async fn rs_with_image(api: &ApiServer, name: &str, image: &str) -> Option<Value> {
    replica_sets(api, name)
        .await
        .into_iter()
        .find(|rs| image_of(rs) == image)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_keeps_availability_and_kubectl_rollout_works() {
    let c = cluster().await;
    create_deployment(
        &c.api,
        &deployment("web", 3, "nginx:1", rolling(json!(1), json!(0))),
    )
    .await;
    let d = wait_rolled_out(&c.api, "web").await;
    let first = replica_sets(&c.api, "web").await;
    assert_eq!(first.len(), 1, "{first:?}");
    let first_name = first[0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let hash = first[0]["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(first_name, format!("web-{hash}"));
    assert_eq!(
        first[0]["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash
    );
    assert_eq!(revision(&first[0]), "1");
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(
        condition(&d, "Available").map(|c| c["reason"].clone()),
        Some(json!("MinimumReplicasAvailable"))
    );

    // Roll out a new image; watches see every version of the Deployment and every pod change.
    let mut deployment_watch = c.kubectl.spawn(&[
        "-n",
        NS,
        "get",
        "deployment",
        "web",
        "-w",
        "-o",
        "jsonpath={.metadata.resourceVersion} {.status.availableReplicas}{\"\\n\"}",
    ]);
    let mut pod_watch = c.kubectl.spawn(&[
        "-n",
        NS,
        "get",
        "pods",
        "-l",
        "app=web",
        "-w",
        "--output-watch-events",
        "-o",
        "jsonpath={.type} {.object.metadata.name} {.object.metadata.deletionTimestamp}{\"\\n\"}",
    ]);
    deployment_watch.wait_for(Duration::from_secs(30), "the first version", |out| {
        out.contains('\n')
    });
    pod_watch.wait_for(Duration::from_secs(30), "the first pods", |out| {
        out.lines().count() >= 3
    });
    let generation = int(&get_deployment(&c.api, "web").await["metadata"]["generation"]);
    c.kubectl
        .ok(&["-n", NS, "set", "image", "deployment/web", "c=nginx:2"]);
    // `rollout status` follows the rollout from its start.
    let mut rollout_status = c.kubectl.spawn(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=60s",
    ]);
    wait_for("the rollout to nginx:2", || async {
        let d = get_deployment(&c.api, "web").await;
        if int(&d["metadata"]["generation"]) > generation && rolled_out(&d) {
            Ok(())
        } else {
            Err(d["status"].to_string())
        }
    })
    .await;
    rollout_status.wait_for(Duration::from_secs(30), "success", |out| {
        out.contains("deployment \"web\" successfully rolled out")
    });
    let rv = get_deployment(&c.api, "web").await["metadata"]["resourceVersion"].clone();
    let rv = rv.as_str().unwrap_or_default().to_string();
    let versions = deployment_watch.wait_for(Duration::from_secs(30), "the final version", |out| {
        out.lines().any(|l| l.starts_with(&format!("{rv} ")))
    });
    let available: Vec<i64> = versions
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .collect();
    assert!(
        available.len() > 2,
        "the rollout was not seen in progress: {versions}"
    );
    assert!(
        available.iter().all(|n| *n >= 3),
        "availability dropped below 3 (maxUnavailable 0): {versions}"
    );
    let events = pod_watch.wait_for(Duration::from_secs(30), "the old pods' deletions", |out| {
        out.lines().filter(|l| l.starts_with("DELETED")).count() >= 3
    });
    let mut live = BTreeSet::new();
    let mut most = 0;
    for line in events.lines() {
        let mut fields = line.split_whitespace();
        let (kind, name, deleting) = (fields.next(), fields.next(), fields.next().is_some());
        match (kind, name) {
            (Some("ADDED" | "MODIFIED"), Some(name)) if !deleting => live.insert(name.to_string()),
            (Some(_), Some(name)) => live.remove(name),
            _ => false,
        };
        most = most.max(live.len());
    }
    assert!(
        most <= 4,
        "{most} pods at once (3 replicas, maxSurge 1): {events}"
    );
    assert_eq!(live.len(), 3, "{events}");
    c.kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=60s",
    ]);
    let new = rs_with_image(&c.api, "web", "nginx:2")
        .await
        .expect("new replica set");
    let old = rs_with_image(&c.api, "web", "nginx:1")
        .await
        .expect("old replica set kept");
    assert_eq!(
        (int(&new["spec"]["replicas"]), int(&old["spec"]["replicas"])),
        (3, 0)
    );
    assert_eq!((revision(&new), revision(&old)), ("2", "1"));
    let d = get_deployment(&c.api, "web").await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    assert_eq!(
        condition(&d, "Progressing").map(|c| c["reason"].clone()),
        Some(json!("NewReplicaSetAvailable"))
    );

    // The Deployment's change-cause is copied to its current ReplicaSet: history shows it.
    c.kubectl.ok(&[
        "-n",
        NS,
        "annotate",
        "deployment/web",
        "kubernetes.io/change-cause=image nginx:2",
    ]);
    wait_for("the change-cause on the new replica set", || async {
        let rs = rs_with_image(&c.api, "web", "nginx:2")
            .await
            .unwrap_or_default();
        let cause = &rs["metadata"]["annotations"]["kubernetes.io/change-cause"];
        if cause == "image nginx:2" {
            Ok(())
        } else {
            Err(rs["metadata"].to_string())
        }
    })
    .await;
    let history = c
        .kubectl
        .ok(&["-n", NS, "rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");
    assert!(
        history
            .lines()
            .any(|l| l.starts_with('2') && l.contains("image nginx:2")),
        "{history}"
    );

    // Undo: back to the first ReplicaSet, under a new revision.
    c.kubectl
        .ok(&["-n", NS, "rollout", "undo", "deployment/web"]);
    wait_for("the undo to complete on the first replica set", || async {
        let d = get_deployment(&c.api, "web").await;
        let rs = rs_with_image(&c.api, "web", "nginx:1").await;
        let rs_state = rs
            .as_ref()
            .map(|rs| (int(&rs["spec"]["replicas"]), revision(rs).to_string()));
        if rolled_out(&d) && rs_state == Some((3, "3".into())) {
            Ok(())
        } else {
            Err(format!("{rs_state:?} {}", d["status"]))
        }
    })
    .await;
    let back = rs_with_image(&c.api, "web", "nginx:1")
        .await
        .expect("first replica set");
    assert_eq!(back["metadata"]["name"], first_name.as_str());
    let d = get_deployment(&c.api, "web").await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    assert_eq!(
        back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"],
        "1"
    );
    assert_eq!(replica_sets(&c.api, "web").await.len(), 2);
    c.kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=60s",
    ]);

    // Restart: a new template annotation, so a new ReplicaSet rolls out.
    c.kubectl
        .ok(&["-n", NS, "rollout", "restart", "deployment/web"]);
    wait_for("the restart to roll out", || async {
        let d = get_deployment(&c.api, "web").await;
        let sets = replica_sets(&c.api, "web").await;
        let restarted = sets.iter().find(|rs| {
            rs["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].is_string()
        });
        match restarted {
            Some(rs) if rolled_out(&d) && int(&rs["spec"]["replicas"]) == 3 && revision(rs) == "4" => Ok(()),
            _ => Err(d["status"].to_string()),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_never_runs_old_and_new_pods_together() {
    let c = cluster().await;
    create_deployment(
        &c.api,
        &deployment("db", 2, "db:1", json!({"type": "Recreate"})),
    )
    .await;
    let d = wait_rolled_out(&c.api, "db").await;
    let generation = int(&d["metadata"]["generation"]);
    c.kubectl
        .ok(&["-n", NS, "set", "image", "deployment/db", "c=db:2"]);
    wait_for("the recreate rollout", || async {
        let pods = live_pods(&c.api, "db").await;
        let hashes: BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| p["metadata"]["labels"]["pod-template-hash"].as_str())
            .collect();
        assert!(hashes.len() <= 1, "old and new pods at once: {hashes:?}");
        let d = get_deployment(&c.api, "db").await;
        if int(&d["metadata"]["generation"]) > generation && rolled_out(&d) {
            Ok(())
        } else {
            Err(d["status"].to_string())
        }
    })
    .await;
    let new = rs_with_image(&c.api, "db", "db:2")
        .await
        .expect("new replica set");
    let old = rs_with_image(&c.api, "db", "db:1")
        .await
        .expect("old replica set");
    assert_eq!(
        (int(&new["spec"]["replicas"]), int(&old["spec"]["replicas"])),
        (2, 0)
    );
    assert_eq!(revision(&new), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_holds_the_rollout_and_resume_continues_it() {
    let c = cluster().await;
    // A rollout that could never move is refused.
    let stuck = deployment("zero", 1, "api:1", rolling(json!(0), json!("0%")));
    let (status, body) = c
        .api
        .request(
            "POST",
            &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
            Some("application/json"),
            stuck.to_string(),
        )
        .await
        .expect("POST deployment");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("may not be 0 when `maxSurge` is 0"), "{body}");
    create_deployment(
        &c.api,
        &deployment("api", 2, "api:1", rolling(json!("25%"), json!("25%"))),
    )
    .await;
    wait_rolled_out(&c.api, "api").await;
    c.kubectl
        .ok(&["-n", NS, "rollout", "pause", "deployment/api"]);
    c.kubectl
        .ok(&["-n", NS, "set", "image", "deployment/api", "c=api:2"]);
    // Scaling still applies while paused.
    c.kubectl
        .ok(&["-n", NS, "scale", "deployment/api", "--replicas=3"]);
    let d = wait_for("the paused deployment to be observed", || async {
        let d = get_deployment(&c.api, "api").await;
        let observed = int(&d["status"]["observedGeneration"]) >= int(&d["metadata"]["generation"]);
        let reason = condition(&d, "Progressing").map(|c| c["reason"].clone());
        if observed
            && reason == Some(json!("DeploymentPaused"))
            && int(&d["status"]["availableReplicas"]) == 3
        {
            Ok(d)
        } else {
            Err(d["status"].to_string())
        }
    })
    .await;
    let sets = replica_sets(&c.api, "api").await;
    assert_eq!(sets.len(), 1, "a paused deployment rolled out: {sets:?}");
    assert_eq!(int(&sets[0]["spec"]["replicas"]), 3);
    assert_eq!(
        condition(&d, "Progressing").map(|c| c["status"].clone()),
        Some(json!("Unknown"))
    );

    c.kubectl
        .ok(&["-n", NS, "rollout", "resume", "deployment/api"]);
    wait_for("the resumed rollout", || async {
        let d = get_deployment(&c.api, "api").await;
        let new = rs_with_image(&c.api, "api", "api:2").await;
        match new {
            Some(rs) if rolled_out(&d) && int(&rs["spec"]["replicas"]) == 3 => Ok(()),
            _ => Err(d["status"].to_string()),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_deadline_exceeded_when_pods_never_become_ready() {
    let c = cluster().await;
    let mut d = deployment("stuck", 1, NEVER_READY, rolling(json!(1), json!(0)));
    d["spec"]["progressDeadlineSeconds"] = json!(2);
    create_deployment(&c.api, &d).await;
    let d = wait_for("ProgressDeadlineExceeded", || async {
        let d = get_deployment(&c.api, "stuck").await;
        match condition(&d, "Progressing") {
            Some(cond) if cond["reason"] == "ProgressDeadlineExceeded" => Ok(d),
            _ => Err(d["status"].to_string()),
        }
    })
    .await;
    let cond = condition(&d, "Progressing").expect("Progressing condition");
    assert_eq!(cond["status"], "False");
    assert_eq!(
        condition(&d, "Available").map(|c| c["status"].clone()),
        Some(json!("False"))
    );
    let err = c.kubectl.fails(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/stuck",
        "--timeout=30s",
    ]);
    assert!(err.contains("exceeded its progress deadline"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_mid_rollout_is_proportional() {
    let c = cluster().await;
    create_deployment(
        &c.api,
        &deployment("big", 10, "big:1", rolling(json!(3), json!(2))),
    )
    .await;
    wait_rolled_out(&c.api, "big").await;
    // The new pods never become ready: the rollout stops at 8 old and 5 new.
    merge_patch(
        &c.api,
        &path("big"),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": NEVER_READY}]}}}}),
    )
    .await;
    let sizes = || async {
        let old = rs_with_image(&c.api, "big", "big:1")
            .await
            .map(|rs| int(&rs["spec"]["replicas"]));
        let new = rs_with_image(&c.api, "big", NEVER_READY)
            .await
            .map(|rs| int(&rs["spec"]["replicas"]));
        (old, new)
    };
    wait_for("the rollout to stall at 8 old and 5 new", || async {
        let s = sizes().await;
        if s == (Some(8), Some(5)) {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    c.kubectl
        .ok(&["-n", NS, "scale", "deployment/big", "--replicas=15"]);
    // 13 pods become 18 (15 + 3 surge), shared 8:5 -> 11:7.
    wait_for("proportional scale-up to 11 old and 7 new", || async {
        let s = sizes().await;
        if s == (Some(11), Some(7)) {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    let sets = replica_sets(&c.api, "big").await;
    for rs in &sets {
        let a = &rs["metadata"]["annotations"];
        assert_eq!(
            (
                a["deployment.kubernetes.io/desired-replicas"].as_str(),
                a["deployment.kubernetes.io/max-replicas"].as_str()
            ),
            (Some("15"), Some("18"))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_history_limit_deletes_the_oldest_scaled_down_sets() {
    let c = cluster().await;
    let mut d = deployment("hist", 1, "hist:1", rolling(json!(1), json!(0)));
    d["spec"]["revisionHistoryLimit"] = json!(1);
    // Availability waits minReadySeconds (counted by the replicaset controller, which gets it
    // from the Deployment).
    d["spec"]["minReadySeconds"] = json!(1);
    create_deployment(&c.api, &d).await;
    wait_rolled_out(&c.api, "hist").await;
    for image in ["hist:2", "hist:3"] {
        c.kubectl.ok(&[
            "-n",
            NS,
            "set",
            "image",
            "deployment/hist",
            &format!("c={image}"),
        ]);
        wait_for(&format!("the rollout to {image}"), || async {
            let d = get_deployment(&c.api, "hist").await;
            let current = d["spec"]["template"]["spec"]["containers"][0]["image"] == image;
            if current && rolled_out(&d) {
                Ok(())
            } else {
                Err(d["status"].to_string())
            }
        })
        .await;
    }
    wait_for("only the newest old revision kept", || async {
        let mut revisions: Vec<(String, String)> = replica_sets(&c.api, "hist")
            .await
            .iter()
            .map(|rs| (revision(rs).to_string(), image_of(rs).to_string()))
            .collect();
        revisions.sort();
        let want = [
            ("2".to_string(), "hist:2".to_string()),
            ("3".to_string(), "hist:3".to_string()),
        ];
        if revisions == want {
            Ok(())
        } else {
            Err(format!("{revisions:?}"))
        }
    })
    .await;
    for rs in replica_sets(&c.api, "hist").await {
        assert_eq!(
            rs["spec"]["minReadySeconds"], 1,
            "{}",
            rs["metadata"]["name"]
        );
    }
    // A new minReadySeconds reaches the current ReplicaSet without a new rollout.
    merge_patch(
        &c.api,
        &path("hist"),
        &json!({"spec": {"minReadySeconds": 2}}),
    )
    .await;
    wait_for("minReadySeconds on the current replica set", || async {
        let rs = rs_with_image(&c.api, "hist", "hist:3")
            .await
            .unwrap_or_default();
        if rs["spec"]["minReadySeconds"] == 2 {
            Ok(())
        } else {
            Err(rs["spec"].to_string())
        }
    })
    .await;
    assert_eq!(replica_sets(&c.api, "hist").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_collision_bumps_the_collision_count() {
    let c = cluster().await;
    create_deployment(
        &c.api,
        &deployment("col", 1, "col:1", rolling(json!(1), json!(0))),
    )
    .await;
    wait_rolled_out(&c.api, "col").await;
    let sets = replica_sets(&c.api, "col").await;
    let taken = sets[0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Leave the set behind as an orphan running another template under the same name (no
    // garbage collector runs here to delete it).
    let (status, body) = c
        .api
        .request("DELETE", &path("col"), None, Vec::new())
        .await
        .expect("DELETE deployment");
    assert_eq!(status, 200, "{body}");
    merge_patch(
        &c.api,
        &format!("/apis/apps/v1/namespaces/{NS}/replicasets/{taken}"),
        &json!({"metadata": {"ownerReferences": null},
                "spec": {"replicas": 0, "template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}}),
    )
    .await;
    // The same Deployment again: it adopts the orphan, finds its own name taken by a
    // different template, and retries under another hash.
    create_deployment(
        &c.api,
        &deployment("col", 1, "col:1", rolling(json!(1), json!(0))),
    )
    .await;
    let d = wait_rolled_out(&c.api, "col").await;
    assert_eq!(d["status"]["collisionCount"], 1);
    let new = rs_with_image(&c.api, "col", "col:1")
        .await
        .expect("new replica set");
    assert_ne!(new["metadata"]["name"], taken.as_str());
    let adopted = rs_with_image(&c.api, "col", "other")
        .await
        .expect("adopted replica set");
    assert_eq!(
        adopted["metadata"]["ownerReferences"][0]["uid"],
        d["metadata"]["uid"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolls_out_under_rbac_as_its_own_service_account() {
    let cluster = SecureCluster::start(&[]).await;
    let api = &cluster.server;
    let key = format!(
        "--service-account-private-key-file={}",
        cluster.signing_key.display()
    );
    let cm = ControllerManager::start(
        &cluster.dir().join("kcm"),
        api,
        &[
            &key,
            "--use-service-account-credentials",
            "--controllers=replicaset,deployment",
        ],
    )
    .await
    .expect("kube-controller-manager");
    create_namespace(api, NS).await;
    let rollout = async {
        create_deployment(
            api,
            &deployment("rbac", 2, "r:1", rolling(json!(1), json!(0))),
        )
        .await;
        wait_rolled_out(api, "rbac").await;
        // Every write of a rollout (ReplicaSet create and scale, revision annotation, status)
        // is within upstream's deployment-controller role.
        merge_patch(
            api,
            &path("rbac"),
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "r:2"}]}}}}),
        )
        .await;
        wait_for("the rollout to r:2", || async {
            let d = get_deployment(api, "rbac").await;
            let new = rs_with_image(api, "rbac", "r:2").await.unwrap_or_default();
            let revision_set =
                d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2";
            if rolled_out(&d) && int(&new["spec"]["replicas"]) == 2 && revision_set {
                Ok(())
            } else {
                Err(d.to_string())
            }
        })
        .await;
    };
    tokio::select! {
        () = play_kubelet(api) => unreachable!("the kubelet loop never ends"),
        () = rollout => {}
    }
    assert!(!cm.logs().contains("forbidden"), "{}", cm.logs());
}
