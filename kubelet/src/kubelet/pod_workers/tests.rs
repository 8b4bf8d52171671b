use super::*;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

struct Recorder {
    calls: Mutex<Vec<String>>,
    /// Holds sync_pod until released, to pile updates up behind it.
    gate: tokio::sync::Semaphore,
    terminal: Mutex<bool>,
}

#[async_trait::async_trait]
impl PodSyncer for Recorder {
    async fn sync_pod(
        &self,
        kind: UpdateType,
        pod: &Arc<Pod>,
        _s: Arc<PodRuntimeStatus>,
    ) -> anyhow::Result<bool> {
        let _permit = self.gate.acquire().await?;
        let v = pod.metadata.resource_version.clone().unwrap_or_default();
        self.calls.lock().push(format!("sync {kind:?} {v}"));
        Ok(*self.terminal.lock())
    }

    async fn sync_terminating_pod(
        &self,
        _uid: &str,
        _pod: Option<&Arc<Pod>>,
        _r: Option<&RuntimePod>,
        grace: Option<i64>,
    ) -> anyhow::Result<()> {
        self.calls.lock().push(format!("terminating {grace:?}"));
        Ok(())
    }

    async fn sync_terminated_pod(&self, _uid: &str, _pod: Option<&Arc<Pod>>) -> anyhow::Result<()> {
        self.calls.lock().push("terminated".into());
        Ok(())
    }

    fn requeue(&self, _uid: &str, _after: Duration) {}
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            calls: Mutex::default(),
            gate: tokio::sync::Semaphore::new(0),
            terminal: Mutex::new(false),
        }
    }
}

fn pod(rv: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            uid: Some("u1".into()),
            name: Some("p".into()),
            namespace: Some("default".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            termination_grace_period_seconds: Some(30),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn update(kind: UpdateType, pod: Arc<Pod>) -> WorkUpdate {
    WorkUpdate {
        kind,
        pod: Some(pod),
        running: None,
        grace_override: None,
    }
}

async fn until(rec: &Recorder, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let calls = rec.calls.lock().clone();
        if calls.len() >= n || Instant::now() > deadline {
            return calls;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn setup() -> (Arc<Recorder>, Arc<PodWorkers>) {
    let rec = Arc::new(Recorder::default());
    let cache = Arc::new(Cache::default());
    cache.update_time(Instant::now() + Duration::from_secs(3600));
    let workers = PodWorkers::new(
        rec.clone(),
        cache,
        Duration::from_secs(60),
        Duration::from_secs(1),
    );
    (rec, workers)
}

#[tokio::test]
async fn updates_coalesce_behind_a_running_sync() {
    let (rec, workers) = setup();
    workers.update_pod(update(UpdateType::Create, pod("1")));
    tokio::time::sleep(Duration::from_millis(20)).await;
    workers.update_pod(update(UpdateType::Update, pod("2")));
    workers.update_pod(update(UpdateType::Update, pod("3")));
    rec.gate.add_permits(10);
    let calls = until(&rec, 2).await;
    assert_eq!(calls, ["sync Create 1", "sync Update 3"]);
}

#[tokio::test]
async fn deletion_terminates_once_with_the_deletion_grace() {
    let (rec, workers) = setup();
    rec.gate.add_permits(10);
    workers.update_pod(update(UpdateType::Create, pod("1")));
    until(&rec, 1).await;
    let mut deleted = (*pod("2")).clone();
    deleted.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    deleted.metadata.deletion_grace_period_seconds = Some(5);
    workers.update_pod(update(UpdateType::Update, Arc::new(deleted)));
    let calls = until(&rec, 3).await;
    assert_eq!(
        calls,
        ["sync Create 1", "terminating Some(5)", "terminated"]
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while workers.lifecycle("u1") != Some(Lifecycle::Terminated) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A finished pod is not synced again.
    workers.update_pod(update(UpdateType::Sync, pod("3")));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rec.calls.lock().len(), 3);
    assert!(workers.forget("u1"));
    assert_eq!(workers.lifecycle("u1"), None);
}

#[tokio::test]
async fn a_terminal_sync_moves_on_to_termination() {
    let (rec, workers) = setup();
    rec.gate.add_permits(10);
    *rec.terminal.lock() = true;
    workers.update_pod(update(UpdateType::Create, pod("1")));
    let calls = until(&rec, 3).await;
    assert_eq!(
        calls,
        ["sync Create 1", "terminating Some(30)", "terminated"]
    );
}

#[test]
fn grace_periods() {
    let p = pod("1");
    assert_eq!(grace_period(Some(&p), None), Some(30));
    assert_eq!(grace_period(Some(&p), Some(2)), Some(2));
    assert_eq!(grace_period(None, None), None);
}
