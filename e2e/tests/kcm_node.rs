//! kube-controller-manager's node controllers for real: the test plays the kubelets (a Node
//! with a Ready condition and a Lease renewed every second), stops one of them, and asserts
//! what node-lifecycle, taint-eviction, pod GC, TTL and node IPAM controllers make of it.

use e2e::apiserver::{ApiServer, Backend};
use e2e::controller_manager::{
    ControllerManager, mark_pod_finished, mark_pod_running_ready, wait_for,
};
use e2e::scheduler::{self as sched, Node, create, create_namespace, get, merge_patch, pod, set};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The fake kubelets post every second: a grace of 8 s lets a loaded machine stall them for
/// seconds without a healthy node (the steady one above all) turning Unknown.
const HEALTH_FLAGS: [&str; 3] = [
    "--node-monitor-period=1s",
    "--node-monitor-grace-period=8s",
    "--node-startup-grace-period=8s",
];

/// The apiserver with upstream's plugins but ServiceAccount admission (no token controller
/// runs) and DefaultTolerationSeconds (it would give every pod 300 s of unreachable
/// tolerance, and the untolerating pod of these tests would wait that long).
async fn apiserver(dir: &std::path::Path) -> Arc<ApiServer> {
    let flags = ["--disable-admission-plugins=ServiceAccount,DefaultTolerationSeconds".to_string()];
    Arc::new(
        ApiServer::start_with(&dir.join("apiserver"), Backend::Embedded, &flags)
            .await
            .expect("apiserver"),
    )
}

fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A kubelet's heartbeats for one node: its Lease renewed and its Ready condition posted every
/// second while `alive`.
struct Kubelet {
    alive: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Kubelet {
    async fn start(api: &Arc<ApiServer>, node: &str) -> Self {
        Self::reporting(api, node, Health::Ready).await
    }

    /// A kubelet that keeps posting `health`.
    async fn reporting(api: &Arc<ApiServer>, node: &str, health: Health) -> Self {
        let now = micro_time(jiff::Timestamp::now());
        create(
            api,
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            &json!({"metadata": {"name": node},
                    "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now}}),
        )
        .await;
        let alive = Arc::new(AtomicBool::new(true));
        let (api, flag, node) = (api.clone(), alive.clone(), node.to_string());
        let task = tokio::spawn(async move {
            loop {
                if flag.load(Ordering::SeqCst) {
                    post_status(&api, &node, health).await;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Self { alive, task }
    }

    fn set_alive(&self, alive: bool) {
        self.alive.store(alive, Ordering::SeqCst);
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone, Copy)]
enum Health {
    Ready,
    /// Ready=False and MemoryPressure=True: the kubelet is alive but the node is not fine.
    Sick,
}

async fn heartbeat(api: &ApiServer, node: &str) {
    post_status(api, node, Health::Ready).await
}

async fn post_status(api: &ApiServer, node: &str, health: Health) {
    let now = jiff::Timestamp::now();
    let lease = format!("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}");
    let patch = json!({"spec": {"renewTime": micro_time(now)}});
    let _ = api
        .request(
            "PATCH",
            &lease,
            Some("application/merge-patch+json"),
            patch.to_string(),
        )
        .await;
    let (ready, reason, memory) = match health {
        Health::Ready => ("True", "KubeletReady", "False"),
        Health::Sick => ("False", "KubeletNotReady", "True"),
    };
    let condition = |type_: &str, status: &str, reason: &str| {
        json!({"type": type_, "status": status, "reason": reason, "message": reason,
               "lastHeartbeatTime": now.to_string(), "lastTransitionTime": now.to_string()})
    };
    let status = json!({"status": {"conditions": [
        condition("Ready", ready, reason),
        condition("MemoryPressure", memory, "KubeletMemoryPressure"),
    ]}});
    let _ = api
        .request(
            "PATCH",
            &format!("/api/v1/nodes/{node}/status"),
            Some("application/merge-patch+json"),
            status.to_string(),
        )
        .await;
}

fn timestamp(value: &Value) -> jiff::Timestamp {
    value
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a timestamp: {value}"))
}

fn has_taint(node: &Value, key: &str, effect: &str) -> bool {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["key"] == key && t["effect"] == effect)
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

async fn node(api: &ApiServer, name: &str) -> Value {
    get(api, &format!("/api/v1/nodes/{name}"))
        .await
        .unwrap_or_default()
}

async fn wait_for_node(
    api: &ApiServer,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(&format!("node {name}: {what}"), || async {
        let n = node(api, name).await;
        if check(&n) { Ok(n) } else { Err(n.to_string()) }
    })
    .await
}

/// Deleted by a controller: gone, or (bound pods are deleted gracefully and no kubelet
/// confirms) carrying a deletionTimestamp.
fn deleted(pod: &Option<Value>) -> bool {
    pod.as_ref()
        .is_none_or(|p| !p["metadata"]["deletionTimestamp"].is_null())
}

fn bound_pod(name: &str, node: &str, tolerations: Value) -> Value {
    let mut p = pod(name);
    set(&mut p, "/spec/nodeName", json!(node));
    set(&mut p, "/spec/tolerations", tolerations);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_health_taints_and_eviction() {
    let dir = tempfile::tempdir().unwrap();
    let api = apiserver(dir.path()).await;
    let mut flags = vec!["--controllers=nodelifecycle,taint-eviction"];
    flags.extend(HEALTH_FLAGS);
    let cm = ControllerManager::start(&dir.path().join("kcm"), &api, &flags)
        .await
        .expect("kube-controller-manager");

    // A second, healthy node keeps the zone out of full disruption (where upstream stops
    // evicting, assuming the controller itself is cut off).
    Node::new("steady")
        .label("kubernetes.io/os", "linux")
        .create(&api)
        .await;
    let _steady = Kubelet::start(&api, "steady").await;

    // A kubelet reporting trouble: condition taints, and a NoExecute not-ready taint (its own
    // zone, so the eviction rate limit of the other zone is not shared).
    Node::new("sick")
        .label("topology.kubernetes.io/zone", "z2")
        .create(&api)
        .await;
    let _sick = Kubelet::reporting(&api, "sick", Health::Sick).await;
    wait_for_node(&api, "sick", "not-ready and memory-pressure taints", |n| {
        has_taint(n, "node.kubernetes.io/not-ready", "NoSchedule")
            && has_taint(n, "node.kubernetes.io/memory-pressure", "NoSchedule")
            && has_taint(n, "node.kubernetes.io/not-ready", "NoExecute")
            && !has_taint(n, "node.kubernetes.io/unreachable", "NoExecute")
    })
    .await;

    // Created as a kubelet registers: the admission's not-ready taint, then Ready=True.
    let created = create(
        &api,
        "/api/v1/nodes",
        &json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}}),
    )
    .await;
    assert!(
        has_taint(&created, "node.kubernetes.io/not-ready", "NoSchedule"),
        "admission should taint a new node: {created}"
    );
    heartbeat(&api, "n1").await;
    let kubelet = Kubelet::start(&api, "n1").await;
    wait_for_node(&api, "n1", "a Ready node loses the not-ready taint", |n| {
        !has_taint(n, "node.kubernetes.io/not-ready", "NoSchedule")
            && n["metadata"]["resourceVersion"].is_string()
    })
    .await;
    sched::wait_for_event(&api, "default", "n1", "RegisteredNode").await;

    // The deprecated beta OS label follows the stable one.
    wait_for_node(&api, "steady", "beta.kubernetes.io/os label", |n| {
        n["metadata"]["labels"]["beta.kubernetes.io/os"] == "linux"
    })
    .await;

    // Cordoning is a NoSchedule taint too, and uncordoning removes it.
    merge_patch(
        &api,
        "/api/v1/nodes/steady",
        &json!({"spec": {"unschedulable": true}}),
    )
    .await;
    wait_for_node(&api, "steady", "cordon taint", |n| {
        has_taint(n, "node.kubernetes.io/unschedulable", "NoSchedule")
    })
    .await;
    merge_patch(
        &api,
        "/api/v1/nodes/steady",
        &json!({"spec": {"unschedulable": false}}),
    )
    .await;
    wait_for_node(&api, "steady", "no cordon taint", |n| {
        !has_taint(n, "node.kubernetes.io/unschedulable", "NoSchedule")
    })
    .await;

    let ns = "evict";
    create_namespace(&api, ns).await;
    let unreachable = |seconds: Option<i64>| {
        let mut t = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                           "effect": "NoExecute"});
        if let Some(s) = seconds {
            t["tolerationSeconds"] = json!(s);
        }
        json!([t])
    };
    for p in [
        bound_pod("plain", "n1", json!([])),
        bound_pod("brief", "n1", unreachable(Some(3))),
        bound_pod("forever", "n1", unreachable(None)),
    ] {
        let created = sched::create_pod(&api, ns, &p).await;
        mark_pod_running_ready(&api, &created).await;
    }

    // The kubelet goes silent.
    kubelet.set_alive(false);
    let n1 = wait_for_node(&api, "n1", "Ready Unknown", |n| {
        condition(n, "Ready").is_some_and(|c| c["status"] == "Unknown")
    })
    .await;
    let ready = condition(&n1, "Ready").unwrap();
    assert_eq!(ready["reason"], "NodeStatusUnknown", "{n1}");
    assert_eq!(
        ready["message"], "Kubelet stopped posting node status.",
        "{n1}"
    );
    for type_ in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        assert_eq!(
            condition(&n1, type_).map(|c| &c["status"]),
            Some(&json!("Unknown")),
            "{type_}: {n1}"
        );
    }
    let tainted = wait_for_node(&api, "n1", "unreachable taints", |n| {
        has_taint(n, "node.kubernetes.io/unreachable", "NoSchedule")
            && has_taint(n, "node.kubernetes.io/unreachable", "NoExecute")
    })
    .await;
    let no_execute = tainted["spec"]["taints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["effect"] == "NoExecute")
        .unwrap();
    // Second precision, never later than the real time the taint was added.
    let time_added = timestamp(&no_execute["timeAdded"]);
    let brief = sched::get_pod(&api, ns, "brief").await;
    // Only meaningful while the 3 s cannot have passed (a loaded machine may be slower).
    if jiff::Timestamp::now().duration_since(time_added) < jiff::SignedDuration::from_secs(2) {
        assert!(
            !deleted(&brief),
            "the pod tolerating 3 s was deleted right away: {brief:?}"
        );
    }

    wait_for("the untolerating pod deleted", || async {
        let p = sched::get_pod(&api, ns, "plain").await;
        if deleted(&p) {
            Ok(())
        } else {
            Err(format!("{p:?}"))
        }
    })
    .await;
    if let Some(p) = sched::get_pod(&api, ns, "plain").await {
        let target = condition(&p, "DisruptionTarget");
        assert_eq!(
            target.map(|c| &c["reason"]),
            Some(&json!("DeletionByTaintManager")),
            "{p}"
        );
    }
    let event = sched::wait_for_event(&api, ns, "plain", "TaintManagerEviction").await;
    assert_eq!(
        event.message,
        format!("Marking for deletion Pod {ns}/plain")
    );

    wait_for("the pod tolerating 3 s deleted", || async {
        let p = sched::get_pod(&api, ns, "brief").await;
        if deleted(&p) {
            Ok(())
        } else {
            Err(format!("{p:?}"))
        }
    })
    .await;
    // The controller marks the pod right before deleting it: not before the 3 s were up.
    let brief = sched::get_pod(&api, ns, "brief")
        .await
        .expect("bound pods linger");
    let target = condition(&brief, "DisruptionTarget").expect("DisruptionTarget condition");
    let waited = timestamp(&target["lastTransitionTime"]).duration_since(time_added);
    assert!(
        waited >= jiff::SignedDuration::from_secs(3),
        "deleted {waited:?} after the taint, tolerating 3 s: {brief}"
    );

    let forever = sched::get_pod(&api, ns, "forever")
        .await
        .expect("forever pod");
    assert!(
        !deleted(&Some(forever.clone())),
        "the pod tolerating forever was deleted: {forever}"
    );
    // MarkPodsNotReady: the pods of a node that went silent are not ready.
    assert_eq!(
        condition(&forever, "Ready").map(|c| &c["status"]),
        Some(&json!("False")),
        "{forever}"
    );
    sched::wait_for_event(&api, "default", "n1", "NodeNotReady").await;

    // The kubelet comes back: taints go.
    kubelet.set_alive(true);
    wait_for_node(&api, "n1", "taints removed after heartbeats resumed", |n| {
        condition(n, "Ready").is_some_and(|c| c["status"] == "True")
            && !has_taint(n, "node.kubernetes.io/unreachable", "NoSchedule")
            && !has_taint(n, "node.kubernetes.io/unreachable", "NoExecute")
    })
    .await;
    sched::delete_node(&api, "n1").await;
    sched::wait_for_event(&api, "default", "n1", "RemovingNode").await;
    drop(cm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_gc_ttl_and_ipam() {
    let dir = tempfile::tempdir().unwrap();
    let api = apiserver(dir.path()).await;
    let cm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &[
            "--controllers=podgc,ttl,nodeipam",
            "--terminated-pod-gc-threshold=2",
            "--allocate-node-cidrs=true",
            "--cluster-cidr=10.244.0.0/16",
        ],
    )
    .await
    .expect("kube-controller-manager");
    Node::new("a").create(&api).await;
    Node::new("b").create(&api).await;

    // Node IPAM: distinct /24s of the cluster CIDR.
    let mut cidrs = vec![];
    for name in ["a", "b"] {
        let n = wait_for_node(&api, name, "podCIDR", |n| n["spec"]["podCIDR"].is_string()).await;
        let cidr = n["spec"]["podCIDR"].as_str().unwrap().to_string();
        assert_eq!(n["spec"]["podCIDRs"], json!([cidr]), "{n}");
        assert!(
            cidr.starts_with("10.244.") && cidr.ends_with(".0/24"),
            "{cidr}"
        );
        cidrs.push(cidr);
    }
    assert_ne!(cidrs[0], cidrs[1]);

    // TTL: a small cluster caches for 0 s.
    wait_for_node(&api, "a", "ttl annotation", |n| {
        n["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"] == "0"
    })
    .await;

    // Terminated pods beyond the threshold go, oldest first; running ones stay.
    let ns = "gc";
    create_namespace(&api, ns).await;
    sched::create_pod(&api, ns, &bound_pod("running", "a", json!([]))).await;
    for i in 0..4 {
        let p = sched::create_pod(&api, ns, &bound_pod(&format!("done-{i}"), "a", json!([]))).await;
        mark_pod_finished(&api, &p, 0).await;
    }
    wait_for("only 2 terminated pods left", || async {
        let mut names = vec![];
        for name in ["running", "done-0", "done-1", "done-2", "done-3"] {
            if sched::get_pod(&api, ns, name).await.is_some() {
                names.push(name);
            }
        }
        if names == ["running", "done-2", "done-3"] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;

    // Pods of a deleted node are force-deleted.
    let orphan = sched::create_pod(&api, ns, &bound_pod("orphan", "b", json!([]))).await;
    mark_pod_running_ready(&api, &orphan).await;
    sched::delete_node(&api, "b").await;
    wait_for("the deleted node's pod gone", || async {
        match sched::get_pod(&api, ns, "orphan").await {
            None => Ok(()),
            Some(p) => Err(p.to_string()),
        }
    })
    .await;
    assert!(sched::get_pod(&api, ns, "running").await.is_some());
    drop(cm);
}
