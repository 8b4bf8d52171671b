use super::*;
use crate::container::ContainerId;

#[derive(Default)]
struct Fake {
    pods: Mutex<Vec<RuntimePod>>,
    /// Inspections that fail before they succeed.
    failures: Mutex<usize>,
}

#[async_trait::async_trait]
impl PodLister for Fake {
    async fn get_pods(&self, _all: bool) -> anyhow::Result<Vec<RuntimePod>> {
        Ok(self.pods.lock().clone())
    }

    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        ns: &str,
    ) -> anyhow::Result<PodRuntimeStatus> {
        let mut failures = self.failures.lock();
        if *failures > 0 {
            *failures -= 1;
            anyhow::bail!("the runtime timed out");
        }
        Ok(PodRuntimeStatus {
            uid: uid.into(),
            name: name.into(),
            namespace: ns.into(),
            ..Default::default()
        })
    }
}

fn pod(sandbox: Option<SandboxState>, containers: &[(&str, ContainerState)]) -> RuntimePod {
    RuntimePod {
        uid: "u1".into(),
        name: "p".into(),
        namespace: "ns".into(),
        sandboxes: sandbox.map(|s| ("sb".to_string(), s)).into_iter().collect(),
        containers: containers
            .iter()
            .map(|(id, s)| {
                let id = ContainerId {
                    runtime: "containerd".into(),
                    id: id.to_string(),
                };
                (id, "c".to_string(), *s)
            })
            .collect(),
    }
}

fn ev(kind: EventType, id: &str) -> PodLifecycleEvent {
    PodLifecycleEvent {
        uid: "u1".into(),
        kind,
        id: id.into(),
    }
}

#[test]
fn events_between_listings() {
    use ContainerState::*;
    use EventType::*;
    let ready = Some(SandboxState::Ready);
    type Case = (
        &'static str,
        Option<RuntimePod>,
        Option<RuntimePod>,
        Vec<PodLifecycleEvent>,
    );
    let cases: Vec<Case> = vec![
        (
            "unchanged",
            Some(pod(ready, &[("a", Running)])),
            Some(pod(ready, &[("a", Running)])),
            vec![],
        ),
        (
            "new pod",
            None,
            Some(pod(ready, &[("a", Running)])),
            vec![ev(ContainerStarted, "a"), ev(ContainerStarted, "sb")],
        ),
        (
            "died",
            Some(pod(ready, &[("a", Running)])),
            Some(pod(ready, &[("a", Exited)])),
            vec![ev(ContainerDied, "a")],
        ),
        (
            "created",
            Some(pod(ready, &[])),
            Some(pod(ready, &[("a", Created)])),
            vec![ev(ContainerChanged, "a")],
        ),
        (
            "removed while running",
            Some(pod(ready, &[("a", Running)])),
            Some(pod(ready, &[])),
            vec![ev(ContainerDied, "a"), ev(ContainerRemoved, "a")],
        ),
        (
            "removed after exit",
            Some(pod(ready, &[("a", Exited)])),
            Some(pod(ready, &[])),
            vec![ev(ContainerRemoved, "a")],
        ),
        (
            "sandbox stopped",
            Some(pod(ready, &[])),
            Some(pod(Some(SandboxState::NotReady), &[])),
            vec![ev(ContainerDied, "sb")],
        ),
        (
            "pod gone",
            Some(pod(Some(SandboxState::NotReady), &[])),
            None,
            vec![ev(ContainerRemoved, "sb")],
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(
            compute_events("u1", old.as_ref(), new.as_ref()),
            want,
            "{name}"
        );
    }
}

#[tokio::test]
async fn relist_publishes_events_and_fills_the_cache() {
    let fake = Arc::new(Fake::default());
    let cache = Arc::new(Cache::default());
    let (pleg, mut rx) = Pleg::new(fake.clone(), cache.clone());
    *fake.pods.lock() = vec![pod(
        Some(SandboxState::Ready),
        &[("a", ContainerState::Running)],
    )];
    let before = Instant::now();
    pleg.relist().await.expect("relists");
    let first = rx.try_recv().expect("an event");
    assert_eq!(first.kind, EventType::ContainerStarted);
    let (status, at) = cache.get("u1").expect("inspected");
    assert_eq!(status.name, "p");
    assert!(at >= before);
    // No change: no event, but the cache's global time moves on.
    pleg.relist().await.expect("relists");
    while rx.try_recv().is_ok() {}
    pleg.relist().await.expect("relists");
    assert!(rx.try_recv().is_err());
    let status = cache.get_newer_than("u1", Some(at)).await;
    assert_eq!(status.name, "p");
    assert!(pleg.healthy().is_ok());
    // The pod disappears: removal events and an empty status.
    fake.pods.lock().clear();
    pleg.relist().await.expect("relists");
    let kinds: Vec<EventType> = std::iter::from_fn(|| rx.try_recv().ok())
        .map(|e| e.kind)
        .collect();
    assert!(kinds.contains(&EventType::ContainerRemoved), "{kinds:?}");
    assert!(cache.get("u1").is_none());
}

#[tokio::test]
async fn events_wait_until_the_pod_could_be_inspected() {
    let fake = Arc::new(Fake::default());
    let cache = Arc::new(Cache::default());
    let (pleg, mut rx) = Pleg::new(fake.clone(), cache.clone());
    *fake.pods.lock() = vec![pod(
        Some(SandboxState::Ready),
        &[("a", ContainerState::Running)],
    )];
    *fake.failures.lock() = 2;
    for _ in 0..2 {
        pleg.relist().await.expect("relists");
        assert!(rx.try_recv().is_err(), "an event before the cache knew");
        assert!(cache.get("u1").is_none());
    }
    pleg.relist().await.expect("relists");
    let sent: Vec<PodLifecycleEvent> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert!(
        sent.contains(&ev(EventType::ContainerStarted, "a")),
        "the event, once inspected: {sent:?}"
    );
    assert!(cache.get("u1").is_some());
    pleg.relist().await.expect("relists");
    assert!(rx.try_recv().is_err(), "sent twice");
}
