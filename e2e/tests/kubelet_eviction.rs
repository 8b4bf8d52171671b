//! The kubelet's eviction manager on a real containerd: hard thresholds raise the node's
//! pressure conditions, a pod is evicted ranked as upstream (Failed, reason Evicted, upstream's
//! message, DisruptionTarget), its containers stopped, and pods are refused at admission while
//! the pressure lasts.
//!
//! The host is shared with every other test, so the memory case measures what only this
//! kubelet's pods use: `allocatableMemory.available` on the test's own `kubepods` cgroup, with
//! `systemReserved` leaving the pods 200Mi, and pods that fill memory-backed emptyDirs. The
//! node-wide signals are made crossed at once by percentages (`memory.available<99%`,
//! `nodefs.available<99%`): only admission and conditions are observable there, and only
//! pods of this kubelet can be killed.

use e2e::containerd::{BUSYBOX_IMAGE, Containerd};
use e2e::kubelet::{KubeletCluster, poll};
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{ContainerFilter, ContainerState, ContainerStateValue, ListContainersRequest};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

const MI: u64 = 1024 * 1024;

/// A busybox pod bound to `node` that writes `fill_mi` MiB into a memory-backed emptyDir and
/// sleeps; `resources` for its container, `spec` merged into the pod's spec.
fn pod(name: &str, node: &str, fill_mi: u64, resources: Value, spec: Value) -> Pod {
    let script = format!(
        "dd if=/dev/zero of=/mem/fill bs=1048576 count={fill_mi} 2>/dev/null; trap 'exit 0' TERM; sleep 3600 & wait"
    );
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "volumes": [{"name": "mem", "emptyDir": {"medium": "Memory"}}],
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", script],
                "resources": resources,
                "volumeMounts": [{"name": "mem", "mountPath": "/mem"}],
            }],
        },
    });
    if let (Some(s), Some(extra)) = (pod["spec"].as_object_mut(), spec.as_object()) {
        s.extend(extra.clone());
    }
    serde_json::from_value(pod).expect("a valid pod")
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn reason(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.reason.as_deref())
        .unwrap_or_default()
}

fn message(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.message.as_deref())
        .unwrap_or_default()
}

fn running(p: &Pod) -> Result<(), String> {
    let ready = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .and_then(|c| c.state.as_ref()?.running.as_ref())
        .is_some();
    if phase(p) == "Running" && ready {
        Ok(())
    } else {
        Err(format!("phase {:?}", phase(p)))
    }
}

fn node_condition(n: &Node, kind: &str) -> Option<(String, String)> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("MemTotal")
        * 1024
}

/// Containers containerd still runs for the pod with this uid.
async fn running_containers(containerd: &Containerd, uid: &str) -> usize {
    let mut cri = RuntimeServiceClient::new(containerd.cri_channel().await.expect("CRI channel"));
    cri.list_containers(ListContainersRequest {
        filter: Some(ContainerFilter {
            state: Some(ContainerStateValue {
                state: ContainerState::ContainerRunning as i32,
            }),
            label_selector: [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into(),
            ..Default::default()
        }),
    })
    .await
    .expect("ListContainers")
    .into_inner()
    .containers
    .len()
}

/// The APIs a test's checks go through, and the polls they repeat.
struct Checks<'a> {
    node: &'a str,
    cluster: &'a KubeletCluster,
    pods: Api<Pod>,
    nodes: Api<Node>,
}

impl<'a> Checks<'a> {
    fn new(cluster: &'a KubeletCluster, node: &'a str) -> Self {
        Checks {
            node,
            cluster,
            pods: Api::namespaced(cluster.client.clone(), "default"),
            nodes: Api::all(cluster.client.clone()),
        }
    }

    fn logs(&self) -> String {
        self.cluster.kubelet.logs()
    }

    async fn create(&self, p: Pod) -> Pod {
        self.pods
            .create(&PostParams::default(), &p)
            .await
            .expect("create pod")
    }

    async fn until_running(&self, name: &str) {
        poll(&format!("{name} running"), &|| self.logs(), async || {
            running(&self.pods.get(name).await.map_err(|e| e.to_string())?)
        })
        .await;
    }

    /// Waits for the pod to fail; `evicted`: with reason Evicted too.
    async fn until_failed(&self, name: &str, evicted: bool) -> Pod {
        poll(&format!("{name} failed"), &|| self.logs(), async || {
            let p = self.pods.get(name).await.map_err(|e| e.to_string())?;
            (phase(&p) == "Failed" && (!evicted || reason(&p) == "Evicted"))
                .then_some(p.clone())
                .ok_or_else(|| format!("{:?} {:?}", phase(&p), reason(&p)))
        })
        .await
    }

    /// Waits for the node's condition `kind` to have `status`.
    async fn until_condition(&self, kind: &str, status: &str) -> Node {
        poll(&format!("{kind} {status}"), &|| self.logs(), async || {
            let n = self.nodes.get(self.node).await.map_err(|e| e.to_string())?;
            match node_condition(&n, kind) {
                Some((s, _)) if s == status => Ok(n),
                other => Err(format!("{other:?}")),
            }
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_pressure_evicts_the_best_effort_pod_and_refuses_new_ones() {
    let name = "evict-mem";
    // The pods may use 200Mi; below 100Mi available the node is under memory pressure.
    let s = KubeletCluster::start(
        name,
        json!({
            "systemReserved": {"memory": (mem_total() - 200 * MI).to_string()},
            "evictionHard": {"allocatableMemory.available": "100Mi"},
            "evictionPressureTransitionPeriod": "30s",
        }),
    )
    .await;
    let c = Checks::new(&s, name);
    let logs = || c.logs();
    let burstable = json!({"requests": {"memory": "120Mi"}});

    // 70Mi within a 120Mi request, and an idle best-effort pod: about 125Mi still available.
    c.create(pod(
        "within-request",
        name,
        70,
        burstable.clone(),
        json!({}),
    ))
    .await;
    c.create(pod("idle", name, 0, json!({}), json!({}))).await;
    for p in ["within-request", "idle"] {
        c.until_running(p).await;
    }
    let node = c.nodes.get(name).await.unwrap();
    assert_eq!(
        node_condition(&node, "MemoryPressure")
            .map(|c| c.0)
            .as_deref(),
        Some("False")
    );

    // 50Mi more from a best-effort pod crosses the threshold: it goes, though it uses less
    // than the burstable pod, which stays within its request.
    let hog = c.create(pod("hog", name, 50, json!({}), json!({}))).await;
    let node = c.until_condition("MemoryPressure", "True").await;
    assert_eq!(
        node_condition(&node, "MemoryPressure").unwrap().1,
        "KubeletHasInsufficientMemory"
    );
    let evicted = c.until_failed("hog", true).await;
    let text = message(&evicted);
    assert!(
        text.starts_with(
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: "
        ) && text.contains("Container main was using ")
            && text.ends_with("request is 0, has larger consumption of memory. "),
        "{text}"
    );
    let disruption = evicted
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
        .cloned()
        .expect("a DisruptionTarget condition");
    assert_eq!(disruption.status, "True");
    assert_eq!(disruption.reason.as_deref(), Some("TerminationByKubelet"));
    let hog_uid = hog.metadata.uid.clone().unwrap();
    let events: Api<Event> = Api::namespaced(s.client.clone(), "default");
    poll("the Evicted event", &logs, async || {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .iter()
            .find(|e| {
                e.reason.as_deref() == Some("Evicted")
                    && e.involved_object.uid.as_deref() == Some(hog_uid.as_str())
            })
            .map(|e| assert_eq!(e.type_.as_deref(), Some("Warning")))
            .ok_or_else(|| format!("{} events", list.items.len()))
    })
    .await;
    // And on the node, what it tried to reclaim.
    poll("the EvictionThresholdMet event", &logs, async || {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .iter()
            .find(|e| {
                e.reason.as_deref() == Some("EvictionThresholdMet")
                    && e.involved_object.kind.as_deref() == Some("Node")
            })
            .map(|e| assert_eq!(e.message.as_deref(), Some("Attempting to reclaim memory")))
            .ok_or_else(|| format!("{} events", list.items.len()))
    })
    .await;
    poll(
        "the hog's containers stopped",
        &logs,
        async || match running_containers(&s.containerd, &hog_uid).await {
            0 => Ok(()),
            n => Err(format!("{n} running")),
        },
    )
    .await;

    // Still under pressure (held for the transition period): a best-effort pod is refused, a
    // burstable one admitted.
    c.create(pod("late-best-effort", name, 0, json!({}), json!({})))
        .await;
    c.create(pod(
        "late-burstable",
        name,
        0,
        json!({"requests": {"memory": "10Mi"}}),
        json!({}),
    ))
    .await;
    let refused = c.until_failed("late-best-effort", false).await;
    assert_eq!(reason(&refused), "Evicted");
    assert_eq!(
        message(&refused),
        "Pod was rejected: The node had condition: [MemoryPressure]. "
    );
    c.until_running("late-burstable").await;

    // The hog's memory is back: the condition clears after the transition period and the
    // other pods were never touched.
    c.until_condition("MemoryPressure", "False").await;
    for p in ["within-request", "idle", "late-burstable"] {
        let got = c.pods.get(p).await.unwrap();
        assert!(running(&got).is_ok(), "{p}: {:?}", got.status);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_wide_pressure_refuses_pods_but_critical_ones() {
    let name = "evict-node";
    let s = KubeletCluster::start(
        name,
        json!({
            "evictionHard": {"memory.available": "99%", "nodefs.available": "99%"},
        }),
    )
    .await;
    let c = Checks::new(&s, name);
    let logs = || c.logs();
    let node = poll("MemoryPressure and DiskPressure", &logs, async || {
        let n = c.nodes.get(name).await.map_err(|e| e.to_string())?;
        let memory = node_condition(&n, "MemoryPressure");
        let disk = node_condition(&n, "DiskPressure");
        match (&memory, &disk) {
            (Some((m, _)), Some((d, _))) if m == "True" && d == "True" => Ok(n),
            _ => Err(format!("{memory:?} {disk:?}")),
        }
    })
    .await;
    assert_eq!(
        node_condition(&node, "DiskPressure").unwrap().1,
        "KubeletHasDiskPressure"
    );
    assert_eq!(
        node_condition(&node, "PIDPressure").map(|c| c.0).as_deref(),
        Some("False")
    );

    c.create(pod(
        "burstable",
        name,
        0,
        json!({"requests": {"memory": "1Mi"}}),
        json!({}),
    ))
    .await;
    c.create(pod(
        "critical",
        name,
        0,
        json!({}),
        json!({"priorityClassName": "system-node-critical"}),
    ))
    .await;
    let refused = c.until_failed("burstable", false).await;
    assert_eq!(reason(&refused), "Evicted");
    assert_eq!(
        message(&refused),
        "Pod was rejected: The node had condition: [MemoryPressure DiskPressure]. "
    );
    c.until_running("critical").await;
    // The manager tries, finds only the critical pod, and leaves it.
    poll(
        "an eviction attempt with nothing to evict",
        &logs,
        async || {
            logs()
                .contains("unable to evict any pod")
                .then_some(())
                .ok_or_else(|| "not yet".to_string())
        },
    )
    .await;
    let critical = c.pods.get("critical").await.unwrap();
    assert!(running(&critical).is_ok(), "{:?}", critical.status);
}

/// A tmpfs mounted for the test; the kubelet harness unmounts everything under its directory
/// when it stops, this lazy unmount on drop covers a test that failed before.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(path: &std::path::Path, size: &str) -> Self {
        std::fs::create_dir_all(path).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .status()
            .expect("mount");
        assert!(status.success(), "mount tmpfs on {}", path.display());
        Self(path.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// A busybox pod bound to `node` that writes `fill_mi` MiB into a disk-backed emptyDir
/// (`data`).
fn disk_pod(name: &str, node: &str, fill_mi: u64) -> Pod {
    let mut p = pod(name, node, fill_mi, json!({}), json!({}));
    let spec = p.spec.as_mut().unwrap();
    let volume = &mut spec.volumes.as_mut().unwrap()[0];
    volume.name = "data".into();
    volume.empty_dir = Some(Default::default());
    spec.containers[0].volume_mounts.as_mut().unwrap()[0].name = "data".into();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_pressure_evicts_the_pod_writing_the_most() {
    let name = "evict-disk";
    // The kubelet's root dir (its nodefs) is a 64Mi tmpfs of this test's own.
    let tmp = tempfile::tempdir().unwrap();
    let root = Tmpfs::mount(&tmp.path().join("kubelet").join("root"), "64m");
    let s = KubeletCluster::start_in(
        tmp,
        name,
        json!({
            "evictionHard": {"nodefs.available": "50%"},
            "evictionPressureTransitionPeriod": "10s",
        }),
    )
    .await;
    let c = Checks::new(&s, name);
    // A pod over its emptyDir's sizeLimit goes without any node pressure.
    let mut over = disk_pod("over-limit", name, 4);
    over.spec.as_mut().unwrap().volumes.as_mut().unwrap()[0]
        .empty_dir
        .as_mut()
        .unwrap()
        .size_limit = Some(k8s_openapi::apimachinery::pkg::api::resource::Quantity(
        "2Mi".into(),
    ));
    c.create(over).await;
    c.create(disk_pod("quiet", name, 1)).await;
    c.until_running("quiet").await;
    let over = c.until_failed("over-limit", true).await;
    assert_eq!(
        message(&over),
        "Usage of EmptyDir volume \"data\" exceeds the limit \"2Mi\". "
    );
    let node = c.nodes.get(name).await.unwrap();
    assert_eq!(
        node_condition(&node, "DiskPressure")
            .map(|c| c.0)
            .as_deref(),
        Some("False")
    );

    // 40Mi of the 64Mi: below half available.
    c.create(disk_pod("writer", name, 40)).await;
    c.until_condition("DiskPressure", "True").await;
    let evicted = c.until_failed("writer", true).await;
    let text = message(&evicted);
    assert!(
        text.starts_with(
            "The node was low on resource: ephemeral-storage. Threshold quantity: 32Mi, available: "
        ),
        "{text}"
    );
    // Its emptyDir went with it: the pressure clears and the quiet pod was never touched.
    c.until_condition("DiskPressure", "False").await;
    let quiet = c.pods.get("quiet").await.unwrap();
    assert!(running(&quiet).is_ok(), "{:?}", quiet.status);
    drop(s);
    drop(root);
}
