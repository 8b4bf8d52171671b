//! The DaemonSet controller for real: an apiserver and a kube-controller-manager running only
//! `daemonset`; Node objects as ready kubelets report them (no kubelet, no scheduler runs: the
//! daemon pods stay unbound, pinned to their node by required node affinity), the test plays
//! the kubelet (`mark_pod_running_ready`) and follows rollouts with the real kubectl.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{list, mark_pod_finished, mark_pod_running_ready, wait_for};
use e2e::kcm_fixture::KcmCluster as Cluster;
use e2e::scheduler::{Node, create, get, merge_patch};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const NS: &str = "ds";

/// The tolerations upstream adds to every daemon pod without host networking.
const DEFAULT_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];

async fn cluster() -> Cluster {
    Cluster::start(&[NS], &["--controllers=daemonset"]).await
}

fn daemonset(name: &str, node_selector: Value, tolerations: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": node_selector,
                    "tolerations": tolerations,
                    "containers": [{"name": "c", "image": "agent:1"}],
                },
            },
        },
    })
}

fn ds_path(name: &str) -> String {
    format!("/apis/apps/v1/namespaces/{NS}/daemonsets/{name}")
}

/// The node a daemon pod is pinned to by its required node affinity.
fn pinned_node(pod: &Value) -> Option<String> {
    let terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()?;
    let [term] = terms.as_slice() else {
        return None;
    };
    let [field] = term["matchFields"].as_array()?.as_slice() else {
        return None;
    };
    let values = field["values"].as_array()?;
    (field["key"] == "metadata.name" && field["operator"] == "In" && values.len() == 1)
        .then(|| values[0].as_str().map(String::from))
        .flatten()
}

/// The DaemonSet's pods that are neither terminating nor finished.
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

/// Waits until the active pods of `app` are exactly one per node of `nodes`.
async fn wait_for_pods_on(api: &ApiServer, app: &str, nodes: &[&str]) -> BTreeMap<String, Value> {
    let want: BTreeSet<String> = nodes.iter().map(|n| n.to_string()).collect();
    wait_for(&format!("one {app} pod on each of {nodes:?}"), || async {
        let pods = active_pods(api, app).await;
        let by_node: BTreeMap<String, Value> = pods
            .iter()
            .filter_map(|p| Some((pinned_node(p)?, p.clone())))
            .collect();
        let keys: BTreeSet<String> = by_node.keys().cloned().collect();
        if pods.len() == want.len() && keys == want {
            Ok(by_node)
        } else {
            let seen: Vec<_> = pods.iter().map(pinned_node).collect();
            Err(format!("{seen:?}"))
        }
    })
    .await
}

fn tolerations_of(pod: &Value) -> BTreeSet<(String, String)> {
    pod["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["operator"] == "Exists" && t["tolerationSeconds"].is_null())
        .map(|t| {
            (
                t["key"].as_str().unwrap_or_default().to_string(),
                t["effect"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn label<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"]["labels"][key].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pod_per_eligible_node_follows_labels_and_taints() {
    let c = cluster().await;
    let api = &c.api;
    Node::new("n1").label("role", "worker").create(api).await;
    Node::new("n2").label("role", "worker").create(api).await;
    Node::new("n3").label("role", "infra").create(api).await;
    Node::new("t1")
        .label("role", "worker")
        .taint("dedicated", "x", "NoSchedule")
        .create(api)
        .await;

    create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/daemonsets"),
        &daemonset("agent", json!({"role": "worker"}), json!([])),
    )
    .await;
    let pods = wait_for_pods_on(api, "agent", &["n1", "n2"]).await;
    let revisions = list(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/controllerrevisions"),
    )
    .await;
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    let hash = label(&revisions[0], "controller-revision-hash").to_string();
    assert!(!hash.is_empty());
    for (node, pod) in &pods {
        assert!(
            pod["spec"]["nodeName"].is_null(),
            "{node}: left to the scheduler"
        );
        let tolerations = tolerations_of(pod);
        for (key, effect) in DEFAULT_TOLERATIONS {
            assert!(
                tolerations.contains(&(key.to_string(), effect.to_string())),
                "{node}: {key}:{effect} in {tolerations:?}"
            );
        }
        assert_eq!(label(pod, "controller-revision-hash"), hash, "{node}");
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet",
            "{node}"
        );
    }
    wait_for("the status counts", || async {
        let s = get(api, &ds_path("agent")).await.unwrap_or_default()["status"].clone();
        let ok = s["desiredNumberScheduled"] == 2
            && s["currentNumberScheduled"] == 2
            && s["updatedNumberScheduled"] == 2
            && s["numberMisscheduled"] == 0
            && s["numberReady"] == 0
            && s["numberUnavailable"] == 2
            && s["observedGeneration"] == 1;
        if ok { Ok(()) } else { Err(s.to_string()) }
    })
    .await;
    let events = list(api, &format!("/api/v1/namespaces/{NS}/events")).await;
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "SuccessfulCreate" && e["involvedObject"]["name"] == "agent"),
        "{events:?}"
    );

    // A new eligible node gets a pod; a node relabelled out of the selector loses its pod.
    Node::new("n4").label("role", "worker").create(api).await;
    wait_for_pods_on(api, "agent", &["n1", "n2", "n4"]).await;
    merge_patch(
        api,
        "/api/v1/nodes/n2",
        &json!({"metadata": {"labels": {"role": "infra"}}}),
    )
    .await;
    let pods = wait_for_pods_on(api, "agent", &["n1", "n4"]).await;

    // A failed daemon pod is replaced.
    let failed = pods["n1"].clone();
    mark_pod_finished(api, &failed, 1).await;
    wait_for("the failed pod replaced", || async {
        let pods = active_pods(api, "agent").await;
        let on_n1: Vec<_> = pods
            .iter()
            .filter(|p| pinned_node(p).as_deref() == Some("n1"))
            .collect();
        match on_n1.as_slice() {
            [p] if p["metadata"]["uid"] != failed["metadata"]["uid"] => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    wait_for("the failed pod deleted", || async {
        let path = format!(
            "/api/v1/namespaces/{NS}/pods/{}",
            failed["metadata"]["name"].as_str().unwrap_or_default()
        );
        match get(api, &path).await {
            None => Ok(()),
            Some(p) if !p["metadata"]["deletionTimestamp"].is_null() => Ok(()),
            Some(p) => Err(p["status"]["phase"].to_string()),
        }
    })
    .await;

    // A tainted node gets a pod only from a DaemonSet tolerating its taint.
    create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/daemonsets"),
        &daemonset(
            "tolerant",
            json!({"role": "worker"}),
            json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]),
        ),
    )
    .await;
    wait_for_pods_on(api, "tolerant", &["n1", "n4", "t1"]).await;
    // Tainting a node NoExecute evicts the pods that do not tolerate it.
    merge_patch(
        api,
        "/api/v1/nodes/n4",
        &json!({"spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]}}),
    )
    .await;
    wait_for_pods_on(api, "agent", &["n1"]).await;
    wait_for_pods_on(api, "tolerant", &["n1", "t1"]).await;
    let _ = &c.dir;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_change_rolls_one_node_at_a_time() {
    let c = cluster().await;
    let api = &c.api;
    let nodes = ["n1", "n2", "n3"];
    for n in nodes {
        Node::new(n).create(api).await;
    }
    create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/daemonsets"),
        &daemonset("roll", json!({}), json!([])),
    )
    .await;
    let pods = wait_for_pods_on(api, "roll", &nodes).await;
    for pod in pods.values() {
        mark_pod_running_ready(api, pod).await;
    }
    wait_for("all available", || async {
        let s = get(api, &ds_path("roll")).await.unwrap_or_default()["status"].clone();
        if s["numberAvailable"] == 3 && s["numberReady"] == 3 && s["numberUnavailable"] == 0 {
            Ok(())
        } else {
            Err(s.to_string())
        }
    })
    .await;
    let kubectl = &c.kubectl;
    let out = kubectl.ok(&[
        "-n",
        NS,
        "rollout",
        "status",
        "daemonset/roll",
        "--timeout=30s",
    ]);
    assert!(
        out.contains("daemon set \"roll\" successfully rolled out"),
        "{out}"
    );
    let old_hash = label(&pods["n1"], "controller-revision-hash").to_string();

    merge_patch(
        api,
        &ds_path("roll"),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:2"}]}}}}),
    )
    .await;
    let mut status = kubectl.spawn(&[
        "-n",
        NS,
        "rollout",
        "status",
        "daemonset/roll",
        "--timeout=60s",
    ]);

    let rollout = follow_rollout(api, "roll", &nodes, &old_hash).await;
    assert!(
        rollout.max_missing <= 1,
        "{} nodes were without a ready pod at once (maxUnavailable 1)",
        rollout.max_missing
    );
    assert_eq!(rollout.max_pods, nodes.len(), "no surge");
    assert!(rollout.saw_partial, "the rollout was never seen half done");
    let new_hash = rollout.new_hash;
    assert_ne!(new_hash, old_hash);
    status.wait_for(Duration::from_secs(30), "success", |out| {
        out.contains("daemon set \"roll\" successfully rolled out")
    });
    wait_for("the final status", || async {
        let s = get(api, &ds_path("roll")).await.unwrap_or_default()["status"].clone();
        if s["updatedNumberScheduled"] == 3
            && s["numberAvailable"] == 3
            && s["observedGeneration"] == 2
        {
            Ok(())
        } else {
            Err(s.to_string())
        }
    })
    .await;
    let revisions: BTreeMap<i64, String> = list(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/controllerrevisions"),
    )
    .await
    .iter()
    .map(|r| {
        (
            r["revision"].as_i64().unwrap_or_default(),
            label(r, "controller-revision-hash").to_string(),
        )
    })
    .collect();
    assert_eq!(
        revisions,
        BTreeMap::from([(1, old_hash.clone()), (2, new_hash.clone())])
    );

    // OnDelete: a template change replaces a pod only once someone deletes it.
    let before = wait_for_pods_on(api, "roll", &nodes).await;
    merge_patch(
        api,
        &ds_path("roll"),
        &json!({"spec": {
            "updateStrategy": {"type": "OnDelete", "rollingUpdate": null},
            "template": {"spec": {"containers": [{"name": "c", "image": "agent:3"}]}},
        }}),
    )
    .await;
    wait_for("the OnDelete template observed", || async {
        let s = get(api, &ds_path("roll")).await.unwrap_or_default()["status"].clone();
        if s["observedGeneration"] == 3 && s["updatedNumberScheduled"] == 0 {
            Ok(())
        } else {
            Err(s.to_string())
        }
    })
    .await;
    let victim = &before["n1"];
    let path = format!(
        "/api/v1/namespaces/{NS}/pods/{}",
        victim["metadata"]["name"].as_str().unwrap_or_default()
    );
    let (code, body) = api
        .request("DELETE", &path, None, Vec::new())
        .await
        .expect("deleting a pod");
    assert_eq!(code, 200, "{body}");
    let after = wait_for("the deleted pod replaced on the new template", || async {
        let pods = wait_for_pods_on(api, "roll", &nodes).await;
        let hash = label(&pods["n1"], "controller-revision-hash");
        if pods["n1"]["metadata"]["uid"] != victim["metadata"]["uid"]
            && hash != new_hash
            && hash != old_hash
        {
            Ok(pods)
        } else {
            Err(hash.to_string())
        }
    })
    .await;
    for n in ["n2", "n3"] {
        assert_eq!(
            after[n]["metadata"]["uid"], before[n]["metadata"]["uid"],
            "{n} kept its pod"
        );
    }
}

/// What the test saw while following a rollout.
struct Rollout {
    new_hash: String,
    /// The most nodes seen at once without a ready pod.
    max_missing: usize,
    /// The most active pods seen at once.
    max_pods: usize,
    /// Some but not all nodes seen on the new template.
    saw_partial: bool,
}

/// Plays the kubelet through a rollout of `app` away from `old_hash`: every new pod becomes
/// ready when seen; returns once every node runs one ready new pod and nothing else.
async fn follow_rollout(api: &ApiServer, app: &str, nodes: &[&str], old_hash: &str) -> Rollout {
    let max_missing = std::cell::Cell::new(0);
    let max_pods = std::cell::Cell::new(0);
    let saw_partial = std::cell::Cell::new(false);
    let new_hash = wait_for(&format!("every node on the new {app} template"), || async {
        let pods = active_pods(api, app).await;
        let mut ready_nodes = BTreeSet::new();
        let mut new_ready = BTreeSet::new();
        let mut new_hash = None;
        for p in &pods {
            let node = pinned_node(p).unwrap_or_default();
            let hash = label(p, "controller-revision-hash");
            let ready = p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            if ready {
                ready_nodes.insert(node.clone());
            }
            if hash != old_hash {
                new_hash = Some(hash.to_string());
                if ready {
                    new_ready.insert(node);
                } else {
                    mark_pod_running_ready(api, p).await;
                }
            }
        }
        max_missing.set(max_missing.get().max(nodes.len() - ready_nodes.len()));
        max_pods.set(max_pods.get().max(pods.len()));
        if !new_ready.is_empty() && new_ready.len() < nodes.len() {
            saw_partial.set(true);
        }
        match new_hash {
            Some(h) if new_ready.len() == nodes.len() && pods.len() == nodes.len() => Ok(h),
            _ => Err(format!(
                "new and ready on {new_ready:?}; {} pods",
                pods.len()
            )),
        }
    })
    .await;
    Rollout {
        new_hash,
        max_missing: max_missing.get(),
        max_pods: max_pods.get(),
        saw_partial: saw_partial.get(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_surge_starts_the_new_pod_before_deleting_the_old() {
    let c = cluster().await;
    let api = &c.api;
    let nodes = ["n1", "n2", "n3"];
    for n in nodes {
        Node::new(n).create(api).await;
    }
    let mut ds = daemonset("surge", json!({}), json!([]));
    ds["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxSurge": 1, "maxUnavailable": 0});
    create(
        api,
        &format!("/apis/apps/v1/namespaces/{NS}/daemonsets"),
        &ds,
    )
    .await;
    let pods = wait_for_pods_on(api, "surge", &nodes).await;
    for pod in pods.values() {
        mark_pod_running_ready(api, pod).await;
    }
    wait_for("all available", || async {
        let s = get(api, &ds_path("surge")).await.unwrap_or_default()["status"].clone();
        if s["numberAvailable"] == 3 {
            Ok(())
        } else {
            Err(s.to_string())
        }
    })
    .await;
    let old_hash = label(&pods["n1"], "controller-revision-hash").to_string();
    merge_patch(
        api,
        &ds_path("surge"),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:2"}]}}}}),
    )
    .await;
    let rollout = follow_rollout(api, "surge", &nodes, &old_hash).await;
    assert_eq!(
        rollout.max_missing, 0,
        "maxUnavailable 0: every node kept a ready pod"
    );
    assert_eq!(
        rollout.max_pods,
        nodes.len() + 1,
        "one node at a time ran two pods"
    );
    assert!(rollout.saw_partial);
    assert_ne!(rollout.new_hash, old_hash);
}
