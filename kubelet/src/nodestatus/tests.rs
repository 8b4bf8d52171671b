//! The status loop against a real apiserver (our binary), with a runtime whose health the
//! test sets.

use super::*;
use crate::app::config::parse;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{Patch, PatchParams};
use std::time::Instant;

struct FakeRuntime {
    status: parking_lot::Mutex<Result<(), String>>,
}

#[async_trait::async_trait]
impl NodeRuntime for FakeRuntime {
    async fn version(&self) -> anyhow::Result<String> {
        Ok("containerd://1.6.20".into())
    }

    async fn status(&self) -> anyhow::Result<()> {
        self.status.lock().clone().map_err(anyhow::Error::msg)
    }
}

fn options(name: &str, eviction: &str) -> NodeOptions {
    NodeOptions {
        node_name: name.into(),
        labels: [("role".to_string(), "edge".to_string())].into(),
        taints: vec![Taint {
            key: "dedicated".into(),
            value: Some("test".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }],
        provider_id: String::new(),
        register_node: true,
        node_ips: vec!["127.0.0.1".parse().unwrap()],
        max_pods: 42,
        kube_reserved: ResourceList::new(),
        system_reserved: ResourceList::new(),
        eviction_hard: parse::eviction_thresholds(&parse::eviction_flag(eviction).unwrap())
            .unwrap(),
        root_dir: std::env::temp_dir(),
        port: 12345,
        update_frequency: Duration::from_millis(200),
        report_frequency: Duration::from_secs(300),
        lease_duration_seconds: 4,
    }
}

async fn poll<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn condition(node: &Node, kind: &str) -> Option<k8s_openapi::api::core::v1::NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_reports_and_renews_against_an_apiserver() {
    let dir = tempfile::tempdir().unwrap();
    let api = e2e::apiserver::ApiServer::start(dir.path(), e2e::apiserver::Backend::Embedded)
        .await
        .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    e2e::kubectl::write_kubeconfig(&kubeconfig, &api.url(), &api.ca_file()).unwrap();
    let client = client_go_rs::config::load_client_config(Some(&kubeconfig), None, None)
        .await
        .unwrap()
        .build_client()
        .unwrap();
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), lease::LEASE_NAMESPACE);
    let runtime = Arc::new(FakeRuntime {
        status: parking_lot::Mutex::new(Err(
            "dial unix /missing.sock: connect: no such file".into()
        )),
    });
    let shutdown = CancellationToken::new();
    let handle = NodeStatusManager::start(
        client.clone(),
        options("n1", "memory.available<1Mi"),
        runtime.clone(),
        shutdown.clone(),
    )
    .unwrap();

    // Registered, with a status saying why it is not ready.
    let node = poll("a NotReady node", async || {
        let node = nodes.get_opt("n1").await.ok()??;
        (condition(&node, "Ready")?.status == "False").then_some(node)
    })
    .await;
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    assert!(ready.message.unwrap().contains("/missing.sock"));
    let labels = node.metadata.labels.clone().unwrap();
    assert_eq!(labels["kubernetes.io/hostname"], "n1");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["kubernetes.io/arch"], register::go_arch());
    assert_eq!(labels["role"], "edge");
    let taints = node.spec.clone().unwrap().taints.unwrap();
    // Admission may add node.kubernetes.io/not-ready beside ours.
    assert_eq!(
        taints.iter().filter(|t| t.key == "dedicated").count(),
        1,
        "{taints:?}"
    );
    let status = node.status.clone().unwrap();
    let capacity = status.capacity.unwrap();
    let allocatable = status.allocatable.unwrap();
    assert_eq!(capacity["pods"].0, "42");
    for r in [
        "cpu",
        "memory",
        "ephemeral-storage",
        "hugepages-2Mi",
        "hugepages-1Gi",
    ] {
        assert!(
            capacity.contains_key(r) && allocatable.contains_key(r),
            "{r}"
        );
    }
    let mem = |q: &str| api_types::resource::Quantity::parse(q).unwrap().value();
    assert_eq!(
        mem(&capacity["memory"].0) - mem(&allocatable["memory"].0),
        1024 * 1024
    );
    let info = status.node_info.unwrap();
    assert_eq!(info.kubelet_version, "v1.33.0");
    assert_eq!(info.container_runtime_version, "containerd://1.6.20");
    assert_eq!(info.operating_system, "linux");
    assert!(!info.boot_id.is_empty() && !info.kernel_version.is_empty());
    let addresses: Vec<_> = status
        .addresses
        .unwrap()
        .into_iter()
        .map(|a| (a.type_, a.address))
        .collect();
    assert_eq!(
        addresses,
        [
            ("InternalIP".to_string(), "127.0.0.1".to_string()),
            ("Hostname".to_string(), "n1".to_string())
        ]
    );
    assert_eq!(
        status
            .daemon_endpoints
            .unwrap()
            .kubelet_endpoint
            .unwrap()
            .port,
        12345
    );
    for kind in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        assert_eq!(condition(&node, kind).unwrap().status, "False", "{kind}");
    }

    // The runtime comes up: Ready turns True.
    *runtime.status.lock() = Ok(());
    let node = poll("a Ready node", async || {
        let node = nodes.get("n1").await.ok()?;
        (condition(&node, "Ready")?.status == "True").then_some(node)
    })
    .await;
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready.reason.as_deref(), Some("KubeletReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("kubelet is posting ready status")
    );
    assert_eq!(handle.node().unwrap().metadata.uid, node.metadata.uid);

    // The lease: held by the node, owned by it, renewed while nothing else is posted.
    let first = poll("the lease", async || leases.get_opt("n1").await.ok()?).await;
    let spec = first.spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
    assert_eq!(spec.lease_duration_seconds, Some(4));
    let owner = &first.metadata.owner_references.clone().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Node", "n1"));
    assert_eq!(Some(&owner.uid), node.metadata.uid.as_ref());
    let renewed = |l: &Lease| l.spec.as_ref().and_then(|s| s.renew_time.clone());
    let mut seen = renewed(&first);
    for _ in 0..2 {
        seen = Some(
            poll("a lease renewal", async || {
                let now = renewed(&leases.get("n1").await.ok()?)?;
                (Some(&now) != seen.as_ref()).then_some(now)
            })
            .await,
        );
    }
    // Two renewals (a second or more) and many status ticks later, the unchanged status was
    // not posted again.
    let after = nodes.get("n1").await.unwrap();
    assert_eq!(
        condition(&after, "Ready").unwrap().last_heartbeat_time,
        ready.last_heartbeat_time
    );

    // A kubelet starting for an existing node reconciles its default labels only.
    shutdown.cancel();
    nodes
        .patch(
            "n1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {"kubernetes.io/os": null, "extra": "kept"}}})),
        )
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    let mut opts = options("n1", "nodefs.inodesFree<100%");
    opts.labels.insert("new".into(), "ignored".into());
    let handle =
        NodeStatusManager::start(client.clone(), opts, runtime.clone(), shutdown.clone()).unwrap();
    // The eviction manager's report is what the status carries.
    crate::eviction::PressureSink::set_pressure(
        &handle,
        &[crate::eviction::signals::Condition::DiskPressure].into(),
    );
    let node = poll("the reconciled node under disk pressure", async || {
        let node = nodes.get("n1").await.ok()?;
        let labels = node.metadata.labels.clone()?;
        (labels.get("kubernetes.io/os").map(String::as_str) == Some("linux")
            && condition(&node, "DiskPressure")?.status == "True")
            .then_some(node)
    })
    .await;
    let labels = node.metadata.labels.clone().unwrap();
    assert_eq!(labels["extra"], "kept");
    assert!(
        !labels.contains_key("new"),
        "--node-labels apply at creation only"
    );
    let taints = node.spec.clone().unwrap().taints.unwrap();
    assert_eq!(
        taints.iter().filter(|t| t.key == "dedicated").count(),
        1,
        "{taints:?}"
    );
    let disk = condition(&node, "DiskPressure").unwrap();
    assert_eq!(disk.reason.as_deref(), Some("KubeletHasDiskPressure"));
    shutdown.cancel();
}

#[tokio::test]
async fn pressure_changes_wake_the_status_loop() {
    use crate::eviction::PressureSink;
    use crate::eviction::signals::Condition;
    let handle = NodeHandle::new("n", Vec::new());
    assert!(handle.pressure().is_empty());
    let memory: BTreeSet<Condition> = [Condition::MemoryPressure].into();
    handle.set_pressure(&memory);
    assert_eq!(handle.pressure(), memory);
    // The change left a wake-up for the loop; an unchanged report leaves none.
    tokio::time::timeout(Duration::from_secs(1), handle.pressure_changed.notified())
        .await
        .expect("a change wakes the status loop");
    handle.set_pressure(&memory);
    let again = tokio::time::timeout(
        Duration::from_millis(50),
        handle.pressure_changed.notified(),
    )
    .await;
    assert!(again.is_err(), "no wake-up without a change");
    handle.set_pressure(&BTreeSet::new());
    assert!(handle.pressure().is_empty());
}
