//! `kubelet --hollow` (issue 10's test mode, as upstream's kubemark hollow node): three hollow
//! kubelets, no containerd anywhere, register Ready nodes; a Deployment spread over them by our
//! scheduler and controller manager reaches 6/6 Running with pod IPs, and a deleted pod goes
//! away; nothing touches the host's cgroups.

use e2e::kubelet::{Kubelet, admin_client, poll, start_apiserver};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use std::collections::BTreeSet;

const NODES: [&str; 3] = ["hollow-0", "hollow-1", "hollow-2"];

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn untainted(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_none_or(|t| t.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hollow_nodes_run_a_deployment_without_containers() {
    let tmp = tempfile::tempdir().unwrap();
    let (api, pki) = start_apiserver(&tmp.path().join("api"), &[])
        .await
        .expect("apiserver");
    let mut kubelets = Vec::new();
    for name in NODES {
        let kubelet =
            Kubelet::start_hollow(&tmp.path().join(name), &api, name, serde_json::Value::Null)
                .await
                .expect("hollow kubelet");
        kubelets.push(kubelet);
    }
    let logs = || {
        kubelets
            .iter()
            .map(|k| k.logs())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let dir = tmp.path().join("control");
    let scheduler = e2e::scheduler::Scheduler::start(&dir.join("scheduler"), &api, None, &[])
        .await
        .expect("scheduler");
    let kcm = e2e::controller_manager::ControllerManager::start(&dir.join("kcm"), &api, &[])
        .await
        .expect("controller manager");
    let all_logs = || format!("{}\n{}\n{}", logs(), scheduler.logs(), kcm.logs());
    let client = admin_client(&api, &pki, tmp.path()).await;
    let nodes: Api<Node> = Api::all(client.clone());
    // Ready is not enough: the scheduler skips a node until the node lifecycle controller has
    // lifted the not-ready taint that admission put on it at registration.
    poll("3 Ready, untainted", &all_logs, async || {
        let list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let ready = list
            .items
            .iter()
            .filter(|n| is_ready(n) && untainted(n))
            .count();
        (ready == 3)
            .then_some(list)
            .ok_or(format!("{ready}/3 Ready and untainted"))
    })
    .await
    .items
    .iter()
    .for_each(|n| {
        let runtime = &n.status.as_ref().unwrap().node_info.as_ref().unwrap();
        assert!(
            runtime.container_runtime_version.starts_with("hollow://"),
            "{:?}",
            runtime.container_runtime_version
        );
    });

    let kubectl =
        e2e::kubectl::Kubectl::upstream_with_kubeconfig(&dir, &tmp.path().join("admin.kubeconfig"));
    kubectl.ok(&[
        "create",
        "deployment",
        "web",
        "--image=registry.example/never-pulled:1.0",
        "--replicas=6",
    ]);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let running = poll("6 Running pods with IPs", &all_logs, async || {
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let list_all = list.items;
        let running: Vec<Pod> = list_all
            .iter()
            .filter(|p| {
                let status = p.status.as_ref();
                status.and_then(|s| s.phase.as_deref()) == Some("Running")
                    && status.and_then(|s| s.pod_ip.as_ref()).is_some()
            })
            .cloned()
            .collect();
        let others: Vec<String> = list_all
            .iter()
            .filter(|p| !running.iter().any(|r| r.metadata.uid == p.metadata.uid))
            .map(|p| {
                format!(
                    "{} on {:?}: {}",
                    p.metadata.name.as_deref().unwrap_or_default(),
                    p.spec.as_ref().and_then(|s| s.node_name.as_deref()),
                    serde_json::to_string(&p.status).unwrap_or_default()
                )
            })
            .collect();
        (running.len() == 6)
            .then_some(running.clone())
            .ok_or(format!(
                "{} of 6 running; the others: {others:#?}",
                running.len()
            ))
    })
    .await;
    let used: BTreeSet<String> = running
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    assert!(used.len() >= 2, "the pods all went to {used:?}");

    let victim = running[0].metadata.name.clone().unwrap();
    pods.delete(&victim, &DeleteParams::default())
        .await
        .expect("delete");
    poll("the deleted pod to go", &all_logs, async || {
        match pods.get_opt(&victim).await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(_) => Err(format!("{victim} still exists")),
        }
    })
    .await;
    for kubelet in &kubelets {
        let cgroup = format!("/sys/fs/cgroup/memory{}", kubelet.cgroup_root());
        assert!(
            !std::path::Path::new(&cgroup).exists(),
            "a hollow kubelet made {cgroup}"
        );
    }
}

/// A pod bound to a node too small for it is refused by the kubelet's admission: Failed with
/// upstream's `OutOfcpu` reason and message, and a Warning event saying the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_too_big_for_the_node_is_rejected_with_an_event() {
    let tmp = tempfile::tempdir().unwrap();
    let (api, pki) = start_apiserver(&tmp.path().join("api"), &[])
        .await
        .expect("apiserver");
    let kubelet = Kubelet::start_hollow(
        &tmp.path().join("small"),
        &api,
        "small",
        serde_json::Value::Null,
    )
    .await
    .expect("hollow kubelet");
    let logs = || kubelet.logs();
    let client = admin_client(&api, &pki, tmp.path()).await;
    let nodes: Api<Node> = Api::all(client.clone());
    poll("the node Ready", &logs, async || {
        let node = nodes.get("small").await.map_err(|e| e.to_string())?;
        is_ready(&node).then_some(()).ok_or("not Ready".to_string())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "huge"},
        "spec": {"nodeName": "small", "containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": "100000"}}}]},
    }))
    .unwrap();
    pods.create(&Default::default(), &pod)
        .await
        .expect("create");
    let status = poll("the pod Failed", &logs, async || {
        let pod = pods.get("huge").await.map_err(|e| e.to_string())?;
        let status = pod.status.unwrap_or_default();
        (status.phase.as_deref() == Some("Failed"))
            .then_some(status.clone())
            .ok_or(format!("{status:?}"))
    })
    .await;
    assert_eq!(status.reason.as_deref(), Some("OutOfcpu"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.starts_with("Pod was rejected: Node didn't have enough resource: cpu, requested: 100000000, used: 0, capacity: "),
        "{message}"
    );
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, "default");
    let event = poll("the rejection event", &logs, async || {
        let list = events
            .list(&ListParams::default().fields("involvedObject.name=huge"))
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("OutOfcpu"))
            .ok_or("no OutOfcpu event yet".to_string())
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        event
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("Node didn't have enough resource: cpu")),
        "{:?}",
        event.message
    );
}
