//! The volume controllers for real: an apiserver and a kube-controller-manager running
//! `persistentvolume-binder,pv-protection,pvc-protection,ephemeral-volume`. The test plays the
//! kubelet and, for WaitForFirstConsumer, the scheduler's PreBind. Cases run concurrently in
//! one cluster; each uses its own storage class name so no case binds another's volumes.

use e2e::apiserver::{ApiServer, Backend};
use e2e::controller_manager::{
    ControllerManager, list, mark_pod_finished, mark_pod_running_ready, wait_for,
};
use e2e::kubectl::Kubectl;
use e2e::scheduler::{create, create_namespace, get, merge_patch};
use e2e::secure::SecureCluster;
use futures::FutureExt;
use serde_json::{Value, json};

const PVS: &str = "/api/v1/persistentvolumes";

fn claims(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/persistentvolumeclaims")
}

fn pv(name: &str, size: &str, class: &str, policy: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
        "storageClassName": class, "persistentVolumeReclaimPolicy": policy,
        "hostPath": {"path": format!("/tmp/{name}")}}})
}

fn pvc(name: &str, size: &str, class: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": class,
        "resources": {"requests": {"storage": size}}}})
}

async fn delete(api: &ApiServer, path: &str) {
    let (status, body) = api
        .request("DELETE", path, None, String::new())
        .await
        .unwrap_or_else(|e| panic!("DELETE {path}: {e:#}"));
    assert!(
        status == 200 || status == 202,
        "DELETE {path}: {status} {body}"
    );
}

/// Waits until the claim is Bound to `volume` and the volume Bound to the claim.
async fn wait_bound(api: &ApiServer, ns: &str, claim: &str, volume: &str) -> (Value, Value) {
    let claim_path = format!("{}/{claim}", claims(ns));
    let volume_path = format!("{PVS}/{volume}");
    wait_for(&format!("{ns}/{claim} bound to {volume}"), || async {
        let c = get(api, &claim_path).await.ok_or("no claim")?;
        let v = get(api, &volume_path).await.ok_or("no volume")?;
        let ok = c["status"]["phase"] == "Bound"
            && c["spec"]["volumeName"] == volume
            && v["status"]["phase"] == "Bound"
            && v["spec"]["claimRef"]["uid"] == c["metadata"]["uid"];
        if ok {
            Ok((c, v))
        } else {
            Err(format!("claim {c}\nvolume {v}"))
        }
    })
    .await
}

async fn wait_gone(api: &ApiServer, path: &str) {
    wait_for(&format!("{path} to be gone"), || async {
        match get(api, path).await {
            None => Ok(()),
            Some(o) => Err(o.to_string()),
        }
    })
    .await;
}

async fn wait_event(api: &ApiServer, ns: &str, object: &str, reason: &str) -> Value {
    wait_for(&format!("event {reason} about {ns}/{object}"), || async {
        let events = list(api, &format!("/api/v1/namespaces/{ns}/events")).await;
        events
            .iter()
            .find(|e| e["reason"] == reason && e["involvedObject"]["name"] == object)
            .cloned()
            .ok_or_else(|| format!("{events:?}"))
    })
    .await
}

async fn smallest_fitting(api: &ApiServer) {
    let ns = "bind";
    create_namespace(api, ns).await;
    for (name, size) in [
        ("bind-10g", "10Gi"),
        ("bind-2g", "2Gi"),
        ("bind-500m", "500Mi"),
    ] {
        create(api, PVS, &pv(name, size, "c-bind", "Retain")).await;
    }
    create(api, &claims(ns), &pvc("data", "1Gi", "c-bind")).await;
    let (c, v) = wait_bound(api, ns, "data", "bind-2g").await;
    assert_eq!(c["status"]["capacity"]["storage"], "2Gi");
    assert_eq!(c["status"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(
        c["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"],
        "yes"
    );
    assert_eq!(
        c["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    assert_eq!(v["spec"]["claimRef"]["name"], "data");
    assert_eq!(
        v["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    // The protection finalizers (added on create, kept by the controllers).
    assert!(
        c["metadata"]["finalizers"]
            .to_string()
            .contains("kubernetes.io/pvc-protection")
    );
    assert!(
        v["metadata"]["finalizers"]
            .to_string()
            .contains("kubernetes.io/pv-protection")
    );
    wait_for("the unused volumes Available", || async {
        let v = get(api, &format!("{PVS}/bind-10g")).await.ok_or("gone")?;
        if v["status"]["phase"] == "Available" {
            Ok(())
        } else {
            Err(v.to_string())
        }
    })
    .await;
}

async fn pre_bound(api: &ApiServer) {
    let ns = "prebound";
    create_namespace(api, ns).await;
    create(api, PVS, &pv("pre-small", "1Gi", "c-pre", "Retain")).await;
    let mut big = pv("pre-big", "5Gi", "c-pre", "Retain");
    big["spec"]["claimRef"] = json!({"namespace": ns, "name": "claim"});
    create(api, PVS, &big).await;
    create(api, &claims(ns), &pvc("claim", "1Gi", "c-pre")).await;
    let (_, v) = wait_bound(api, ns, "claim", "pre-big").await;
    // The user's pre-binding is not the controller's.
    assert!(v["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"].is_null());

    // A claim naming its volume gets that one, not the smaller free one.
    create(api, PVS, &pv("pre-named", "3Gi", "c-pre", "Retain")).await;
    let mut named = pvc("named", "1Gi", "c-pre");
    named["spec"]["volumeName"] = json!("pre-named");
    create(api, &claims(ns), &named).await;
    let (c, _) = wait_bound(api, ns, "named", "pre-named").await;
    assert!(c["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"].is_null());
}

async fn binds_when_a_volume_appears(api: &ApiServer) {
    let ns = "late";
    create_namespace(api, ns).await;
    create(api, PVS, &pv("late-small", "100Mi", "c-late", "Retain")).await;
    create(api, &claims(ns), &pvc("waits", "1Gi", "c-late")).await;
    // No class object exists: the controller says so and leaves the claim Pending.
    wait_event(api, ns, "waits", "ProvisioningFailed").await;
    let c = get(api, &format!("{}/waits", claims(ns)))
        .await
        .expect("claim");
    assert_eq!(c["status"]["phase"], "Pending", "{c}");
    assert!(c["spec"]["volumeName"].is_null(), "{c}");
    create(api, PVS, &pv("late-fits", "1Gi", "c-late", "Retain")).await;
    wait_bound(api, ns, "waits", "late-fits").await;
}

async fn reclaim(api: &ApiServer) {
    let ns = "reclaim";
    create_namespace(api, ns).await;
    create(api, PVS, &pv("rec-retain", "1Gi", "c-rec", "Retain")).await;
    create(api, PVS, &pv("rec-delete", "1Gi", "c-rec", "Delete")).await;
    for (claim, volume) in [("keep", "rec-retain"), ("drop", "rec-delete")] {
        let mut c = pvc(claim, "1Gi", "c-rec");
        c["spec"]["volumeName"] = json!(volume);
        create(api, &claims(ns), &c).await;
        wait_bound(api, ns, claim, volume).await;
        delete(api, &format!("{}/{claim}", claims(ns))).await;
    }
    wait_gone(api, &format!("{PVS}/rec-delete")).await;
    wait_for("rec-retain Released", || async {
        let v = get(api, &format!("{PVS}/rec-retain")).await.ok_or("gone")?;
        if v["status"]["phase"] == "Released" {
            Ok(())
        } else {
            Err(v.to_string())
        }
    })
    .await;
    wait_gone(api, &format!("{}/keep", claims(ns))).await;
}

async fn claim_in_use(api: &ApiServer) {
    let ns = "inuse";
    create_namespace(api, ns).await;
    create(api, PVS, &pv("use-vol", "1Gi", "c-use", "Retain")).await;
    create(api, &claims(ns), &pvc("used", "1Gi", "c-use")).await;
    create(api, &claims(ns), &pvc("unused", "1Gi", "c-use-none")).await;
    wait_bound(api, ns, "used", "use-vol").await;
    let pod = json!({"metadata": {"name": "app"}, "spec": {"nodeName": "n1",
        "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "used"}}]}});
    let pod = create(api, &format!("/api/v1/namespaces/{ns}/pods"), &pod).await;
    mark_pod_running_ready(api, &pod).await;
    // The used claim is deleted first: with one worker, by the time the unused one is gone the
    // used one has been looked at.
    delete(api, &format!("{}/used", claims(ns))).await;
    delete(api, &format!("{}/unused", claims(ns))).await;
    wait_gone(api, &format!("{}/unused", claims(ns))).await;
    let c = get(api, &format!("{}/used", claims(ns)))
        .await
        .expect("used claim kept");
    assert!(!c["metadata"]["deletionTimestamp"].is_null(), "{c}");
    assert_eq!(
        c["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    mark_pod_finished(api, &pod, 0).await;
    wait_gone(api, &format!("{}/used", claims(ns))).await;
}

async fn volume_in_use(api: &ApiServer) {
    let ns = "pvuse";
    create_namespace(api, ns).await;
    create(api, PVS, &pv("pvuse-bound", "1Gi", "c-pvuse", "Retain")).await;
    create(api, &claims(ns), &pvc("holder", "1Gi", "c-pvuse")).await;
    wait_bound(api, ns, "holder", "pvuse-bound").await;
    create(api, PVS, &pv("pvuse-free", "1Gi", "c-pvuse-none", "Retain")).await;
    wait_for("pvuse-free Available", || async {
        let v = get(api, &format!("{PVS}/pvuse-free")).await.ok_or("gone")?;
        if v["status"]["phase"] == "Available" {
            Ok(())
        } else {
            Err(v.to_string())
        }
    })
    .await;
    delete(api, &format!("{PVS}/pvuse-bound")).await;
    delete(api, &format!("{PVS}/pvuse-free")).await;
    wait_gone(api, &format!("{PVS}/pvuse-free")).await;
    let v = get(api, &format!("{PVS}/pvuse-bound"))
        .await
        .expect("bound volume kept");
    assert!(!v["metadata"]["deletionTimestamp"].is_null(), "{v}");
    assert_eq!(
        v["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    delete(api, &format!("{}/holder", claims(ns))).await;
    wait_gone(api, &format!("{PVS}/pvuse-bound")).await;
}

async fn ephemeral(api: &ApiServer) {
    let ns = "eph";
    create_namespace(api, ns).await;
    let template = json!({"volumeClaimTemplate": {"metadata": {"labels": {"from": "template"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "c-eph",
                 "resources": {"requests": {"storage": "1Gi"}}}}});
    let pod = json!({"metadata": {"name": "web"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "scratch", "ephemeral": template}]}});
    let pod = create(api, &format!("/api/v1/namespaces/{ns}/pods"), &pod).await;
    let c = wait_for("the ephemeral claim", || async {
        get(api, &format!("{}/web-scratch", claims(ns)))
            .await
            .ok_or("none".to_string())
    })
    .await;
    let owner = &c["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Pod");
    assert_eq!(owner["uid"], pod["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(c["metadata"]["labels"]["from"], "template");
    assert_eq!(c["spec"]["resources"]["requests"]["storage"], "1Gi");
    // Deleted under the live pod (unscheduled, so not protecting it): made again.
    delete(api, &format!("{}/web-scratch", claims(ns))).await;
    let old_uid = c["metadata"]["uid"].clone();
    wait_for("the ephemeral claim recreated", || async {
        let c = get(api, &format!("{}/web-scratch", claims(ns))).await;
        match c {
            Some(c) if c["metadata"]["uid"] != old_uid => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // A claim of that name not made for the pod is reported, never taken over.
    create(api, &claims(ns), &pvc("other-data", "1Gi", "c-eph")).await;
    let other = json!({"metadata": {"name": "other"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "data", "ephemeral": template}]}});
    create(api, &format!("/api/v1/namespaces/{ns}/pods"), &other).await;
    let e = wait_event(api, ns, "other", "FailedBinding").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("pod is not owner"),
        "{e}"
    );
}

async fn wait_for_first_consumer_and_provisioner(api: &ApiServer) {
    let ns = "wffc";
    create_namespace(api, ns).await;
    let classes = "/apis/storage.k8s.io/v1/storageclasses";
    create(api, classes, &json!({"metadata": {"name": "c-wffc"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}))
    .await;
    create(
        api,
        classes,
        &json!({"metadata": {"name": "c-ext"},
        "provisioner": "example.com/csi", "volumeBindingMode": "Immediate"}),
    )
    .await;
    create(api, PVS, &pv("wffc-vol", "1Gi", "c-wffc", "Retain")).await;
    let c = create(api, &claims(ns), &pvc("late", "1Gi", "c-wffc")).await;
    wait_event(api, ns, "late", "WaitForFirstConsumer").await;
    let v = get(api, &format!("{PVS}/wffc-vol")).await.expect("volume");
    assert!(v["spec"]["claimRef"].is_null(), "{v}");
    // What the scheduler's PreBind writes: the volume's claimRef; the controller finishes.
    merge_patch(
        api,
        &format!("{PVS}/wffc-vol"),
        &json!({
        "metadata": {"annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
        "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
            "namespace": ns, "name": "late", "uid": c["metadata"]["uid"]}}}),
    )
    .await;
    merge_patch(
        api,
        &format!("{}/late", claims(ns)),
        &json!({
        "metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}}),
    )
    .await;
    wait_bound(api, ns, "late", "wffc-vol").await;

    create(api, &claims(ns), &pvc("external", "1Gi", "c-ext")).await;
    let e = wait_event(api, ns, "external", "ExternalProvisioning").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("external provisioner 'example.com/csi'"),
        "{e}"
    );
    let c = get(api, &format!("{}/external", claims(ns)))
        .await
        .expect("claim");
    assert_eq!(
        c["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"],
        "example.com/csi"
    );
    assert_eq!(c["status"]["phase"], "Pending");
}

/// A claim made before any default class exists gets the default class once one appears
/// (upstream's retroactive default StorageClass assignment), then binds in it.
async fn retroactive_default_class(api: &ApiServer) {
    let ns = "default-class";
    create_namespace(api, ns).await;
    let mut c = pvc("classless", "1Gi", "");
    c["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("storageClassName");
    create(api, &claims(ns), &c).await;
    wait_event(api, ns, "classless", "FailedBinding").await;
    create(api, PVS, &pv("def-vol", "1Gi", "c-default", "Retain")).await;
    create(
        api,
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "c-default",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/csi"}),
    )
    .await;
    let (c, _) = wait_bound(api, ns, "classless", "def-vol").await;
    assert_eq!(c["spec"]["storageClassName"], "c-default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn volume_controllers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let api = ApiServer::start(&dir.path().join("apiserver"), Backend::Embedded)
        .await
        .expect("apiserver");
    let cm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &["--controllers=persistentvolume-binder,pv-protection,pvc-protection,ephemeral-volume"],
    )
    .await
    .expect("kube-controller-manager");
    let run = async {
        tokio::join!(
            smallest_fitting(&api),
            pre_bound(&api),
            binds_when_a_volume_appears(&api),
            reclaim(&api),
            claim_in_use(&api),
            volume_in_use(&api),
            ephemeral(&api),
            wait_for_first_consumer_and_provisioner(&api),
            retroactive_default_class(&api),
        );
    };
    if let Err(panic) = std::panic::AssertUnwindSafe(run).catch_unwind().await {
        eprintln!("kube-controller-manager logs:\n{}", cm.logs());
        std::panic::resume_unwind(panic);
    }
    let kubectl = Kubectl::upstream(&dir.path().join("kubectl"), &api.url(), &api.ca_file());
    let out = kubectl.ok(&["get", "pv,pvc", "-n", "bind"]);
    let bound: Vec<&str> = out.lines().filter(|l| l.contains("Bound")).collect();
    // The volume line and the claim line of the smallest-fitting case.
    assert!(
        bound
            .iter()
            .any(|l| l.starts_with("persistentvolume/bind-2g") && l.contains("bind/data")),
        "{out}"
    );
    assert!(
        bound
            .iter()
            .any(|l| l.starts_with("persistentvolumeclaim/data") && l.contains("bind-2g")),
        "{out}"
    );
}

/// Each controller writes as its own service account under RBAC: the bootstrap roles must
/// allow every write (binding, status, finalizers, reclaim, the pod-owned claim).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_controllers_under_rbac() {
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
            "--controllers=persistentvolume-binder,pv-protection,pvc-protection,ephemeral-volume",
        ],
    )
    .await
    .expect("kube-controller-manager");
    let run = async {
        let ns = "rbac";
        create_namespace(api, ns).await;
        create(api, PVS, &pv("rbac-vol", "1Gi", "c-rbac", "Delete")).await;
        create(api, &claims(ns), &pvc("data", "1Gi", "c-rbac")).await;
        wait_bound(api, ns, "data", "rbac-vol").await;
        delete(api, &format!("{}/data", claims(ns))).await;
        wait_gone(api, &format!("{}/data", claims(ns))).await;
        wait_gone(api, &format!("{PVS}/rbac-vol")).await;
        let pod = json!({"metadata": {"name": "web"}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "c-rbac",
                "resources": {"requests": {"storage": "1Gi"}}}}}}]}});
        create(api, &format!("/api/v1/namespaces/{ns}/pods"), &pod).await;
        wait_for("the ephemeral claim", || async {
            get(api, &format!("{}/web-tmp", claims(ns)))
                .await
                .ok_or("none".to_string())
        })
        .await;
    };
    if let Err(panic) = std::panic::AssertUnwindSafe(run).catch_unwind().await {
        eprintln!("kube-controller-manager logs:\n{}", cm.logs());
        std::panic::resume_unwind(panic);
    }
}
