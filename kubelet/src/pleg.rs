//! The pod lifecycle event generator: relists the runtime every second and turns changes of
//! container and sandbox states into per-pod events (CRI events are not implemented by
//! containerd 1.6). Owner: the core engineer.

pub mod cache;

pub use cache::Cache;

use crate::container::{ContainerState, PodRuntimeStatus, RuntimePod, SandboxState};
use crate::kuberuntime::RuntimeManager;
use futures::StreamExt;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Upstream's relist period.
pub const RELIST_PERIOD: Duration = Duration::from_secs(1);
/// A relist older than this makes the kubelet unhealthy.
pub const RELIST_THRESHOLD: Duration = Duration::from_secs(180);
/// Pods inspected at once by one relist: a burst of new pods changes them all in one relist,
/// and inspecting them one after another delayed the last ones' events by the sum.
const INSPECTORS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    ContainerStarted,
    ContainerDied,
    ContainerRemoved,
    ContainerChanged,
}

/// Something happened to one container (or sandbox) of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodLifecycleEvent {
    pub uid: String,
    pub kind: EventType,
    /// The container's or sandbox's runtime id.
    pub id: String,
}

/// What PLEG reads from the runtime (the runtime manager; a fake in tests).
#[async_trait::async_trait]
pub trait PodLister: Send + Sync {
    async fn get_pods(&self, all: bool) -> anyhow::Result<Vec<RuntimePod>>;
    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> anyhow::Result<PodRuntimeStatus>;
}

#[async_trait::async_trait]
impl PodLister for RuntimeManager {
    async fn get_pods(&self, all: bool) -> anyhow::Result<Vec<RuntimePod>> {
        RuntimeManager::get_pods(self, all).await
    }

    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> anyhow::Result<PodRuntimeStatus> {
        RuntimeManager::get_pod_status(self, uid, name, namespace).await
    }
}

/// Comparable state of one container or sandbox; absent means it no longer exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlegState {
    Running,
    Exited,
    Unknown,
}

fn states(pod: &RuntimePod) -> HashMap<String, PlegState> {
    let mut out = HashMap::new();
    for (id, state) in &pod.sandboxes {
        let s = match state {
            SandboxState::Ready => PlegState::Running,
            SandboxState::NotReady => PlegState::Exited,
        };
        out.insert(id.clone(), s);
    }
    for (id, _, state) in &pod.containers {
        let s = match state {
            ContainerState::Running => PlegState::Running,
            ContainerState::Exited => PlegState::Exited,
            ContainerState::Created | ContainerState::Unknown => PlegState::Unknown,
        };
        out.insert(id.id.clone(), s);
    }
    out
}

/// The events between two listings of one pod (either may be absent).
fn compute_events(
    uid: &str,
    old: Option<&RuntimePod>,
    new: Option<&RuntimePod>,
) -> Vec<PodLifecycleEvent> {
    let old = old.map(states).unwrap_or_default();
    let new = new.map(states).unwrap_or_default();
    let mut ids: Vec<&String> = old
        .keys()
        .chain(new.keys())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    ids.sort();
    let mut events = Vec::new();
    let mut push = |kind, id: &str| {
        events.push(PodLifecycleEvent {
            uid: uid.to_string(),
            kind,
            id: id.to_string(),
        })
    };
    for id in ids {
        let (o, n) = (old.get(id).copied(), new.get(id).copied());
        if o == n {
            continue;
        }
        match n {
            Some(PlegState::Running) => push(EventType::ContainerStarted, id),
            Some(PlegState::Exited) => push(EventType::ContainerDied, id),
            Some(PlegState::Unknown) => push(EventType::ContainerChanged, id),
            None => {
                if o == Some(PlegState::Running) {
                    push(EventType::ContainerDied, id);
                }
                push(EventType::ContainerRemoved, id);
            }
        }
    }
    events
}

#[derive(Default)]
struct State {
    old: HashMap<String, RuntimePod>,
    /// Pods whose inspection failed: inspected again on the next relist.
    reinspect: HashSet<String>,
}

/// The relisting event generator and its cache.
pub struct Pleg {
    runtime: Arc<dyn PodLister>,
    cache: Arc<Cache>,
    events: mpsc::Sender<PodLifecycleEvent>,
    state: tokio::sync::Mutex<State>,
    /// The last listing, readable while a relist is in progress (housekeeping reads it from
    /// the sync loop, which must not wait for a relist's inspections).
    listed: Mutex<Arc<Vec<RuntimePod>>>,
    last_relist: Mutex<Option<Instant>>,
    started: Instant,
}

impl Pleg {
    pub fn new(
        runtime: Arc<dyn PodLister>,
        cache: Arc<Cache>,
    ) -> (Arc<Self>, mpsc::Receiver<PodLifecycleEvent>) {
        let (tx, rx) = mpsc::channel(1000);
        let pleg = Arc::new(Self {
            runtime,
            cache,
            events: tx,
            state: tokio::sync::Mutex::default(),
            listed: Mutex::default(),
            last_relist: Mutex::new(None),
            started: Instant::now(),
        });
        (pleg, rx)
    }

    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// Relists every `period` until `shutdown`.
    pub async fn run(self: Arc<Self>, period: Duration, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.relist().await {
                tracing::warn!(error = %format!("{e:#}"), "PLEG relist failed");
            }
        }
    }

    /// Ok while relists keep happening (`/healthz`'s pleg check).
    pub fn healthy(&self) -> Result<(), String> {
        let last = self.last_relist.lock().unwrap_or(self.started);
        let elapsed = last.elapsed();
        if elapsed > RELIST_THRESHOLD {
            return Err(format!(
                "pleg was last seen active {elapsed:?} ago; threshold is {RELIST_THRESHOLD:?}"
            ));
        }
        Ok(())
    }

    /// The pods of the last listing.
    pub async fn pods(&self) -> Vec<RuntimePod> {
        self.listed.lock().as_ref().clone()
    }

    /// One relist: list, diff against the previous listing, inspect the pods that changed,
    /// then publish their events.
    pub async fn relist(&self) -> anyhow::Result<()> {
        let mut state = self.state.lock().await;
        let at = Instant::now();
        let pods = self.runtime.get_pods(true).await?;
        *self.last_relist.lock() = Some(at);
        *self.listed.lock() = Arc::new(pods.clone());
        let new: HashMap<String, RuntimePod> =
            pods.into_iter().map(|p| (p.uid.clone(), p)).collect();
        let mut uids: Vec<&String> = state
            .old
            .keys()
            .chain(new.keys())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        uids.sort();
        let mut all_events = Vec::new();
        let mut inspect = Vec::new();
        for uid in uids {
            let events = compute_events(uid, state.old.get(uid), new.get(uid));
            if events.is_empty() && !state.reinspect.contains(uid) {
                continue;
            }
            match new.get(uid) {
                Some(pod) => {
                    inspect.push((pod.uid.clone(), pod.name.clone(), pod.namespace.clone()))
                }
                // Gone: the cache answers with an empty status from the relist time on.
                None => self.cache.delete(uid),
            }
            all_events.extend(events);
        }
        let runtime = &self.runtime;
        let inspected: Vec<(String, anyhow::Result<PodRuntimeStatus>)> =
            futures::stream::iter(inspect)
                .map(|(uid, name, namespace)| async move {
                    let status = runtime.get_pod_status(&uid, &name, &namespace).await;
                    (uid, status)
                })
                .buffer_unordered(INSPECTORS)
                .collect()
                .await;
        let mut failed = HashSet::new();
        for (uid, status) in inspected {
            match status {
                Ok(status) => self.cache.set(&uid, status, at),
                Err(e) => {
                    tracing::debug!(uid, error = %format!("{e:#}"), "PLEG could not inspect the pod");
                    failed.insert(uid);
                }
            }
        }
        // A pod that could not be inspected keeps its old record and its events wait, as
        // upstream's: the next relist finds the same changes again and sends them once the
        // cache has the status they announce (a worker woken now would sync from a stale one
        // and, with no event to come, wait for its periodic resync).
        let mut new = new;
        for uid in &failed {
            match state.old.remove(uid) {
                Some(old) => new.insert(uid.clone(), old),
                None => new.remove(uid),
            };
        }
        all_events.retain(|e| !failed.contains(&e.uid));
        state.old = new;
        state.reinspect = failed;
        self.cache.update_time(at);
        drop(state);
        for event in all_events {
            // The sync loop drains these; a full channel drops, as upstream's does: the
            // periodic sync catches up.
            if self.events.try_send(event).is_err() {
                tracing::warn!("the PLEG event channel is full; dropping an event");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
