//! The endpoints, endpointslice, endpointslice-mirroring and disruption controllers for real:
//! an apiserver and a kube-controller-manager running
//! `endpoint,endpointslice,endpointslicemirroring,disruption`; the test plays the kubelet
//! (pod IPs and readiness) and reads the results through the API and the real kubectl.

use e2e::apiserver::ApiServer;
use e2e::controller_manager::{list, mark_pod_running_ready_with_ip, wait_for};
use e2e::kcm_fixture::KcmCluster as Cluster;
use e2e::scheduler::{Node, create, get, merge_patch};
use serde_json::{Value, json};

const HOLD: &str = "e2e.k8s.io/hold";

async fn cluster(ns: &str) -> Cluster {
    Cluster::start(
        &[ns],
        &["--controllers=endpoint,endpointslice,endpointslicemirroring,disruption"],
    )
    .await
}

/// A pod labelled `app` whose container exposes `web-port` as `port`, on `node` when given.
fn pod(name: &str, app: &str, port: i32, node: Option<&str>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "ports": [{"name": "web-port", "containerPort": port}]}]},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

async fn create_pod(api: &ApiServer, ns: &str, pod: &Value) -> Value {
    create(api, &format!("/api/v1/namespaces/{ns}/pods"), pod).await
}

/// Plays the kubelet for a pod that runs but does not pass its readiness probe.
async fn mark_pod_running_not_ready(api: &ApiServer, pod: &Value, ip: &str) {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let now = jiff::Timestamp::now().to_string();
    let status = json!({"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "startTime": now,
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "False", "lastTransitionTime": now},
        ],
    }});
    merge_patch(
        api,
        &format!("/api/v1/namespaces/{ns}/pods/{name}/status"),
        &status,
    )
    .await;
}

fn ips(addresses: &Value) -> Vec<String> {
    let mut ips: Vec<String> = addresses
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["ip"].as_str().map(String::from))
        .collect();
    ips.sort();
    ips
}

/// (port, ready ips, not-ready ips) per subset, sorted by port.
fn subsets(endpoints: &Value) -> Vec<(i64, Vec<String>, Vec<String>)> {
    let mut out: Vec<(i64, Vec<String>, Vec<String>)> = endpoints["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["ports"][0]["port"].as_i64().unwrap_or(0),
                ips(&s["addresses"]),
                ips(&s["notReadyAddresses"]),
            )
        })
        .collect();
    out.sort();
    out
}

/// (ip, ready, serving, terminating) of every endpoint of `slices`, sorted.
fn slice_endpoints(slices: &[Value]) -> Vec<(String, bool, bool, bool)> {
    let mut out: Vec<(String, bool, bool, bool)> = slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            let c = &e["conditions"];
            (
                e["addresses"][0].as_str().unwrap_or_default().to_string(),
                c["ready"] == true,
                c["serving"] == true,
                c["terminating"] == true,
            )
        })
        .collect();
    out.sort();
    out
}

async fn slices_of(api: &ApiServer, ns: &str, service: &str) -> Vec<Value> {
    list(
        api,
        &format!(
            "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D{service}"
        ),
    )
    .await
}

async fn wait_for_subsets(
    api: &ApiServer,
    path: &str,
    want: Vec<(i64, Vec<&str>, Vec<&str>)>,
) -> Value {
    let want: Vec<(i64, Vec<String>, Vec<String>)> = want
        .into_iter()
        .map(|(p, r, n)| {
            let s = |v: Vec<&str>| v.into_iter().map(String::from).collect();
            (p, s(r), s(n))
        })
        .collect();
    wait_for(&format!("Endpoints {path} {want:?}"), || async {
        let endpoints = get(api, path).await.ok_or("no Endpoints")?;
        if subsets(&endpoints) == want {
            Ok(endpoints)
        } else {
            Err(endpoints.to_string())
        }
    })
    .await
}

async fn wait_for_slices(
    api: &ApiServer,
    ns: &str,
    service: &str,
    want: Vec<(&str, bool, bool, bool)>,
) -> Vec<Value> {
    let want: Vec<(String, bool, bool, bool)> = want
        .into_iter()
        .map(|(ip, r, s, t)| (ip.to_string(), r, s, t))
        .collect();
    wait_for(&format!("slices of {service}: {want:?}"), || async {
        let slices = slices_of(api, ns, service).await;
        if slice_endpoints(&slices) == want {
            Ok(slices)
        } else {
            Err(Value::Array(slices).to_string())
        }
    })
    .await
}

#[tokio::test]
async fn endpoints_and_slices_follow_pods() {
    let ns = "ep";
    let c = cluster(ns).await;
    let api = &c.api;
    Node::new("n1")
        .label("topology.kubernetes.io/zone", "zone-a")
        .create(api)
        .await;
    create(
        api,
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"metadata": {"name": "web", "labels": {"tier": "front"}},
                "spec": {"selector": {"app": "web"},
                         "ports": [{"name": "http", "port": 80, "targetPort": "web-port",
                                    "protocol": "TCP", "appProtocol": "http"}]}}),
    )
    .await;
    let mut p2 = pod("p2", "web", 8080, Some("n1"));
    // Holds p2 while it is being deleted, so it shows as terminating.
    p2["metadata"]["finalizers"] = json!([HOLD]);
    // p1 names the service as its subdomain: its hostname is published.
    let mut p1 = pod("p1", "web", 8080, Some("n1"));
    p1["spec"]["hostname"] = json!("p1");
    p1["spec"]["subdomain"] = json!("web");
    let p1 = create_pod(api, ns, &p1).await;
    let p2 = create_pod(api, ns, &p2).await;
    let p3 = create_pod(api, ns, &pod("p3", "web", 8080, Some("n1"))).await;
    create_pod(api, ns, &pod("other", "db", 8080, Some("n1"))).await;
    mark_pod_running_ready_with_ip(api, &p1, "10.0.0.1").await;
    mark_pod_running_ready_with_ip(api, &p2, "10.0.0.2").await;
    mark_pod_running_not_ready(api, &p3, "10.0.0.3").await;

    let path = format!("/api/v1/namespaces/{ns}/endpoints/web");
    let endpoints = wait_for_subsets(
        api,
        &path,
        vec![(8080, vec!["10.0.0.1", "10.0.0.2"], vec!["10.0.0.3"])],
    )
    .await;
    let subset = &endpoints["subsets"][0];
    assert_eq!(
        subset["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}])
    );
    let address = subset["addresses"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["ip"] == "10.0.0.1"))
        .expect("p1's address");
    assert_eq!(address["nodeName"], "n1");
    assert_eq!(address["hostname"], "p1");
    assert_eq!(address["targetRef"]["kind"], "Pod");
    assert_eq!(address["targetRef"]["name"], "p1");
    assert_eq!(endpoints["metadata"]["labels"]["tier"], "front");

    let slices = wait_for_slices(
        api,
        ns,
        "web",
        vec![
            ("10.0.0.1", true, true, false),
            ("10.0.0.2", true, true, false),
            ("10.0.0.3", false, false, false),
        ],
    )
    .await;
    assert_eq!(slices.len(), 1, "{slices:?}");
    let slice = &slices[0];
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["metadata"]["generateName"], "web-");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["name"], "web");
    assert_eq!(slice["ports"][0]["port"], 8080);
    assert_eq!(slice["ports"][0]["name"], "http");
    let first = &slice["endpoints"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["addresses"][0] == "10.0.0.1").cloned())
        .expect("p1's endpoint");
    assert_eq!(first["zone"], "zone-a");
    assert_eq!(first["nodeName"], "n1");
    assert_eq!(first["targetRef"]["name"], "p1");
    assert_eq!(first["hostname"], "p1");

    // A terminating pod leaves the Endpoints and stays in the slice as terminating.
    let (status, body) = api
        .request(
            "DELETE",
            &format!("/api/v1/namespaces/{ns}/pods/p2"),
            None,
            "",
        )
        .await
        .expect("DELETE p2");
    assert!(status == 200 || status == 202, "{status} {body}");
    wait_for_subsets(api, &path, vec![(8080, vec!["10.0.0.1"], vec!["10.0.0.3"])]).await;
    wait_for_slices(
        api,
        ns,
        "web",
        vec![
            ("10.0.0.1", true, true, false),
            ("10.0.0.2", false, true, true),
            ("10.0.0.3", false, false, false),
        ],
    )
    .await;

    // A pod whose named port maps to another number lands in its own subset and slice.
    let p4 = create_pod(api, ns, &pod("p4", "web", 9090, Some("n1"))).await;
    mark_pod_running_ready_with_ip(api, &p4, "10.0.0.4").await;
    let endpoints = wait_for_subsets(
        api,
        &path,
        vec![
            (8080, vec!["10.0.0.1"], vec!["10.0.0.3"]),
            (9090, vec!["10.0.0.4"], vec![]),
        ],
    )
    .await;
    // The write reflecting p4's readiness carries the time of that change.
    let p4_ready = get(api, &format!("/api/v1/namespaces/{ns}/pods/p4"))
        .await
        .and_then(|p| {
            let conditions = p["status"]["conditions"].as_array()?.clone();
            let ready = conditions.into_iter().find(|c| c["type"] == "Ready")?;
            ready["lastTransitionTime"].as_str().map(String::from)
        })
        .expect("p4's Ready condition");
    let trigger = |o: &Value| {
        o["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let p4_ready: jiff::Timestamp = p4_ready.parse().expect("a timestamp");
    assert_eq!(trigger(&endpoints), Some(p4_ready), "{endpoints}");
    let slices = wait_for_slices(
        api,
        ns,
        "web",
        vec![
            ("10.0.0.1", true, true, false),
            ("10.0.0.2", false, true, true),
            ("10.0.0.3", false, false, false),
            ("10.0.0.4", true, true, false),
        ],
    )
    .await;
    assert_eq!(slices.len(), 2, "one slice per port set: {slices:?}");
    let p4_slice = slices
        .iter()
        .find(|s| s["ports"][0]["port"] == 9090)
        .expect("the 9090 slice");
    assert_eq!(trigger(p4_slice), Some(p4_ready), "{p4_slice}");

    // publishNotReadyAddresses: every address is ready, terminating ones included.
    merge_patch(
        api,
        &format!("/api/v1/namespaces/{ns}/services/web"),
        &json!({"spec": {"publishNotReadyAddresses": true}}),
    )
    .await;
    wait_for_subsets(
        api,
        &path,
        vec![
            (8080, vec!["10.0.0.1", "10.0.0.2", "10.0.0.3"], vec![]),
            (9090, vec!["10.0.0.4"], vec![]),
        ],
    )
    .await;
    wait_for_slices(
        api,
        ns,
        "web",
        vec![
            ("10.0.0.1", true, true, false),
            ("10.0.0.2", true, true, true),
            ("10.0.0.3", true, false, false),
            ("10.0.0.4", true, true, false),
        ],
    )
    .await;

    let kubectl = &c.kubectl;
    let out = kubectl.ok(&["get", "endpoints", "-n", ns]);
    assert!(
        out.contains("web") && out.contains("10.0.0.1:8080"),
        "{out}"
    );
    let out = kubectl.ok(&["get", "endpointslices", "-n", ns]);
    assert!(
        out.contains("web-") && out.contains("IPv4") && out.contains("8080"),
        "{out}"
    );

    // Deleting the service removes its Endpoints and slices.
    let (status, body) = api
        .request(
            "DELETE",
            &format!("/api/v1/namespaces/{ns}/services/web"),
            None,
            "",
        )
        .await
        .expect("DELETE service");
    assert!(status == 200 || status == 202, "{status} {body}");
    wait_for("the service's Endpoints and slices to go", || async {
        let endpoints = get(api, &path).await;
        let slices = slices_of(api, ns, "web").await;
        if endpoints.is_none() && slices.is_empty() {
            Ok(())
        } else {
            Err(format!("{endpoints:?} {slices:?}"))
        }
    })
    .await;
    merge_patch(
        api,
        &format!("/api/v1/namespaces/{ns}/pods/p2"),
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
}

#[tokio::test]
async fn selectorless_service_endpoints_are_mirrored() {
    let ns = "mirror";
    let c = cluster(ns).await;
    let api = &c.api;
    create(
        api,
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"metadata": {"name": "ext"},
                "spec": {"ports": [{"name": "db", "port": 5432, "protocol": "TCP"}]}}),
    )
    .await;
    create(
        api,
        &format!("/api/v1/namespaces/{ns}/endpoints"),
        &json!({"metadata": {"name": "ext", "labels": {"team": "data"}},
                "subsets": [{"addresses": [{"ip": "192.168.1.10"}],
                             "notReadyAddresses": [{"ip": "192.168.1.11"}],
                             "ports": [{"name": "db", "port": 5432, "protocol": "TCP"}]}]}),
    )
    .await;
    let slices = wait_for("the mirrored slice", || async {
        let slices = slices_of(api, ns, "ext").await;
        let endpoints: Vec<(String, bool)> = slice_endpoints(&slices)
            .into_iter()
            .map(|(ip, ready, ..)| (ip, ready))
            .collect();
        if endpoints
            == vec![
                ("192.168.1.10".to_string(), true),
                ("192.168.1.11".to_string(), false),
            ]
        {
            Ok(slices)
        } else {
            Err(Value::Array(slices).to_string())
        }
    })
    .await;
    assert_eq!(slices.len(), 1);
    let slice = &slices[0];
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslicemirroring-controller.k8s.io"
    );
    assert_eq!(slice["metadata"]["labels"]["team"], "data");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Endpoints");
    assert_eq!(slice["ports"][0]["port"], 5432);
    // The Endpoints are hand-made: the endpoints controller leaves them as they are.
    let endpoints = get(api, &format!("/api/v1/namespaces/{ns}/endpoints/ext"))
        .await
        .expect("Endpoints ext");
    assert_eq!(subsets(&endpoints).len(), 1);

    // Changes are mirrored in place.
    merge_patch(
        api,
        &format!("/api/v1/namespaces/{ns}/endpoints/ext"),
        &json!({"subsets": [{"addresses": [{"ip": "192.168.1.10"}, {"ip": "192.168.1.12"}],
                             "ports": [{"name": "db", "port": 5432, "protocol": "TCP"}]}]}),
    )
    .await;
    let slices = wait_for_slices(
        api,
        ns,
        "ext",
        vec![
            ("192.168.1.10", true, false, false),
            ("192.168.1.12", true, false, false),
        ],
    )
    .await;
    assert_eq!(
        slices[0]["metadata"]["uid"], slice["metadata"]["uid"],
        "updated, not replaced"
    );

    // Marked to skip mirroring: the mirrored slices go.
    merge_patch(
        api,
        &format!("/api/v1/namespaces/{ns}/endpoints/ext"),
        &json!({"metadata": {"labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}}}),
    )
    .await;
    wait_for("the mirrored slices to go", || async {
        let slices = slices_of(api, ns, "ext").await;
        if slices.is_empty() {
            Ok(())
        } else {
            Err(Value::Array(slices).to_string())
        }
    })
    .await;
}

async fn pdb_status(api: &ApiServer, ns: &str, name: &str, want: (i64, i64, i64, i64)) -> Value {
    let path = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}");
    wait_for(&format!("{name} status {want:?}"), || async {
        let pdb = get(api, &path).await.ok_or("no pdb")?;
        let s = &pdb["status"];
        let got = (
            s["expectedPods"].as_i64().unwrap_or(-1),
            s["desiredHealthy"].as_i64().unwrap_or(-1),
            s["currentHealthy"].as_i64().unwrap_or(-1),
            s["disruptionsAllowed"].as_i64().unwrap_or(-1),
        );
        if got == want && s["observedGeneration"] == pdb["metadata"]["generation"] {
            Ok(pdb)
        } else {
            Err(pdb.to_string())
        }
    })
    .await
}

fn condition(pdb: &Value) -> (String, String) {
    let c = pdb["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionAllowed"))
        .cloned()
        .unwrap_or_default();
    (
        c["status"].as_str().unwrap_or_default().to_string(),
        c["reason"].as_str().unwrap_or_default().to_string(),
    )
}

async fn evict(api: &ApiServer, ns: &str, pod: &str) -> (u16, String) {
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": pod, "namespace": ns}});
    api.request(
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}/eviction"),
        Some("application/json"),
        eviction.to_string(),
    )
    .await
    .expect("POST eviction")
}

#[tokio::test]
async fn disruption_budgets_gate_evictions() {
    let ns = "pdb";
    let c = cluster(ns).await;
    let api = &c.api;
    for (i, name) in ["db-0", "db-1", "db-2"].iter().enumerate() {
        let mut pod = pod(name, "db", 5432, None);
        // Keeps the evicted pod around to show how it was marked.
        pod["metadata"]["finalizers"] = json!([HOLD]);
        let pod = create_pod(api, ns, &pod).await;
        mark_pod_running_ready_with_ip(api, &pod, &format!("10.0.1.{i}")).await;
    }
    create(
        api,
        &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
        &json!({"metadata": {"name": "db"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}),
    )
    .await;
    let pdb = pdb_status(api, ns, "db", (3, 2, 3, 1)).await;
    assert_eq!(condition(&pdb), ("True".into(), "SufficientPods".into()));

    let (status, body) = evict(api, ns, "db-0").await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = evict(api, ns, "db-1").await;
    assert_eq!(status, 429, "{body}");
    assert!(
        body.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{body}"
    );
    let db1 = get(api, &format!("/api/v1/namespaces/{ns}/pods/db-1")).await;
    assert!(db1.is_some_and(|p| p["metadata"]["deletionTimestamp"].is_null()));
    let db0 = get(api, &format!("/api/v1/namespaces/{ns}/pods/db-0"))
        .await
        .expect("db-0 held by its finalizer");
    assert!(db0["metadata"]["deletionTimestamp"].is_string(), "{db0}");
    let target = db0["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionTarget"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&target["status"], &target["reason"]),
        (&json!("True"), &json!("EvictionByEvictionAPI")),
        "{db0}"
    );
    // The deleting pod still counts as expected, no longer as healthy.
    let pdb = pdb_status(api, ns, "db", (3, 2, 2, 0)).await;
    assert_eq!(condition(&pdb), ("False".into(), "InsufficientPods".into()));

    // A percentage counts the pods the controller should have (its scale), not those found.
    create(
        api,
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
        &json!({"metadata": {"name": "cache"},
                "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "cache"}},
                         "template": {"metadata": {"labels": {"app": "cache"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let rs = get(
        api,
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets/cache"),
    )
    .await
    .expect("replicaset");
    for (i, name) in ["cache-a", "cache-b", "cache-c"].iter().enumerate() {
        let mut p = pod(name, "cache", 6379, None);
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": "cache", "uid": rs["metadata"]["uid"], "controller": true}]);
        let p = create_pod(api, ns, &p).await;
        mark_pod_running_ready_with_ip(api, &p, &format!("10.0.2.{i}")).await;
    }
    create(
        api,
        &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
        &json!({"metadata": {"name": "cache"},
                "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "cache"}}}}),
    )
    .await;
    pdb_status(api, ns, "cache", (4, 2, 3, 1)).await;

    // A controller that cannot be found leaves the budget failing safe: nothing allowed.
    let mut ghost = pod("ghost-a", "ghost", 80, None);
    ghost["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
        "kind": "ReplicaSet", "name": "ghost", "uid": "0000-ghost", "controller": true}]);
    let ghost = create_pod(api, ns, &ghost).await;
    mark_pod_running_ready_with_ip(api, &ghost, "10.0.3.1").await;
    create(
        api,
        &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
        &json!({"metadata": {"name": "ghost"},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "ghost"}}}}),
    )
    .await;
    let path = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/ghost");
    wait_for("the ghost budget to fail safe", || async {
        let pdb = get(api, &path).await.ok_or("no pdb")?;
        let (status, reason) = condition(&pdb);
        if status == "False" && reason == "SyncFailed" && pdb["status"]["disruptionsAllowed"] == 0 {
            Ok(())
        } else {
            Err(pdb.to_string())
        }
    })
    .await;
    let (status, body) = evict(api, ns, "ghost-a").await;
    assert_eq!(status, 429, "{body}");

    let out = c.kubectl.ok(&["get", "pdb", "-n", ns]);
    let db_line = out
        .lines()
        .find(|l| l.starts_with("db "))
        .unwrap_or_else(|| panic!("{out}"));
    let columns: Vec<&str> = db_line.split_whitespace().collect();
    assert_eq!(&columns[..4], &["db", "2", "N/A", "0"], "{out}");
    assert!(out.contains("cache"), "{out}");
    for name in ["db-0", "db-1", "db-2"] {
        merge_patch(
            api,
            &format!("/api/v1/namespaces/{ns}/pods/{name}"),
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    }
}
