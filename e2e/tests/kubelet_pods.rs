//! Pods end to end on one node: our kubelet on a real containerd against our apiserver, pods
//! bound by the test (`spec.nodeName`), then a Deployment through our scheduler and controller
//! manager driven by the real kubectl. Covers Running with an IP and Ready, exit 1 under
//! `Never` ending Failed, CrashLoopBackOff, OOMKilled at a 64Mi limit, graceful deletion that
//! removes the sandbox and the API object, and a kubelet restart that keeps its containers.

use e2e::containerd::{BUSYBOX_136_IMAGE, BUSYBOX_IMAGE, Containerd};
use e2e::kubelet::{KubeletCluster, poll};
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{ListPodSandboxRequest, PodSandboxFilter};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

/// A busybox pod bound to `node` running `script` under `restart_policy`.
fn pod(
    name: &str,
    node: &str,
    restart_policy: &str,
    script: &str,
    extra: serde_json::Value,
) -> Pod {
    let mut container = json!({
        "name": "main",
        "image": BUSYBOX_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", script],
    });
    if let (Some(c), Some(e)) = (container.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 5,
            "containers": [container],
        },
    }))
    .expect("a valid pod")
}

/// The status of the pod's first container (`main` in the test's pods).
fn main_status(p: &Pod) -> Result<ContainerStatus, String> {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first().cloned())
        .ok_or_else(|| "no container status yet".to_string())
}

fn phase(p: &Pod) -> String {
    p.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

fn condition(p: &Pod, type_: &str) -> Option<String> {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
        .map(|c| c.status.clone())
}

/// Running, Ready, with a pod IP and a running `main`: its container id.
fn running_ready(p: &Pod) -> Result<String, String> {
    if phase(p) != "Running" || condition(p, "Ready").as_deref() != Some("True") {
        return Err(format!(
            "phase {} ready {:?}",
            phase(p),
            condition(p, "Ready")
        ));
    }
    if p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_none() {
        return Err("no pod IP".into());
    }
    let c = main_status(p)?;
    match (c.state.and_then(|s| s.running), c.container_id) {
        (Some(_), Some(id)) => Ok(id),
        _ => Err("main is not running".into()),
    }
}

/// Sandboxes containerd still has for pods with this uid.
async fn sandboxes_of(containerd: &Containerd, uid: &str) -> usize {
    let mut cri = RuntimeServiceClient::new(containerd.cri_channel().await.expect("CRI channel"));
    cri.list_pod_sandbox(ListPodSandboxRequest {
        filter: Some(PodSandboxFilter {
            label_selector: [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into(),
            ..Default::default()
        }),
    })
    .await
    .expect("ListPodSandbox")
    .into_inner()
    .items
    .len()
}

async fn node(name: &str) -> KubeletCluster {
    KubeletCluster::start(name, serde_json::Value::Null).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_lifecycle_on_containerd() {
    let mut n = node("pods-node").await;
    let logs = || n.logs();
    let pods: Api<Pod> = Api::namespaced(n.client.clone(), "default");
    let create = async |p: Pod| {
        pods.create(&PostParams::default(), &p)
            .await
            .expect("create pod")
    };
    let get = async |name: &str| pods.get(name).await.map_err(|e| e.to_string());

    // Everything starts at once; each case is checked as it settles.
    create(pod(
        "web",
        "pods-node",
        "Always",
        "trap 'exit 0' TERM; sleep 3600 & wait",
        json!({}),
    ))
    .await;
    create(pod("fails", "pods-node", "Never", "exit 1", json!({}))).await;
    create(pod("crash", "pods-node", "Always", "exit 2", json!({}))).await;
    let oom_script = "x=$(head -c 209715200 /dev/zero | tr '\\0' a); echo ${#x}";
    create(pod(
        "oom",
        "pods-node",
        "Never",
        oom_script,
        json!({"resources": {"limits": {"memory": "64Mi"}}}),
    ))
    .await;

    // 1. Running with a pod IP, Ready, and the conditions and QoS upstream reports.
    let web = poll("web to run and be ready", &logs, async || {
        let p = get("web").await?;
        running_ready(&p).map(|_| p)
    })
    .await;
    let status = web.status.clone().unwrap_or_default();
    for c in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        assert_eq!(
            condition(&web, c).as_deref(),
            Some("True"),
            "{c}: {status:?}"
        );
    }
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
    assert_eq!(status.host_ip.as_deref(), Some("127.0.0.1"));
    assert!(status.start_time.is_some());
    let main = main_status(&web).unwrap();
    assert!(main.ready && main.started == Some(true), "{main:?}");
    assert_eq!(main.restart_count, 0);
    assert!(main.image_id.contains("sha256:"), "{main:?}");
    let web_ip = status.pod_ip.clone().unwrap();
    assert!(
        web_ip.starts_with(
            n.containerd
                .cni_subnet()
                .rsplit_once('.')
                .map(|(a, _)| a)
                .unwrap_or("")
        ),
        "{web_ip} in {}",
        n.containerd.cni_subnet()
    );

    // 2. restartPolicy Never and exit 1: Failed with the exit code.
    let failed = poll("fails to end Failed", &logs, async || {
        let p = get("fails").await?;
        (phase(&p) == "Failed")
            .then_some(p)
            .ok_or("not failed yet".to_string())
    })
    .await;
    let term = main_status(&failed)
        .unwrap()
        .state
        .and_then(|s| s.terminated)
        .expect("terminated state");
    assert_eq!(term.exit_code, 1);
    assert_eq!(term.reason.as_deref(), Some("Error"));
    assert!(term.container_id.is_some() && term.finished_at.is_some());

    // 3. A 64Mi container allocating 200Mi is OOMKilled.
    let oom = poll("oom to be OOMKilled", &logs, async || {
        let p = get("oom").await?;
        let t = main_status(&p)?
            .state
            .and_then(|s| s.terminated)
            .ok_or("not terminated yet")?;
        Ok((p, t))
    })
    .await;
    assert_eq!(oom.1.reason.as_deref(), Some("OOMKilled"), "{:?}", oom.1);
    assert_eq!(oom.1.exit_code, 137);
    assert_eq!(phase(&oom.0), "Failed");
    assert_eq!(
        oom.0.status.as_ref().and_then(|s| s.qos_class.as_deref()),
        Some("Burstable")
    );

    // 4. A crashing container under Always backs off: restarts counted, CrashLoopBackOff.
    let crash = poll("crash to loop", &logs, async || {
        let c = main_status(&get("crash").await?)?;
        let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
        match waiting.and_then(|w| w.reason.as_deref()) {
            Some("CrashLoopBackOff") if c.restart_count >= 2 => Ok(c),
            r => Err(format!("restarts {} waiting {r:?}", c.restart_count)),
        }
    })
    .await;
    let last = crash
        .last_state
        .and_then(|s| s.terminated)
        .expect("lastState");
    assert_eq!(last.exit_code, 2);
    assert!(!crash.ready);
    assert_eq!(phase(&get("crash").await.unwrap()), "Running");

    // 5. A kubelet killed and restarted keeps its containers and picks their state up.
    let web_container = running_ready(&get("web").await.unwrap()).unwrap();
    n.kubelet.kill();
    n.kubelet.restart().await.expect("kubelet restart");
    let logs = || n.logs();
    create(pod("after", "pods-node", "Always", "sleep 3600", json!({}))).await;
    poll(
        "a pod created after the restart to run",
        &logs,
        async || running_ready(&get("after").await?).map(|_| ()),
    )
    .await;
    let web = get("web").await.unwrap();
    assert_eq!(running_ready(&web).ok(), Some(web_container.clone()));
    assert_eq!(main_status(&web).unwrap().restart_count, 0);
    assert_eq!(phase(&get("fails").await.unwrap()), "Failed");

    // 6. Deletion: the container gets SIGTERM (it exits 0 on it, well within the grace
    // period), the sandbox is removed and the API object disappears.
    let uid = web.metadata.uid.clone().unwrap();
    assert_eq!(sandboxes_of(&n.containerd, &uid).await, 1);
    let deleted_at = Instant::now();
    pods.delete("web", &DeleteParams::default())
        .await
        .expect("delete web");
    poll("web to disappear", &logs, async || match get("web").await {
        Err(e) if e.contains("404") || e.contains("not found") => Ok(()),
        Err(e) => Err(e),
        Ok(p) => Err(format!("still there, phase {}", phase(&p))),
    })
    .await;
    let took = deleted_at.elapsed();
    assert!(took < Duration::from_secs(5 + 10), "deletion took {took:?}");
    poll(
        "web's sandbox to be removed",
        &logs,
        async || match sandboxes_of(&n.containerd, &uid).await {
            0 => Ok(()),
            k => Err(format!("{k} sandboxes left")),
        },
    )
    .await;
}

/// The acceptance: the real kubectl runs a busybox Deployment of 3 through our scheduler and
/// controller manager, and the kubelet brings it to 3/3 Running with pod IPs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_of_three_with_kubectl() {
    let n = node("deploy-node").await;
    let dir = n.dir().join("control");
    let scheduler = e2e::scheduler::Scheduler::start(&dir.join("scheduler"), &n.api, None, &[])
        .await
        .expect("scheduler");
    let kcm = e2e::controller_manager::ControllerManager::start(&dir.join("kcm"), &n.api, &[])
        .await
        .expect("controller manager");
    let kubectl = e2e::kubectl::Kubectl::upstream_with_kubeconfig(&dir, &n.kubeconfig);
    // A tagged image (not `:latest`) defaults to IfNotPresent: no registry is reachable.
    kubectl.ok(&[
        "create",
        "deployment",
        "web",
        &format!("--image={BUSYBOX_136_IMAGE}"),
        "--replicas=3",
        "--",
        "sleep",
        "3600",
    ]);
    let logs = || format!("{}\n{}\n{}", n.kubelet.logs(), scheduler.logs(), kcm.logs());
    let pods: Api<Pod> = Api::namespaced(n.client.clone(), "default");
    poll("3 running pods with IPs", &logs, async || {
        let list = pods
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let states: Vec<Result<String, String>> = list.items.iter().map(running_ready).collect();
        let ready = states.iter().filter(|s| s.is_ok()).count();
        (ready == 3)
            .then_some(())
            .ok_or(format!("{ready}/3 ready: {states:?}"))
    })
    .await;
    poll("kubectl to show 3/3", &logs, async || {
        let out = kubectl.ok(&["get", "deployment", "web", "--no-headers"]);
        out.contains("3/3").then_some(()).ok_or(out)
    })
    .await;
    let ips = kubectl.ok(&["get", "pods", "-o", "jsonpath={.items[*].status.podIP}"]);
    assert_eq!(ips.split_whitespace().count(), 3, "{ips}");
}

/// Pod startup latency, as upstream's density test measures it: created (the create call
/// returned) to Running observed through a watch, image present, 50 pods created back to back.
/// Prints the median and p99; fails only if a pod never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_latency_of_50_pods() {
    use futures::StreamExt;
    use kube::api::WatchEvent;
    use kube::api::WatchParams;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    const N: usize = 50;
    let n = node("latency-node").await;
    let logs = || n.kubelet.logs();
    let pods: Api<Pod> = Api::namespaced(n.client.clone(), "default");
    let running: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut stream = pods
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch pods")
        .boxed();
    let seen = running.clone();
    let watcher = tokio::spawn(async move {
        while let Some(event) = stream.next().await {
            if let Ok(WatchEvent::Added(p) | WatchEvent::Modified(p)) = event
                && phase(&p) == "Running"
            {
                let name = p.metadata.name.clone().unwrap_or_default();
                seen.lock()
                    .unwrap()
                    .entry(name)
                    .or_insert_with(Instant::now);
            }
        }
    });
    let mut created = HashMap::new();
    for i in 0..N {
        let name = format!("lat-{i}");
        pods.create(
            &PostParams::default(),
            &pod(&name, "latency-node", "Always", "sleep 3600", json!({})),
        )
        .await
        .expect("create pod");
        created.insert(name, Instant::now());
    }
    poll("every pod to be seen Running", &logs, async || {
        let k = running.lock().unwrap().len();
        (k >= N).then_some(()).ok_or(format!("{k}/{N} running"))
    })
    .await;
    watcher.abort();
    let seen = running.lock().unwrap().clone();
    let mut latencies: Vec<Duration> = created
        .iter()
        .map(|(name, at)| seen[name].saturating_duration_since(*at))
        .collect();
    latencies.sort();
    let median = latencies[N / 2];
    let p99 = latencies[(N * 99).div_ceil(100) - 1];
    println!(
        "pod startup latency over {N} pods: median {median:?}, p99 {p99:?}, max {:?}",
        latencies[N - 1]
    );
}
