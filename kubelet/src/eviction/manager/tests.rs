use super::*;
use crate::app::config::parse;
use crate::eviction::observe::Sources;
use crate::eviction::signals::Condition;
use parking_lot::Mutex;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
struct FakeHost {
    pods: Mutex<Vec<Arc<Pod>>>,
    evicted: Mutex<Vec<(String, String)>>,
    graces: Mutex<Vec<i64>>,
}

#[async_trait::async_trait]
impl EvictionHost for FakeHost {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        let evicted = self.evicted.lock();
        self.pods
            .lock()
            .iter()
            .filter(|p| {
                !evicted
                    .iter()
                    .any(|(n, _)| Some(n) == p.metadata.name.as_ref())
            })
            .cloned()
            .collect()
    }

    fn containers(&self, _: &str) -> Vec<(String, String)> {
        vec![("main".into(), "cid".into())]
    }

    async fn evict(
        &self,
        pod: &Arc<Pod>,
        message: &str,
        _: bool,
        grace: i64,
    ) -> anyhow::Result<()> {
        self.graces.lock().push(grace);
        self.evicted.lock().push((
            pod.metadata.name.clone().unwrap_or_default(),
            message.to_string(),
        ));
        Ok(())
    }

    fn pod_cleaned_up(&self, _: &str) -> bool {
        true
    }

    async fn image_fs(&self) -> Option<PathBuf> {
        None
    }
}

#[derive(Default)]
struct Sink(Mutex<Vec<BTreeSet<Condition>>>);

impl PressureSink for Sink {
    fn set_pressure(&self, conditions: &BTreeSet<Condition>) {
        self.0.lock().push(conditions.clone());
    }
}

#[derive(Default)]
struct Reclaimer(AtomicU64);

#[async_trait::async_trait]
impl ImageReclaimer for Reclaimer {
    async fn delete_unused_images(&self) -> anyhow::Result<u64> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(0)
    }
}

fn write_cgroup(mount: &Path, cgroup: &str, usage: u64) {
    let d = mount.join("memory").join(cgroup.trim_start_matches('/'));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("memory.usage_in_bytes"), usage.to_string()).unwrap();
    std::fs::write(d.join("memory.stat"), "total_inactive_file 0\n").unwrap();
}

fn pod(name: &str, priority: i32, memory_request: Option<&str>) -> Arc<Pod> {
    let resources = memory_request.map_or(json!({}), |r| json!({"requests": {"memory": r}}));
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"priority": priority, "containers": [{"name": "main", "resources": resources}]},
        }))
        .unwrap(),
    )
}

struct Setup {
    _dir: tempfile::TempDir,
    host: Arc<FakeHost>,
    sink: Arc<Sink>,
    reclaimer: Arc<Reclaimer>,
    manager: EvictionManager,
}

fn setup(thresholds: &str, root_usage: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("cgroup");
    write_cgroup(&mount, "/", root_usage);
    write_cgroup(&mount, "/kubepods", 0);
    let host = Arc::new(FakeHost::default());
    for (p, cg, usage) in [
        (
            pod("burstable", 0, Some("1000")),
            "/kubepods/burstable/podburstable",
            800,
        ),
        (
            pod("besteffort", 0, None),
            "/kubepods/besteffort/podbesteffort",
            500,
        ),
        (
            pod("critical", 2_000_001_000, None),
            "/kubepods/besteffort/podcritical",
            9000,
        ),
    ] {
        write_cgroup(&mount, cg, usage);
        write_cgroup(&mount, &format!("{cg}/cid"), usage);
        host.pods.lock().push(p);
    }
    let parsed = parse::eviction_thresholds(&parse::eviction_flag(thresholds).unwrap()).unwrap();
    let options = EvictionOptions {
        thresholds: Threshold::from_config(&parsed),
        max_pod_grace_period: 20,
        transition_period: Duration::from_secs(300),
        monitoring_period: Duration::from_secs(10),
        cleanup_timeout: Duration::from_secs(1),
        sources: Sources {
            cgroup_mount: mount,
            kubepods: "/kubepods".into(),
            root_dir: dir.path().join("root"),
            pod_logs_dir: dir.path().join("logs"),
            memory_capacity: 10_000,
            pods_memory: 10_000,
        },
    };
    let sink = Arc::new(Sink::default());
    let reclaimer = Arc::new(Reclaimer::default());
    let manager =
        EvictionManager::new(options, host.clone(), sink.clone(), Some(reclaimer.clone()));
    Setup {
        _dir: dir,
        host,
        sink,
        reclaimer,
        manager,
    }
}

#[tokio::test]
async fn memory_pressure_evicts_in_rank_order_and_spares_critical_pods() {
    // 9_500 of 10_000 in use: 500 available, below 1000.
    let mut s = setup("memory.available<1000", 9_500);
    assert_eq!(
        s.manager.synchronize().await.first().map(String::as_str),
        Some("besteffort")
    );
    assert_eq!(
        s.sink.0.lock().last().cloned(),
        Some([Condition::MemoryPressure].into())
    );
    let message = s.host.evicted.lock()[0].1.clone();
    assert_eq!(
        message,
        "The node was low on resource: memory. Threshold quantity: 1k, available: 500. \
         Container main was using 500, request is 0, has larger consumption of memory. "
    );
    assert_eq!(
        s.manager.synchronize().await.first().map(String::as_str),
        Some("burstable")
    );
    // Only the critical pod is left: nothing is evicted, the pressure stays.
    assert!(s.manager.synchronize().await.is_empty());
    assert_eq!(s.host.evicted.lock().len(), 2);
    assert_eq!(
        s.reclaimer.0.load(Ordering::SeqCst),
        0,
        "no image GC for memory"
    );
}

#[tokio::test]
async fn no_pressure_no_eviction() {
    let mut s = setup("memory.available<1000,pid.available<1", 1_000);
    assert!(s.manager.synchronize().await.is_empty());
    assert_eq!(s.sink.0.lock().last().cloned(), Some(BTreeSet::new()));
    assert!(s.host.evicted.lock().is_empty());
}

#[tokio::test]
async fn disk_pressure_reclaims_images_first() {
    // No filesystem has 100% available: always crossed.
    let mut s = setup("nodefs.available<99.99%", 0);
    let evicted = s.manager.synchronize().await;
    assert_eq!(s.reclaimer.0.load(Ordering::SeqCst), 1);
    assert_eq!(
        s.sink.0.lock().last().cloned(),
        Some([Condition::DiskPressure].into())
    );
    assert!(
        evicted.len() == 1 && evicted[0] != "critical",
        "{evicted:?}"
    );
    let message = s.host.evicted.lock()[0].1.clone();
    assert!(
        message
            .starts_with("The node was low on resource: ephemeral-storage. Threshold quantity: "),
        "{message}"
    );
}

#[tokio::test]
async fn local_storage_limits_evict_without_node_pressure() {
    let mut s = setup("memory.available<1", 1_000);
    let root = s.manager.options.sources.root_dir.clone();
    let sized: Arc<Pod> = Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "sized", "namespace": "ns", "uid": "sized"},
            "spec": {
                "containers": [{"name": "main"}],
                "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "64Ki"}}],
            },
        }))
        .unwrap(),
    );
    s.host.pods.lock().push(sized);
    let data = root.join("pods/sized/volumes/kubernetes.io~empty-dir/data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("small"), [0u8; 100]).unwrap();
    assert!(s.manager.synchronize().await.is_empty(), "within its limit");
    std::fs::write(data.join("big"), vec![1u8; 128 * 1024]).unwrap();
    assert_eq!(s.manager.synchronize().await, ["sized"]);
    assert_eq!(
        s.host.evicted.lock()[0].1,
        "Usage of EmptyDir volume \"data\" exceeds the limit \"64Ki\". "
    );
    assert_eq!(s.sink.0.lock().last().cloned(), Some(BTreeSet::new()));
}

#[tokio::test]
async fn soft_thresholds_wait_for_their_grace_period_and_minimum_reclaim_holds() {
    let mut s = setup("memory.available<1000", 9_500);
    // Soft: the condition rises at once, eviction waits for the grace period.
    for t in &mut s.manager.options.thresholds {
        t.grace_period = Some(Duration::from_secs(3600));
    }
    assert!(s.manager.synchronize().await.is_empty());
    assert_eq!(
        s.sink.0.lock().last().cloned(),
        Some([Condition::MemoryPressure].into())
    );
    for t in &mut s.manager.options.thresholds {
        t.grace_period = Some(Duration::ZERO);
        t.min_reclaim = Some(crate::app::config::ThresholdValue::Quantity(
            api_types::resource::Quantity::from_int(1000),
        ));
    }
    assert_eq!(s.manager.synchronize().await, ["besteffort"]);
    // The smaller of evictionMaxPodGracePeriod (20) and the pod's own 30 s.
    assert_eq!(s.host.graces.lock().as_slice(), [20]);
    // 1_500 available is above the threshold but below threshold + minimum reclaim: the
    // threshold acted on stays met and the next pod goes.
    write_cgroup(&s.manager.options.sources.cgroup_mount, "/", 8_500);
    assert_eq!(s.manager.synchronize().await, ["burstable"]);
    // 2_500 available: resolved.
    write_cgroup(&s.manager.options.sources.cgroup_mount, "/", 7_500);
    assert!(s.manager.synchronize().await.is_empty());
}
