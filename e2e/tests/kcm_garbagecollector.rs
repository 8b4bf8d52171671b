//! The garbage collector for real: our apiserver and kube-controller-manager with
//! `--controllers=garbagecollector`, hand-made owner chains of ConfigMaps, Secrets, pods and
//! custom resources (a namespaced and a cluster-scoped CRD installed before the controller
//! manager starts, so discovery finds them), and each propagation policy sent through the API
//! and through the real kubectl.

use e2e::apiserver::{ApiServer, Backend};
use e2e::controller_manager::{ControllerManager, list, wait_for};
use e2e::kubectl::Kubectl;
use e2e::scheduler::{self as sched, create, get, merge_patch};
use serde_json::{Value, json};
use std::path::Path;

const CRDS: [&str; 2] = [
    r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.gc.example.com"},
        "spec": {"group": "gc.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}}"#,
    r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.gc.example.com"},
        "spec": {"group": "gc.example.com", "scope": "Cluster",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}}"#,
];

/// A finalizer of the tests' own, holding a dependent until the test lets it go.
const HOLD: &str = "gc.example.com/hold";

struct Cluster {
    api: ApiServer,
    cm: ControllerManager,
    dir: tempfile::TempDir,
}

async fn cluster() -> Cluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = ApiServer::start(&dir.path().join("apiserver"), Backend::Embedded)
        .await
        .expect("apiserver");
    for crd in CRDS {
        let crd: Value = serde_json::from_str(crd).expect("crd json");
        create(
            &api,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    }
    for plural in ["widgets", "gadgets"] {
        let path = format!("/apis/gc.example.com/v1/{plural}");
        wait_for(&format!("{plural} served"), || async {
            match api.get(&path).await {
                Ok((200, _)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    let cm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &["--controllers=garbagecollector"],
    )
    .await
    .expect("kube-controller-manager");
    Cluster { api, cm, dir }
}

fn configmaps(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

fn secrets(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/secrets")
}

fn widgets(ns: &str) -> String {
    format!("/apis/gc.example.com/v1/namespaces/{ns}/widgets")
}

const GADGETS: &str = "/apis/gc.example.com/v1/gadgets";

/// An ownerReference to a created object.
fn owner(obj: &Value, api_version: &str, kind: &str, block: bool) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn cm_owner(obj: &Value, block: bool) -> Value {
    owner(obj, "v1", "ConfigMap", block)
}

/// Creates an object of `api_version`/`kind` at `collection` with these ownerReferences.
async fn make(
    api: &ApiServer,
    collection: &str,
    api_version: &str,
    kind: &str,
    name: &str,
    owners: Vec<Value>,
) -> Value {
    create(
        api,
        collection,
        &json!({"apiVersion": api_version, "kind": kind,
                "metadata": {"name": name, "ownerReferences": owners}}),
    )
    .await
}

async fn make_cm(api: &ApiServer, ns: &str, name: &str, owners: Vec<Value>) -> Value {
    make(api, &configmaps(ns), "v1", "ConfigMap", name, owners).await
}

async fn delete(api: &ApiServer, path: &str, policy: Option<&str>) {
    let body = match policy {
        Some(p) => json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": p}),
        None => json!({"apiVersion": "v1", "kind": "DeleteOptions"}),
    };
    let (status, text) = api
        .request("DELETE", path, Some("application/json"), body.to_string())
        .await
        .expect("delete");
    assert!(
        status == 200 || status == 202,
        "DELETE {path}: {status} {text}"
    );
}

async fn wait_gone(api: &ApiServer, path: &str) {
    wait_for(&format!("{path} to be deleted"), || async {
        match get(api, path).await {
            None => Ok(()),
            Some(o) => Err(o["metadata"].to_string()),
        }
    })
    .await;
}

/// Returns once the collector has seen every object created so far at `collection`: orphaning
/// reaches only dependents in its graph (upstream's has the same window), and one informer
/// delivers in order, so a later object whose owner never existed being collected proves the
/// earlier ones were seen. `obj` is a valid object of that collection's kind.
async fn gc_barrier(api: &ApiServer, collection: &str, mut obj: Value) {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!(
        "barrier-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "never-existed",
                       "uid": "00000000-0000-0000-0000-000000000bad"});
    obj["metadata"]["name"] = json!(name);
    obj["metadata"]["ownerReferences"] = json!([ghost]);
    create(api, collection, &obj).await;
    wait_gone(api, &format!("{collection}/{name}")).await;
}

async fn must_get(api: &ApiServer, path: &str) -> Value {
    get(api, path)
        .await
        .unwrap_or_else(|| panic!("{path} was deleted"))
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r["uid"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn uid(obj: &Value) -> String {
    obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Asserts a foreground deletion in progress: the owner is visible, terminating, with the
/// foregroundDeletion finalizer.
async fn assert_waiting_in_foreground(api: &ApiServer, path: &str) {
    let o = must_get(api, path).await;
    assert!(
        o["metadata"]["deletionTimestamp"].is_string(),
        "{path} not terminating: {}",
        o["metadata"]
    );
    assert!(
        finalizers(&o).contains(&"foregroundDeletion".to_string()),
        "{path}: {}",
        o["metadata"]
    );
}

/// Waits until `path` is terminating (deleted with its dependents' finalizer holding it).
async fn wait_terminating(api: &ApiServer, path: &str) {
    wait_for(&format!("{path} terminating"), || async {
        let o = must_get(api, path).await;
        if o["metadata"]["deletionTimestamp"].is_string() {
            Ok(())
        } else {
            Err(o["metadata"].to_string())
        }
    })
    .await;
}

async fn release(api: &ApiServer, path: &str) {
    merge_patch(api, path, &json!({"metadata": {"finalizers": null}})).await;
}

#[tokio::test]
async fn background_deletion_collects_dependents_transitively() {
    let c = cluster().await;
    let api = &c.api;
    let ns = "gc-bg";
    sched::create_namespace(api, ns).await;
    let root = make_cm(api, ns, "root", vec![]).await;
    make(
        api,
        &secrets(ns),
        "v1",
        "Secret",
        "dep-secret",
        vec![cm_owner(&root, false)],
    )
    .await;
    let mid = make_cm(api, ns, "dep-cm", vec![cm_owner(&root, true)]).await;
    let mut pod = sched::pod("grand-pod");
    sched::set(
        &mut pod,
        "/metadata/ownerReferences",
        json!([cm_owner(&mid, false)]),
    );
    sched::set(&mut pod, "/spec/terminationGracePeriodSeconds", json!(0));
    sched::create_pod(api, ns, &pod).await;
    make(
        api,
        &widgets(ns),
        "gc.example.com/v1",
        "Widget",
        "dep-widget",
        vec![cm_owner(&root, false)],
    )
    .await;
    // A custom resource as owner.
    let w_owner = make(
        api,
        &widgets(ns),
        "gc.example.com/v1",
        "Widget",
        "owner-widget",
        vec![],
    )
    .await;
    make_cm(
        api,
        ns,
        "of-widget",
        vec![owner(&w_owner, "gc.example.com/v1", "Widget", false)],
    )
    .await;

    delete(api, &format!("{}/root", configmaps(ns)), None).await;
    for path in [
        format!("{}/root", configmaps(ns)),
        format!("{}/dep-secret", secrets(ns)),
        format!("{}/dep-cm", configmaps(ns)),
        format!("/api/v1/namespaces/{ns}/pods/grand-pod"),
        format!("{}/dep-widget", widgets(ns)),
    ] {
        wait_gone(api, &path).await;
    }
    delete(
        api,
        &format!("{}/owner-widget", widgets(ns)),
        Some("Background"),
    )
    .await;
    wait_gone(api, &format!("{}/of-widget", configmaps(ns))).await;

    let (status, metrics) = e2e::https::get(c.cm.addr(), &c.cm.ca_file(), "/metrics")
        .await
        .expect("metrics");
    assert_eq!(status, 200, "{metrics}");
    assert!(
        metrics.contains("garbagecollector_controller_resources_sync_error_total 0"),
        "{metrics}"
    );
}

#[tokio::test]
async fn foreground_waits_for_blocking_dependents_and_orphan_keeps_them() {
    let c = cluster().await;
    let api = &c.api;
    let ns = "gc-fg";
    sched::create_namespace(api, ns).await;

    // Foreground: the owner stays, terminating, while a blocking dependent exists.
    let owner_path = format!("{}/fg-owner", configmaps(ns));
    let held_path = format!("{}/held", configmaps(ns));
    let plain_path = format!("{}/plain", secrets(ns));
    let fg = make_cm(api, ns, "fg-owner", vec![]).await;
    create(
        api,
        &configmaps(ns),
        &json!({"metadata": {"name": "held", "finalizers": [HOLD],
                             "ownerReferences": [cm_owner(&fg, true)]}}),
    )
    .await;
    make(
        api,
        &secrets(ns),
        "v1",
        "Secret",
        "plain",
        vec![cm_owner(&fg, true)],
    )
    .await;
    gc_barrier(api, &configmaps(ns), json!({"metadata": {}})).await;
    gc_barrier(api, &secrets(ns), json!({"metadata": {}})).await;
    delete(api, &owner_path, Some("Foreground")).await;
    assert_waiting_in_foreground(api, &owner_path).await;
    wait_gone(api, &plain_path).await;
    wait_terminating(api, &held_path).await;
    assert_waiting_in_foreground(api, &owner_path).await;
    release(api, &held_path).await;
    wait_gone(api, &held_path).await;
    wait_gone(api, &owner_path).await;

    // Orphan: the dependents stay, without the reference to the deleted owner only.
    let orphaner = make_cm(api, ns, "or-owner", vec![]).await;
    let other = make_cm(api, ns, "other-owner", vec![]).await;
    make(
        api,
        &secrets(ns),
        "v1",
        "Secret",
        "or-secret",
        vec![cm_owner(&orphaner, true)],
    )
    .await;
    make_cm(
        api,
        ns,
        "or-cm",
        vec![cm_owner(&orphaner, false), cm_owner(&other, false)],
    )
    .await;
    gc_barrier(api, &secrets(ns), json!({"metadata": {}})).await;
    gc_barrier(api, &configmaps(ns), json!({"metadata": {}})).await;
    delete(api, &format!("{}/or-owner", configmaps(ns)), Some("Orphan")).await;
    wait_gone(api, &format!("{}/or-owner", configmaps(ns))).await;
    let s = must_get(api, &format!("{}/or-secret", secrets(ns))).await;
    assert!(owner_uids(&s).is_empty(), "{}", s["metadata"]);
    let m = must_get(api, &format!("{}/or-cm", configmaps(ns))).await;
    assert_eq!(owner_uids(&m), vec![uid(&other)], "{}", m["metadata"]);

    // A core/v1 ReplicationController deleted without a policy orphans (upstream's default).
    let rc = create(
        api,
        &format!("/api/v1/namespaces/{ns}/replicationcontrollers"),
        &json!({"metadata": {"name": "rc"},
                "spec": {"replicas": 0, "selector": {"app": "rc"},
                         "template": {"metadata": {"labels": {"app": "rc"}},
                                      "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    )
    .await;
    let mut pod = sched::pod("rc-pod");
    sched::set(
        &mut pod,
        "/metadata/ownerReferences",
        json!([owner(&rc, "v1", "ReplicationController", true)]),
    );
    sched::create_pod(api, ns, &pod).await;
    gc_barrier(
        api,
        &format!("/api/v1/namespaces/{ns}/pods"),
        sched::pod("unused"),
    )
    .await;
    let rc_path = format!("/api/v1/namespaces/{ns}/replicationcontrollers/rc");
    delete(api, &rc_path, None).await;
    wait_gone(api, &rc_path).await;
    let p = must_get(api, &format!("/api/v1/namespaces/{ns}/pods/rc-pod")).await;
    assert!(owner_uids(&p).is_empty(), "{}", p["metadata"]);
    assert!(
        p["metadata"]["deletionTimestamp"].is_null(),
        "{}",
        p["metadata"]
    );
}

#[tokio::test]
async fn cycles_wrong_uids_and_scopes() {
    let c = cluster().await;
    let api = &c.api;
    let ns = "gc-edge";
    sched::create_namespace(api, ns).await;

    // A -> B -> A, both blocking: the foreground deletion of A finishes.
    let a = make_cm(api, ns, "cycle-a", vec![]).await;
    let b = make_cm(api, ns, "cycle-b", vec![cm_owner(&a, true)]).await;
    merge_patch(
        api,
        &format!("{}/cycle-a", configmaps(ns)),
        &json!({"metadata": {"ownerReferences": [cm_owner(&b, true)]}}),
    )
    .await;
    delete(
        api,
        &format!("{}/cycle-a", configmaps(ns)),
        Some("Foreground"),
    )
    .await;
    wait_gone(api, &format!("{}/cycle-a", configmaps(ns))).await;
    wait_gone(api, &format!("{}/cycle-b", configmaps(ns))).await;

    // A reference whose uid is not the live owner's counts as absent.
    let live = make_cm(api, ns, "live", vec![]).await;
    let mut bogus = cm_owner(&live, false);
    bogus["uid"] = json!("00000000-0000-0000-0000-00000000dead");
    make(
        api,
        &secrets(ns),
        "v1",
        "Secret",
        "wrong-uid",
        vec![bogus.clone()],
    )
    .await;
    make_cm(api, ns, "mixed", vec![cm_owner(&live, false), bogus]).await;
    wait_gone(api, &format!("{}/wrong-uid", secrets(ns))).await;
    wait_for("the dangling reference of mixed to be removed", || async {
        let m = must_get(api, &format!("{}/mixed", configmaps(ns))).await;
        if owner_uids(&m) == vec![uid(&live)] {
            Ok(())
        } else {
            Err(m["metadata"].to_string())
        }
    })
    .await;
    must_get(api, &format!("{}/live", configmaps(ns))).await;

    // A namespaced dependent of a cluster-scoped owner is collected with it.
    let gadget = make(
        api,
        GADGETS,
        "gc.example.com/v1",
        "Gadget",
        "cluster-owner",
        vec![],
    )
    .await;
    make_cm(
        api,
        ns,
        "of-gadget",
        vec![owner(&gadget, "gc.example.com/v1", "Gadget", false)],
    )
    .await;
    delete(api, &format!("{GADGETS}/cluster-owner"), None).await;
    wait_gone(api, &format!("{}/of-gadget", configmaps(ns))).await;

    // A cluster-scoped dependent of a namespaced owner is reported, never collected.
    let ns_owner = make_cm(api, ns, "ns-owner", vec![]).await;
    make(
        api,
        GADGETS,
        "gc.example.com/v1",
        "Gadget",
        "invalid",
        vec![cm_owner(&ns_owner, false)],
    )
    .await;
    let event = wait_for("the OwnerRefInvalidNamespace event", || async {
        let events = list(api, "/api/v1/namespaces/default/events").await;
        events
            .into_iter()
            .find(|e| {
                e["reason"] == "OwnerRefInvalidNamespace"
                    && e["involvedObject"]["name"] == "invalid"
            })
            .ok_or_else(|| "no event yet".to_string())
    })
    .await;
    assert_eq!(event["type"], "Warning", "{event}");
    let message = event["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "ownerRef [v1/ConfigMap, namespace: , name: ns-owner, uid: {}] does not exist in namespace \"\"",
            uid(&ns_owner)
        )),
        "{message}"
    );
    // Deleting the owner would collect a valid dependent; this one must survive it.
    make_cm(api, ns, "valid-dep", vec![cm_owner(&ns_owner, false)]).await;
    delete(api, &format!("{}/ns-owner", configmaps(ns)), None).await;
    wait_gone(api, &format!("{}/valid-dep", configmaps(ns))).await;
    must_get(api, &format!("{GADGETS}/invalid")).await;
}

#[tokio::test]
async fn real_kubectl_cascade_foreground_and_orphan() {
    let c = cluster().await;
    let api = &c.api;
    let ns = "gc-kubectl";
    sched::create_namespace(api, ns).await;
    let k = Kubectl::upstream(&kubectl_dir(c.dir.path()), &api.url(), &api.ca_file());

    let fg = make_cm(api, ns, "k-fg", vec![]).await;
    let held_path = format!("{}/k-held", configmaps(ns));
    create(
        api,
        &configmaps(ns),
        &json!({"metadata": {"name": "k-held", "finalizers": [HOLD],
                             "ownerReferences": [cm_owner(&fg, true)]}}),
    )
    .await;
    gc_barrier(api, &configmaps(ns), json!({"metadata": {}})).await;
    k.ok(&[
        "delete",
        "configmap",
        "k-fg",
        "-n",
        ns,
        "--cascade=foreground",
        "--wait=false",
    ]);
    let owner_path = format!("{}/k-fg", configmaps(ns));
    assert_waiting_in_foreground(api, &owner_path).await;
    wait_terminating(api, &held_path).await;
    assert_waiting_in_foreground(api, &owner_path).await;
    release(api, &held_path).await;
    wait_gone(api, &owner_path).await;

    let or = make_cm(api, ns, "k-or", vec![]).await;
    make(
        api,
        &secrets(ns),
        "v1",
        "Secret",
        "k-kept",
        vec![cm_owner(&or, true)],
    )
    .await;
    gc_barrier(api, &secrets(ns), json!({"metadata": {}})).await;
    k.ok(&["delete", "configmap", "k-or", "-n", ns, "--cascade=orphan"]);
    wait_gone(api, &format!("{}/k-or", configmaps(ns))).await;
    let kept = must_get(api, &format!("{}/k-kept", secrets(ns))).await;
    assert!(owner_uids(&kept).is_empty(), "{}", kept["metadata"]);
}

fn kubectl_dir(base: &Path) -> std::path::PathBuf {
    let dir = base.join("kubectl");
    std::fs::create_dir_all(&dir).expect("kubectl dir");
    dir
}

/// A CRD installed while the collector runs gets a monitor (discovery runs again when CRDs
/// change): its objects are collected as dependents and followed as owners.
#[tokio::test]
async fn custom_resources_of_a_later_crd_are_collected() {
    let c = cluster().await;
    let api = &c.api;
    let crd = CRDS[0]
        .replace("widgets", "sprockets")
        .replace("widget", "sprocket")
        .replace("Widget", "Sprocket");
    let crd: Value = serde_json::from_str(&crd).expect("crd json");
    create(
        api,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    let ns = "gc-late";
    sched::create_namespace(api, ns).await;
    let sprockets = format!("/apis/gc.example.com/v1/namespaces/{ns}/sprockets");
    wait_for("sprockets served", || async {
        match api.get(&sprockets).await {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let cm_owner_obj = make_cm(api, ns, "cm-owner", vec![]).await;
    make(
        api,
        &sprockets,
        "gc.example.com/v1",
        "Sprocket",
        "dep-sprocket",
        vec![cm_owner(&cm_owner_obj, false)],
    )
    .await;
    let s_owner = make(
        api,
        &sprockets,
        "gc.example.com/v1",
        "Sprocket",
        "owner",
        vec![],
    )
    .await;
    make_cm(
        api,
        ns,
        "of-sprocket",
        vec![owner(&s_owner, "gc.example.com/v1", "Sprocket", false)],
    )
    .await;
    delete(api, &format!("{}/cm-owner", configmaps(ns)), None).await;
    wait_gone(api, &format!("{sprockets}/dep-sprocket")).await;
    delete(api, &format!("{sprockets}/owner"), Some("Foreground")).await;
    wait_gone(api, &format!("{}/of-sprocket", configmaps(ns))).await;
    wait_gone(api, &format!("{sprockets}/owner")).await;
}
