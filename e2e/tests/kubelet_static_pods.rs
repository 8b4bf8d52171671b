//! Static pods end to end: our kubelet on a real containerd against our apiserver. A manifest
//! dropped in the static pod directory runs and gets a mirror pod (the mirror annotation, the
//! node as controller, its status); a mirror deleted through the API comes back without the pod
//! restarting; editing the manifest replaces the pod (new uid, new container); removing it stops
//! the containers and deletes the mirror.

use e2e::containerd::{BUSYBOX_IMAGE, Containerd};
use e2e::kubelet::{Kubelet, admin_client, poll, start_apiserver};
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{ContainerFilter, ContainerState, ContainerStateValue, ListContainersRequest};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams};
use std::collections::BTreeMap;

fn manifest(arg: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  \
         terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n    \
         imagePullPolicy: IfNotPresent\n    command: [sleep, \"{arg}\"]\n"
    )
}

fn annotations(p: &Pod) -> BTreeMap<String, String> {
    p.metadata.annotations.clone().unwrap_or_default()
}

/// The mirror's container id once it reports Running with a running `main`.
fn running_container(p: &Pod) -> Result<String, String> {
    let status = p.status.clone().unwrap_or_default();
    if status.phase.as_deref() != Some("Running") {
        return Err(format!("phase {:?}", status.phase));
    }
    let c = status
        .container_statuses
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.name == "main")
        .ok_or("no status of main")?;
    match (c.state.and_then(|s| s.running), c.container_id) {
        (Some(_), Some(id)) => Ok(id),
        _ => Err("main is not running".into()),
    }
}

/// Running containers of pods named `pod_name`, as containerd lists them.
async fn running_in_runtime(containerd: &Containerd, pod_name: &str) -> Vec<String> {
    let mut cri = RuntimeServiceClient::new(containerd.cri_channel().await.expect("CRI channel"));
    let filter = ContainerFilter {
        state: Some(ContainerStateValue {
            state: ContainerState::ContainerRunning as i32,
        }),
        label_selector: [("io.kubernetes.pod.name".to_string(), pod_name.to_string())].into(),
        ..Default::default()
    };
    cri.list_containers(ListContainersRequest {
        filter: Some(filter),
    })
    .await
    .expect("ListContainers")
    .into_inner()
    .containers
    .into_iter()
    .map(|c| c.id)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_pod_lifecycle_with_its_mirror_pod() {
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
    let node = "static-node";
    let kubelet = Kubelet::start(
        &tmp.path().join("kubelet"),
        &api,
        &containerd,
        node,
        serde_json::Value::Null,
        &[],
    )
    .await
    .expect("kubelet");
    let client = admin_client(&api, &pki, tmp.path()).await;
    let logs = || kubelet.logs();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let nodes: Api<Node> = Api::all(client.clone());
    let node_uid = poll("the node to register", &logs, async || {
        nodes
            .get(node)
            .await
            .map_err(|e| e.to_string())
            .map(|n| n.metadata.uid.unwrap_or_default())
    })
    .await;

    // 1. A dropped manifest runs and is mirrored.
    let path = kubelet.static_pod_dir().join("web.yaml");
    std::fs::write(&path, manifest("3600")).unwrap();
    let mirror_name = format!("web-{node}");
    let (mirror, first_container) = poll("the mirror pod to run", &logs, async || {
        let p = pods.get(&mirror_name).await.map_err(|e| e.to_string())?;
        let id = running_container(&p)?;
        Ok((p, id))
    })
    .await;
    let ann = annotations(&mirror);
    let hash = ann
        .get("kubernetes.io/config.hash")
        .cloned()
        .expect("config.hash");
    assert_eq!(
        ann.get("kubernetes.io/config.mirror"),
        Some(&hash),
        "{ann:?}"
    );
    assert_eq!(
        ann.get("kubernetes.io/config.source").map(String::as_str),
        Some("file")
    );
    let owners = mirror.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str()),
        ("Node", node)
    );
    assert_eq!(owners[0].uid, node_uid);
    assert_eq!(owners[0].controller, Some(true));
    assert_eq!(
        mirror.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some(node)
    );
    assert_eq!(running_in_runtime(&containerd, &mirror_name).await.len(), 1);

    // 2. A mirror pod deleted through the API is recreated; the static pod keeps running.
    let old_uid = mirror.metadata.uid.clone().unwrap_or_default();
    pods.delete(&mirror_name, &DeleteParams::default().grace_period(0))
        .await
        .expect("delete the mirror");
    poll("the mirror pod to be recreated", &logs, async || {
        let p = pods.get(&mirror_name).await.map_err(|e| e.to_string())?;
        if p.metadata.uid.as_deref() == Some(old_uid.as_str()) {
            return Err("still the old mirror".into());
        }
        if annotations(&p).get("kubernetes.io/config.mirror") != Some(&hash) {
            return Err(format!("mirror annotation {:?}", annotations(&p)));
        }
        Ok(())
    })
    .await;
    let still = running_in_runtime(&containerd, &mirror_name).await;
    assert_eq!(
        still,
        [first_container
            .trim_start_matches("containerd://")
            .to_string()]
    );

    // 3. An edited manifest is a new pod: new hash (uid), new container.
    std::fs::write(&path, manifest("3601")).unwrap();
    let (edited, second_container) = poll("the edited pod's mirror to run", &logs, async || {
        let p = pods.get(&mirror_name).await.map_err(|e| e.to_string())?;
        if annotations(&p).get("kubernetes.io/config.mirror") == Some(&hash) {
            return Err("still the old version".into());
        }
        let id = running_container(&p)?;
        Ok((p, id))
    })
    .await;
    assert_ne!(second_container, first_container);
    let new_hash = annotations(&edited)
        .get("kubernetes.io/config.mirror")
        .cloned();
    assert_eq!(
        new_hash,
        annotations(&edited)
            .get("kubernetes.io/config.hash")
            .cloned()
    );
    let cmd = edited
        .spec
        .as_ref()
        .and_then(|s| s.containers[0].command.clone());
    assert_eq!(cmd, Some(vec!["sleep".to_string(), "3601".to_string()]));
    poll("only the new container to run", &logs, async || {
        let running = running_in_runtime(&containerd, &mirror_name).await;
        let want = second_container.trim_start_matches("containerd://");
        if running == [want.to_string()] {
            Ok(())
        } else {
            Err(format!("running: {running:?}"))
        }
    })
    .await;

    // 4. A removed manifest stops the pod and deletes the mirror.
    std::fs::remove_file(&path).unwrap();
    poll("the mirror pod to go", &logs, async || {
        match pods.get_opt(&mirror_name).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err("still there".into()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    poll("the containers to stop", &logs, async || {
        let running = running_in_runtime(&containerd, &mirror_name).await;
        if running.is_empty() {
            Ok(())
        } else {
            Err(format!("running: {running:?}"))
        }
    })
    .await;
    drop(kubelet);
    drop(containerd);
}
