//! Issue 7's acceptance scenarios that cross controllers: the controller manager runs its
//! DEFAULT controller set (minus the node-lifecycle ones, which would evict pods of heartbeat-less
//! nodes), a task plays the kubelet (every new pod turns Running and Ready), and the user's side
//! is the real kubectl.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{list, mark_pod_running_ready, wait_for};
use e2e::kcm_fixture::KcmCluster as Cluster;
use e2e::scheduler::{get, merge_patch};
use serde_json::{Value, json};
use std::time::Duration;

const CONTROLLERS: &str = "--controllers=*,-node-lifecycle-controller,-taint-eviction-controller,-pod-garbage-collector-controller";
/// A finalizer of the test's own, holding a pod until the test lets it go.
const HOLD: &str = "acceptance.example.com/hold";

async fn cluster(extra: &[&str]) -> Cluster {
    let mut c = Cluster::start_with(&[], &[], |api| {
        let root_ca = format!("--root-ca-file={}", api.ca_file().display());
        [CONTROLLERS, root_ca.as_str()]
            .iter()
            .chain(extra)
            .map(|a| a.to_string())
            .collect()
    })
    .await;
    c.play_kubelet(async |api| play_kubelet(&api).await);
    c
}

/// Makes every pending pod of every namespace Running and Ready.
async fn play_kubelet(api: &ApiServer) {
    loop {
        for pod in list(api, "/api/v1/pods").await {
            if pod["status"]["phase"] != "Running" && pod["metadata"]["deletionTimestamp"].is_null()
            {
                mark_pod_running_ready(api, &pod).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A Deployment manifest (YAML is JSON) for `kubectl apply`.
fn deployment(name: &str, replicas: i32, image: &str) -> String {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    })
    .to_string()
}

fn apply(c: &Cluster, ns: &str, manifest: &str) {
    let out = c
        .kubectl
        .run_with_stdin(&["-n", ns, "apply", "-f", "-"], manifest);
    assert!(out.success, "kubectl apply {manifest}: {}", out.stderr);
}

fn deployment_path(ns: &str, name: &str) -> String {
    format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}")
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn image_of(rs: &Value) -> &str {
    rs["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

async fn replica_sets(api: &ApiServer, ns: &str, app: &str) -> Vec<Value> {
    list(
        api,
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets?labelSelector=app%3D{app}"),
    )
    .await
}

async fn pods(api: &ApiServer, ns: &str, app: &str) -> Vec<Value> {
    list(
        api,
        &format!("/api/v1/namespaces/{ns}/pods?labelSelector=app%3D{app}"),
    )
    .await
}

/// Waits until the Deployment has observed its spec and every replica is updated and available.
async fn wait_rolled_out(api: &ApiServer, ns: &str, name: &str) -> Value {
    wait_for(&format!("deployment {name} rolled out"), || async {
        let d = get(api, &deployment_path(ns, name))
            .await
            .ok_or("no deployment")?;
        let want = int(&d["spec"]["replicas"]);
        let s = &d["status"];
        if int(&s["observedGeneration"]) >= int(&d["metadata"]["generation"])
            && int(&s["updatedReplicas"]) == want
            && int(&s["replicas"]) == want
            && int(&s["availableReplicas"]) == want
        {
            Ok(d)
        } else {
            Err(s.to_string())
        }
    })
    .await
}

/// The ReplicaSet of `app` that has replicas, with its image.
async fn active_replica_set(api: &ApiServer, ns: &str, app: &str) -> (String, String) {
    let active: Vec<_> = replica_sets(api, ns, app)
        .await
        .into_iter()
        .filter(|rs| int(&rs["spec"]["replicas"]) > 0)
        .collect();
    assert_eq!(active.len(), 1, "{active:?}");
    (name_of(&active[0]), image_of(&active[0]).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_keeps_three_available_and_undo_returns_to_the_previous_replica_set() {
    let c = cluster(&[]).await;
    let ns = "default";
    apply(&c, ns, &deployment("web", 3, "nginx:1"));
    wait_rolled_out(&c.api, ns, "web").await;
    let (first_rs, image) = active_replica_set(&c.api, ns, "web").await;
    assert_eq!(image, "nginx:1");

    // Every version of the Deployment from now on, through a watch.
    let mut watch = c.kubectl.spawn(&[
        "-n",
        ns,
        "get",
        "deployment",
        "web",
        "-w",
        "-o",
        "jsonpath={.metadata.resourceVersion} {.status.availableReplicas}{\"\\n\"}",
    ]);
    watch.wait_for(Duration::from_secs(30), "the first version", |out| {
        out.contains('\n')
    });
    c.kubectl
        .ok(&["-n", ns, "set", "image", "deployment/web", "c=nginx:2"]);
    c.kubectl.ok(&[
        "-n",
        ns,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=60s",
    ]);
    let d = wait_rolled_out(&c.api, ns, "web").await;
    let (second_rs, image) = active_replica_set(&c.api, ns, "web").await;
    assert_eq!(image, "nginx:2");
    assert_ne!(second_rs, first_rs);
    let rv = d["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let versions = watch.wait_for(Duration::from_secs(30), "the rolled-out version", |out| {
        out.lines().any(|l| l.starts_with(&format!("{rv} ")))
    });
    let available: Vec<i64> = versions
        .lines()
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        })
        .collect();
    assert!(
        available.len() > 2,
        "the rollout was not seen in progress: {versions}"
    );
    assert!(
        available.iter().all(|n| *n >= 3),
        "availability dropped below 3 (maxUnavailable 0): {versions}"
    );

    c.kubectl
        .ok(&["-n", ns, "rollout", "undo", "deployment/web"]);
    c.kubectl.ok(&[
        "-n",
        ns,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=60s",
    ]);
    wait_for("the first replica set active again", || async {
        let d = get(&c.api, &deployment_path(ns, "web"))
            .await
            .ok_or("no deployment")?;
        let sets = replica_sets(&c.api, ns, "web").await;
        let sized: Vec<(String, i64)> = sets
            .iter()
            .map(|rs| (name_of(rs), int(&rs["status"]["availableReplicas"])))
            .collect();
        let back = sets.iter().any(|rs| {
            name_of(rs) == first_rs
                && int(&rs["spec"]["replicas"]) == 3
                && int(&rs["status"]["availableReplicas"]) == 3
        });
        let drained = sets
            .iter()
            .all(|rs| name_of(rs) == first_rs || int(&rs["spec"]["replicas"]) == 0);
        if back && drained && int(&d["status"]["availableReplicas"]) == 3 {
            Ok(())
        } else {
            Err(format!("{sized:?}"))
        }
    })
    .await;
    assert_eq!(replica_sets(&c.api, ns, "web").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_deletion_removes_replica_sets_and_pods_first_and_orphan_keeps_them() {
    let c = cluster(&[]).await;
    let ns = "default";
    apply(&c, ns, &deployment("fg", 3, "nginx:1"));
    apply(&c, ns, &deployment("orphan", 2, "nginx:1"));
    wait_rolled_out(&c.api, ns, "fg").await;
    wait_rolled_out(&c.api, ns, "orphan").await;

    // One pod held by a finalizer makes the order observable.
    let held = name_of(&pods(&c.api, ns, "fg").await[0]);
    let held_path = format!("/api/v1/namespaces/{ns}/pods/{held}");
    merge_patch(
        &c.api,
        &held_path,
        &json!({"metadata": {"finalizers": [HOLD]}}),
    )
    .await;
    c.kubectl.ok(&[
        "-n",
        ns,
        "delete",
        "deployment",
        "fg",
        "--cascade=foreground",
        "--wait=false",
    ]);
    // The other pods go; the held one is terminating; its ReplicaSet and the Deployment wait.
    wait_for("only the held pod left, terminating", || async {
        let left = pods(&c.api, ns, "fg").await;
        let names: Vec<String> = left.iter().map(name_of).collect();
        match left.as_slice() {
            [pod] if name_of(pod) == held && pod["metadata"]["deletionTimestamp"].is_string() => {
                Ok(())
            }
            _ => Err(format!("{names:?}")),
        }
    })
    .await;
    let d = get(&c.api, &deployment_path(ns, "fg"))
        .await
        .expect("the deployment waits for its dependents");
    assert!(d["metadata"]["deletionTimestamp"].is_string(), "{d}");
    assert_eq!(
        d["metadata"]["finalizers"],
        json!(["foregroundDeletion"]),
        "{d}"
    );
    let sets = replica_sets(&c.api, ns, "fg").await;
    assert_eq!(sets.len(), 1, "the replica set waits for its pod: {sets:?}");
    assert!(sets[0]["metadata"]["deletionTimestamp"].is_string());

    merge_patch(
        &c.api,
        &held_path,
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    // Each poll reads the Deployment first: once it is gone, its dependents must be too.
    wait_for("the deployment gone after its dependents", || async {
        let deployment = get(&c.api, &deployment_path(ns, "fg")).await;
        let sets = replica_sets(&c.api, ns, "fg").await.len();
        let pods = pods(&c.api, ns, "fg").await.len();
        if deployment.is_none() {
            assert_eq!(
                (sets, pods),
                (0, 0),
                "the deployment went before its dependents"
            );
            Ok(())
        } else {
            Err(format!("{sets} replica sets, {pods} pods"))
        }
    })
    .await;

    // Orphan: the ReplicaSet and its pods stay, no longer owned.
    let (orphan_rs, _) = active_replica_set(&c.api, ns, "orphan").await;
    let pods_before: Vec<String> = pods(&c.api, ns, "orphan")
        .await
        .iter()
        .map(name_of)
        .collect();
    c.kubectl.ok(&[
        "-n",
        ns,
        "delete",
        "deployment",
        "orphan",
        "--cascade=orphan",
    ]);
    wait_for("the orphaned deployment gone", || async {
        match get(&c.api, &deployment_path(ns, "orphan")).await {
            None => Ok(()),
            Some(d) => Err(d["metadata"].to_string()),
        }
    })
    .await;
    let sets = replica_sets(&c.api, ns, "orphan").await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(name_of(&sets[0]), orphan_rs);
    assert!(
        sets[0]["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{}",
        sets[0]["metadata"]
    );
    assert!(sets[0]["metadata"]["deletionTimestamp"].is_null());
    let mut pods_after: Vec<String> = pods(&c.api, ns, "orphan")
        .await
        .iter()
        .map(name_of)
        .collect();
    let mut pods_before = pods_before;
    pods_before.sort();
    pods_after.sort();
    assert_eq!(pods_after, pods_before);
    for pod in pods(&c.api, ns, "orphan").await {
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["name"], orphan_rs,
            "the pods stay owned by their replica set"
        );
    }
    // The ReplicaSet stays in charge of its pods.
    wait_for("the orphaned replica set still available", || async {
        let rs = get(
            &c.api,
            &format!("/apis/apps/v1/namespaces/{ns}/replicasets/{orphan_rs}"),
        )
        .await
        .ok_or("gone")?;
        if int(&rs["status"]["availableReplicas"]) == 2 {
            Ok(())
        } else {
            Err(rs["status"].to_string())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_namespace_gets_its_account_and_ca_and_deleting_it_removes_everything() {
    let c = cluster(&[]).await;
    let ns = "fresh";
    c.kubectl.ok(&["create", "namespace", ns]);
    wait_for("the default service account", || async {
        get(
            &c.api,
            &format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
        )
        .await
        .map(|_| ())
        .ok_or_else(|| "missing".to_string())
    })
    .await;
    let ca = std::fs::read_to_string(c.api.ca_file()).expect("reading the CA");
    let root_ca = wait_for("kube-root-ca.crt", || async {
        get(
            &c.api,
            &format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"),
        )
        .await
        .ok_or_else(|| "missing".to_string())
    })
    .await;
    assert_eq!(root_ca["data"]["ca.crt"].as_str(), Some(ca.as_str()));
    let accounts = c
        .kubectl
        .ok(&["-n", ns, "get", "serviceaccounts", "-o", "name"]);
    assert!(
        accounts.lines().any(|l| l == "serviceaccount/default"),
        "{accounts}"
    );

    apply(&c, ns, &deployment("app", 2, "nginx:1"));
    wait_rolled_out(&c.api, ns, "app").await;
    c.kubectl.ok(&["delete", "namespace", ns, "--timeout=60s"]);
    wait_for("the namespace gone", || async {
        match get(&c.api, &format!("/api/v1/namespaces/{ns}")).await {
            None => Ok(()),
            Some(n) => Err(n["status"].to_string()),
        }
    })
    .await;
    for kind in [
        "/apis/apps/v1/namespaces/fresh/deployments",
        "/apis/apps/v1/namespaces/fresh/replicasets",
        "/api/v1/namespaces/fresh/pods",
        "/api/v1/namespaces/fresh/serviceaccounts",
        "/api/v1/namespaces/fresh/configmaps",
    ] {
        assert!(list(&c.api, kind).await.is_empty(), "{kind} left");
    }
}

/// The HPA's condition of `type_`, as (status, reason, message).
fn hpa_condition(hpa: &Value, type_: &str) -> Option<(String, String, String)> {
    let c = hpa["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((s("status"), s("reason"), s("message")))
}

/// Reasons of the events about the object `name` of `kind` in `ns`.
async fn event_reasons(api: &ApiServer, ns: &str, kind: &str, name: &str) -> Vec<(String, String)> {
    list(api, &format!("/api/v1/namespaces/{ns}/events"))
        .await
        .iter()
        .filter(|e| e["involvedObject"]["kind"] == kind && e["involvedObject"]["name"] == name)
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or_default().to_string(),
                e["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpa_without_metrics_api_reports_it_and_still_enforces_min_replicas() {
    let c = cluster(&["--horizontal-pod-autoscaler-sync-period=1s"]).await;
    let ns = "default";
    let mut manifest: Value = serde_json::from_str(&deployment("web", 1, "nginx:1")).expect("json");
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"requests": {"cpu": "100m"}});
    apply(&c, ns, &manifest.to_string());
    wait_rolled_out(&c.api, ns, "web").await;
    c.kubectl.ok(&[
        "-n",
        ns,
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=5",
    ]);
    let hpa_path = format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web");
    let hpa = wait_for(
        "ScalingActive=False for the missing metrics API",
        || async {
            let hpa = get(&c.api, &hpa_path).await.ok_or("no hpa")?;
            match hpa_condition(&hpa, "ScalingActive") {
                Some((status, reason, _))
                    if status == "False" && reason == "FailedGetResourceMetric" =>
                {
                    Ok(hpa)
                }
                _ => Err(hpa["status"].to_string()),
            }
        },
    )
    .await;
    let (_, _, message) = hpa_condition(&hpa, "ScalingActive").expect("condition");
    assert!(
        message.starts_with(
            "the HPA was unable to compute the replica count: failed to get cpu utilization: \
             unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: "
        ),
        "{message}"
    );
    assert_eq!(
        hpa_condition(&hpa, "AbleToScale").map(|(s, r, _)| (s, r)),
        Some(("True".into(), "SucceededGetScale".into()))
    );
    assert_eq!(hpa["status"]["currentReplicas"], 1, "{}", hpa["status"]);
    let events = wait_for("the warning events", || async {
        let events = event_reasons(&c.api, ns, "HorizontalPodAutoscaler", "web").await;
        let has = |r: &str| events.iter().any(|(reason, _)| reason == r);
        if has("FailedGetResourceMetric") && has("FailedComputeMetricsReplicas") {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    assert!(
        events.iter().any(|(reason, message)| reason == "FailedComputeMetricsReplicas"
            && message.starts_with("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: ")),
        "{events:?}"
    );
    let table = c.kubectl.ok(&["-n", ns, "get", "hpa", "web"]);
    assert!(table.contains("<unknown>/50%"), "{table}");
    assert_eq!(
        int(&get(&c.api, &deployment_path(ns, "web"))
            .await
            .expect("deployment")["spec"]["replicas"]),
        1,
        "no metrics, within [min, max]: no rescale"
    );

    // Raising minReplicas above the current count scales the target into the range, metrics
    // or not.
    c.kubectl.ok(&[
        "-n",
        ns,
        "patch",
        "hpa",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"minReplicas":3}}"#,
    ]);
    wait_for("the deployment scaled to minReplicas", || async {
        let d = get(&c.api, &deployment_path(ns, "web"))
            .await
            .ok_or("no deployment")?;
        match int(&d["spec"]["replicas"]) {
            3 => Ok(()),
            n => Err(format!("{n} replicas")),
        }
    })
    .await;
    wait_rolled_out(&c.api, ns, "web").await;
    wait_for("the HPA status after the rescale", || async {
        let hpa = get(&c.api, &hpa_path).await.ok_or("no hpa")?;
        let s = &hpa["status"];
        // currentReplicas is the count before the rescale until the next resync.
        if int(&s["desiredReplicas"]) == 3
            && int(&s["currentReplicas"]) == 3
            && s["lastScaleTime"].is_string()
        {
            Ok(())
        } else {
            Err(s.to_string())
        }
    })
    .await;
    wait_for("the SuccessfulRescale event", || async {
        let events = event_reasons(&c.api, ns, "HorizontalPodAutoscaler", "web").await;
        let want = "New size: 3; reason: Current number of replicas below Spec.MinReplicas";
        if events
            .iter()
            .any(|(reason, message)| reason == "SuccessfulRescale" && message == want)
        {
            Ok(())
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
}

/// A cluster whose 2 `web` pods each use 200m of their 100m CPU request, reported through
/// the metrics stand-in.
async fn cluster_with_busy_pods() -> Cluster {
    let c = cluster(&["--horizontal-pod-autoscaler-sync-period=1s"]).await;
    let ns = "default";
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pods.metrics.k8s.io",
                     "annotations": {"api-approved.kubernetes.io": "unapproved, test stand-in"}},
        "spec": {"group": "metrics.k8s.io", "scope": "Namespaced",
                 "names": {"plural": "pods", "singular": "podmetrics", "kind": "PodMetrics"},
                 "versions": [{"name": "v1beta1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}});
    e2e::scheduler::create(
        &c.api,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    let metrics_path = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods");
    wait_for("the metrics stand-in served", || async {
        match c.api.get(&metrics_path).await {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let mut manifest: Value = serde_json::from_str(&deployment("web", 2, "nginx:1")).expect("json");
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"requests": {"cpu": "100m"}});
    apply(&c, ns, &manifest.to_string());
    wait_rolled_out(&c.api, ns, "web").await;
    // Each pod uses 200m of its 100m request: 200% against a 50% target. Pods in their CPU
    // initialization period count only with samples taken after they turned ready.
    let sampled = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(60)).to_string();
    for pod in pods(&c.api, ns, "web").await {
        e2e::scheduler::create(
            &c.api,
            &metrics_path,
            &json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
                    "metadata": {"name": name_of(&pod), "labels": pod["metadata"]["labels"]},
                    "timestamp": sampled, "window": "1s",
                    "containers": [{"name": "c", "usage": {"cpu": "200m", "memory": "1Mi"}}]}),
        )
        .await;
    }
    c
}

/// The resource metrics API stood in for by a CRD of the same group, version and plural: the
/// controller lists `metrics.k8s.io/v1beta1` pods by label selector just the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpa_scales_up_from_resource_metrics() {
    let c = cluster_with_busy_pods().await;
    let ns = "default";
    c.kubectl.ok(&[
        "-n",
        ns,
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=5",
    ]);
    // 2 pods at 4x the target ask for 8; the scale-up rate allows max(2*2, 4) = 4.
    wait_for("the SuccessfulRescale event", || async {
        let events = event_reasons(&c.api, ns, "HorizontalPodAutoscaler", "web").await;
        let want =
            "New size: 4; reason: cpu resource utilization (percentage of request) above target";
        if events
            .iter()
            .any(|(reason, message)| reason == "SuccessfulRescale" && message == want)
        {
            Ok(())
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    let hpa_path = format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web");
    let hpa = get(&c.api, &hpa_path).await.expect("hpa");
    let current = &hpa["status"]["currentMetrics"][0];
    assert_eq!(current["type"], "Resource", "{}", hpa["status"]);
    assert_eq!(current["resource"]["name"], "cpu");
    assert_eq!(current["resource"]["current"]["averageUtilization"], 200);
    assert_eq!(
        hpa_condition(&hpa, "ScalingActive").map(|(s, r, _)| (s, r)),
        Some(("True".into(), "ValidMetricFound".into())),
        "{}",
        hpa["status"]
    );
    let table = c.kubectl.ok(&["-n", ns, "get", "hpa", "web"]);
    assert!(table.contains("cpu: 200%/50%"), "{table}");
    wait_for("the deployment scaled up", || async {
        let d = get(&c.api, &deployment_path(ns, "web"))
            .await
            .ok_or("no deployment")?;
        match int(&d["spec"]["replicas"]) {
            n if n >= 4 => Ok(()),
            n => Err(format!("{n} replicas")),
        }
    })
    .await;
}

/// `spec.behavior` policies limit each step: one pod per minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpa_behavior_policy_limits_the_scale_up() {
    let c = cluster_with_busy_pods().await;
    let ns = "default";
    let hpa = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                          "target": {"type": "Utilization", "averageUtilization": 50}}}],
            "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}},
        },
    });
    apply(&c, ns, &hpa.to_string());
    let hpa_path = format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web");
    let hpa = wait_for("the rate-limited rescale", || async {
        let hpa = get(&c.api, &hpa_path).await.ok_or("no hpa")?;
        match hpa_condition(&hpa, "ScalingLimited") {
            Some((s, r, _))
                if s == "True"
                    && r == "ScaleUpLimit"
                    && hpa["status"]["lastScaleTime"].is_string() =>
            {
                Ok(hpa)
            }
            _ => Err(hpa["status"].to_string()),
        }
    })
    .await;
    assert_eq!(hpa["status"]["desiredReplicas"], 3, "{}", hpa["status"]);
    let d = get(&c.api, &deployment_path(ns, "web"))
        .await
        .expect("deployment");
    assert_eq!(
        int(&d["spec"]["replicas"]),
        3,
        "one pod more within the policy's minute"
    );
    // A later sync (currentReplicas 3) within the policy's minute adds nothing more.
    wait_for("a sync after the rescale", || async {
        let hpa = get(&c.api, &hpa_path).await.ok_or("no hpa")?;
        match int(&hpa["status"]["currentReplicas"]) {
            3 => Ok(()),
            n => Err(format!("currentReplicas {n}")),
        }
    })
    .await;
    let d = get(&c.api, &deployment_path(ns, "web"))
        .await
        .expect("deployment");
    assert_eq!(int(&d["spec"]["replicas"]), 3);
    wait_for("the SuccessfulRescale event", || async {
        let events = event_reasons(&c.api, ns, "HorizontalPodAutoscaler", "web").await;
        let want =
            "New size: 3; reason: cpu resource utilization (percentage of request) above target";
        match events
            .iter()
            .filter(|(r, _)| r == "SuccessfulRescale")
            .collect::<Vec<_>>()[..]
        {
            [(_, m)] if m == want => Ok(()),
            _ => Err(format!("{events:?}")),
        }
    })
    .await;
}
