//! Garbage collection end to end: our kubelet on a real containerd against our apiserver, GC
//! periods shortened with the kubelet's hidden testing flags.
//! - Container GC: a crash-looping container keeps at most one dead instance (checked through
//!   CRI), and the removed instance's log file goes with it.
//! - Image GC: once the image file system is above `imageGCHighThresholdPercent` (1%, set by
//!   restarting the kubelet with a new configuration: the disk here is far fuller), an unused
//!   extra image is removed; the sandbox image and the image of a running pod stay, the pod
//!   keeps running, and the node gets `FreeDiskSpaceFailed`, then `ImageGCFailed` (0% cannot
//!   be reached).

use e2e::containerd::{BUSYBOX_IMAGE, Containerd, PAUSE_IMAGE};
use e2e::kubelet::{Kubelet, admin_client, poll, start_apiserver};
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{ContainerFilter, ListContainersRequest, ListImagesRequest};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use std::path::Path;

const NODE: &str = "gc-node";
const EXTRA_IMAGE: &str = "docker.io/library/gc-extra:1";

fn pod(name: &str, script: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", script],
            }],
        },
    }))
    .expect("a valid pod")
}

/// A one-file image of its own (its own id), as an OCI tarball made by the test images'
/// `make_image`.
fn build_extra_image(dir: &Path) -> std::path::PathBuf {
    let oci = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/images/oci.sh");
    let script = r#"set -euo pipefail; work=$1; source "$2"
        mkdir -p "$work/rootfs"; echo gc > "$work/rootfs/gc-extra"
        make_image "$work/rootfs" "$work/extra.tar" '{"Cmd":["/gc-extra"]}' "$3""#;
    let out = std::process::Command::new("bash")
        .args(["-c", script, "_"])
        .arg(dir)
        .arg(&oci)
        .arg(EXTRA_IMAGE)
        .output()
        .expect("running bash");
    assert!(
        out.status.success(),
        "building the extra image: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("extra.tar")
}

async fn image_tags(containerd: &Containerd) -> Vec<String> {
    let mut images = ImageServiceClient::new(containerd.cri_channel().await.expect("CRI"));
    images
        .list_images(ListImagesRequest { filter: None })
        .await
        .expect("ListImages")
        .into_inner()
        .images
        .into_iter()
        .flat_map(|i| i.repo_tags)
        .collect()
}

/// (id, state) of every instance of the pod's `main` container.
async fn instances(containerd: &Containerd, uid: &str) -> Vec<(String, i32)> {
    let mut cri = RuntimeServiceClient::new(containerd.cri_channel().await.expect("CRI"));
    cri.list_containers(ListContainersRequest {
        filter: Some(ContainerFilter {
            label_selector: [
                ("io.kubernetes.pod.uid".to_string(), uid.to_string()),
                (
                    "io.kubernetes.container.name".to_string(),
                    "main".to_string(),
                ),
            ]
            .into(),
            ..Default::default()
        }),
    })
    .await
    .expect("ListContainers")
    .into_inner()
    .containers
    .into_iter()
    .map(|c| (c.id, c.state))
    .collect()
}

fn restarts_and_id(p: &Pod) -> (i32, Option<String>) {
    let c = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first());
    (
        c.map_or(0, |c| c.restart_count),
        c.and_then(|c| c.container_id.clone()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_and_images_are_garbage_collected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let containerd =
        tokio::task::spawn_blocking(move || Containerd::start(&dir.join("containerd")))
            .await
            .unwrap()
            .expect("containerd");
    let (api, pki) = start_apiserver(&tmp.path().join("api"), &[])
        .await
        .expect("apiserver");
    let client = admin_client(&api, &pki, tmp.path()).await;
    // Image GC stays off (the harness's 100%) until the pods run: with a 1% threshold the
    // kubelet would remove busybox before any container used it.
    let mut kubelet = Kubelet::start(
        &tmp.path().join("kubelet"),
        &api,
        &containerd,
        NODE,
        serde_json::Value::Null,
        &[
            "--testing-image-gc-period=1s",
            "--testing-container-gc-period=1s",
        ],
    )
    .await
    .expect("kubelet");
    let nodes: Api<Node> = Api::all(client.clone());
    poll("the node to register", &|| kubelet.logs(), async || {
        nodes.get(NODE).await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for p in [
        pod("web", "trap 'exit 0' TERM; sleep 3600 & wait"),
        pod("crash", "echo crashed; exit 1"),
    ] {
        pods.create(&PostParams::default(), &p)
            .await
            .expect("create pod");
    }

    // 1. Container GC: once restarted, the crash loop keeps one instance, not one per attempt.
    let crash_uid = pods.get("crash").await.unwrap().metadata.uid.unwrap();
    let main_logs = kubelet
        .pod_logs_dir()
        .join(format!("default_crash_{crash_uid}"))
        .join("main");
    poll(
        "the crash loop's older instance to be collected",
        &|| kubelet.logs(),
        async || {
            let p = pods.get("crash").await.map_err(|e| e.to_string())?;
            let (restarts, id) = restarts_and_id(&p);
            if restarts < 1 {
                return Err(format!("restartCount {restarts}"));
            }
            let found = instances(&containerd, &crash_uid).await;
            let current = id.unwrap_or_default();
            match found.as_slice() {
                // The log file goes with its container.
                [(only, _)] if current.ends_with(only.as_str()) => {
                    if main_logs.join("0.log").exists() {
                        Err("the first attempt's log is still there".into())
                    } else {
                        Ok(())
                    }
                }
                _ => Err(format!("instances {found:?}, status has {current}")),
            }
        },
    )
    .await;

    // 2. Image GC.
    let web_id = poll("web to run", &|| kubelet.logs(), async || {
        let p = pods.get("web").await.map_err(|e| e.to_string())?;
        let running = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.first())
            .and_then(|c| {
                c.state
                    .as_ref()?
                    .running
                    .as_ref()
                    .and(c.container_id.clone())
            });
        running.ok_or_else(|| "web is not running".to_string())
    })
    .await;
    let tar = build_extra_image(tmp.path());
    containerd
        .import_image(&tar)
        .expect("import the extra image");
    let tags = image_tags(&containerd).await;
    for want in [EXTRA_IMAGE, PAUSE_IMAGE, BUSYBOX_IMAGE] {
        assert!(tags.iter().any(|t| t == want), "{want} missing: {tags:?}");
    }

    kubelet.stop().expect("stop the kubelet");
    let path = kubelet.config_path();
    let mut config: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["imageGCHighThresholdPercent"] = json!(1);
    config["imageGCLowThresholdPercent"] = json!(0);
    // 0s would mean upstream's default (2m); one second still lets the first round see the
    // extra image as too young and the next one remove it.
    config["imageMinimumGCAge"] = json!("1s");
    std::fs::write(&path, serde_yaml::to_string(&config).unwrap()).unwrap();
    kubelet.restart().await.expect("restart the kubelet");

    poll(
        "the unused image to be removed",
        &|| kubelet.logs(),
        async || {
            let tags = image_tags(&containerd).await;
            if tags.iter().any(|t| t == EXTRA_IMAGE) {
                return Err(format!("still there: {tags:?}"));
            }
            Ok(())
        },
    )
    .await;
    let tags = image_tags(&containerd).await;
    for keep in [PAUSE_IMAGE, BUSYBOX_IMAGE] {
        assert!(
            tags.iter().any(|t| t == keep),
            "{keep} was removed: {tags:?}"
        );
    }
    let web = pods.get("web").await.unwrap();
    assert_eq!(
        restarts_and_id(&web),
        (0, Some(web_id)),
        "web must keep running"
    );
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let on_node = ListParams::default().fields(&format!("involvedObject.name={NODE}"));
    // Every failed round says FreeDiskSpaceFailed; two in a row make an ImageGCFailed.
    for reason in ["FreeDiskSpaceFailed", "ImageGCFailed"] {
        let failed = poll(
            &format!("{reason} on the node"),
            &|| kubelet.logs(),
            async || {
                let list = events.list(&on_node).await.map_err(|e| e.to_string())?;
                list.items
                    .into_iter()
                    .find(|e| e.reason.as_deref() == Some(reason))
                    .ok_or_else(|| format!("no {reason} yet"))
            },
        )
        .await;
        assert_eq!(failed.type_.as_deref(), Some("Warning"));
        assert!(
            failed
                .message
                .as_deref()
                .unwrap_or_default()
                .starts_with("Failed to garbage collect required amount of images."),
            "{failed:?}"
        );
    }
}
