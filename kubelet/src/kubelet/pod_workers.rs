//! Pod workers: one task per pod uid. Updates to a pod coalesce (the latest wins) and the
//! pod's syncs run one at a time, through the lifecycle sync -> terminating -> terminated, as
//! upstream's `pod_workers.go`.

use crate::container::{PodRuntimeStatus, RuntimePod};
use crate::pleg::Cache;
use crate::status::phase;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Why a worker is asked to sync (upstream's `SyncPodType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateType {
    Create,
    Update,
    Sync,
    /// Stop the pod: removed from its source, orphaned, or rejected.
    Kill,
}

/// One request to a worker.
#[derive(Debug, Clone)]
pub struct WorkUpdate {
    pub kind: UpdateType,
    /// The desired pod; None for runtime pods the kubelet has no spec for (orphans).
    pub pod: Option<Arc<Pod>>,
    /// What the runtime runs for an orphan.
    pub running: Option<RuntimePod>,
    /// A grace period that overrides the pod's (`Kill` only).
    pub grace_override: Option<i64>,
}

/// What a worker calls; the kubelet implements it.
#[async_trait::async_trait]
pub trait PodSyncer: Send + Sync + 'static {
    /// Brings the pod to its spec. Ok(true): the pod is terminal, terminate it.
    async fn sync_pod(
        &self,
        kind: UpdateType,
        pod: &Arc<Pod>,
        status: Arc<PodRuntimeStatus>,
    ) -> anyhow::Result<bool>;
    /// Stops every container with the grace period (the pod's unless `grace` overrides).
    async fn sync_terminating_pod(
        &self,
        uid: &str,
        pod: Option<&Arc<Pod>>,
        running: Option<&RuntimePod>,
        grace: Option<i64>,
    ) -> anyhow::Result<()>;
    /// Releases what the stopped pod held: volumes, cgroup, final status.
    async fn sync_terminated_pod(&self, uid: &str, pod: Option<&Arc<Pod>>) -> anyhow::Result<()>;
    /// Asks for another sync of `uid` after `after` (the sync loop's work queue).
    fn requeue(&self, uid: &str, after: Duration);
}

/// Where a pod is in its life, from the workers' point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    Syncing,
    Terminating,
    Terminated,
}

struct PodState {
    pod: Option<Arc<Pod>>,
    running: Option<RuntimePod>,
    pending: Option<UpdateType>,
    lifecycle: Lifecycle,
    grace: Option<i64>,
    wake: Arc<Notify>,
}

/// The workers, by pod uid.
pub struct PodWorkers {
    syncer: Arc<dyn PodSyncer>,
    cache: Arc<Cache>,
    states: Mutex<HashMap<String, PodState>>,
    /// How long after a good sync the pod is synced again (`syncFrequency`), and after a bad one.
    resync: Duration,
    backoff: Duration,
}

/// A pod whose apiserver object reached Succeeded or Failed is never run again.
fn is_terminal(pod: &Pod) -> bool {
    phase::is_terminal(pod.status.as_ref().and_then(|s| s.phase.as_deref()))
}

/// The grace period to stop `pod` with: the deletion's, else the spec's (30 s by default).
pub fn grace_period(pod: Option<&Pod>, grace_override: Option<i64>) -> Option<i64> {
    grace_override.or_else(|| {
        let pod = pod?;
        pod.metadata.deletion_grace_period_seconds.or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
    })
}

impl PodWorkers {
    pub fn new(
        syncer: Arc<dyn PodSyncer>,
        cache: Arc<Cache>,
        resync: Duration,
        backoff: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            syncer,
            cache,
            states: Mutex::default(),
            resync,
            backoff,
        })
    }

    /// Hands an update to the pod's worker, starting it on first sight.
    pub fn update_pod(self: &Arc<Self>, update: WorkUpdate) {
        let uid = match (&update.pod, &update.running) {
            (Some(p), _) => p.metadata.uid.clone().unwrap_or_default(),
            (None, Some(r)) => r.uid.clone(),
            (None, None) => return,
        };
        if uid.is_empty() {
            return;
        }
        let mut states = self.states.lock();
        let new = !states.contains_key(&uid);
        let state = states.entry(uid.clone()).or_insert_with(|| PodState {
            pod: None,
            running: None,
            pending: None,
            lifecycle: Lifecycle::Syncing,
            grace: None,
            wake: Arc::new(Notify::new()),
        });
        if state.lifecycle == Lifecycle::Terminated {
            // A finished pod is never started again (uids are not reused).
            if update.pod.is_some() {
                state.pod = update.pod;
            }
            return;
        }
        if update.pod.is_some() {
            state.pod = update.pod.clone();
        }
        if update.running.is_some() {
            state.running = update.running.clone();
        }
        let pod = state.pod.clone();
        let deleting = pod
            .as_ref()
            .is_some_and(|p| p.metadata.deletion_timestamp.is_some());
        let terminal = new && pod.as_deref().is_some_and(is_terminal);
        if update.kind == UpdateType::Kill || deleting || terminal || pod.is_none() {
            let grace = grace_period(pod.as_deref(), update.grace_override);
            state.grace = match (state.grace, grace) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            state.lifecycle = Lifecycle::Terminating;
        }
        // Create stays Create until the worker has seen it.
        state.pending = match (state.pending, update.kind) {
            (Some(UpdateType::Create), _) => Some(UpdateType::Create),
            (_, kind) => Some(kind),
        };
        let wake = state.wake.clone();
        drop(states);
        if new {
            let workers = self.clone();
            let wake = wake.clone();
            tokio::spawn(async move { workers.work(uid, wake).await });
        }
        wake.notify_one();
    }

    /// Where the pod is, None when no worker knows it.
    pub fn lifecycle(&self, uid: &str) -> Option<Lifecycle> {
        self.states.lock().get(uid).map(|s| s.lifecycle)
    }

    /// Uids with a worker (or a finished one's record).
    pub fn known(&self) -> Vec<(String, Lifecycle)> {
        self.states
            .lock()
            .iter()
            .map(|(u, s)| (u.clone(), s.lifecycle))
            .collect()
    }

    /// Forgets a terminated pod that no source knows any more.
    pub fn forget(&self, uid: &str) -> bool {
        let mut states = self.states.lock();
        if states
            .get(uid)
            .is_some_and(|s| s.lifecycle == Lifecycle::Terminated)
        {
            states.remove(uid);
            return true;
        }
        false
    }

    async fn work(self: Arc<Self>, uid: String, wake: Arc<Notify>) {
        let mut last_sync: Option<Instant> = None;
        loop {
            wake.notified().await;
            let Some((kind, pod, running, lifecycle, grace)) = ({
                let mut states = self.states.lock();
                states.get_mut(&uid).and_then(|s| {
                    let kind = s.pending.take()?;
                    Some((kind, s.pod.clone(), s.running.clone(), s.lifecycle, s.grace))
                })
            }) else {
                continue;
            };
            let started = Instant::now();
            match lifecycle {
                Lifecycle::Syncing => {
                    let Some(pod) = pod else { continue };
                    let status = self.cache.get_newer_than(&uid, last_sync).await;
                    last_sync = Some(started);
                    match self.syncer.sync_pod(kind, &pod, status).await {
                        Ok(true) => self.set_lifecycle(&uid, Lifecycle::Terminating, &wake),
                        Ok(false) => self.syncer.requeue(&uid, self.resync),
                        Err(e) => {
                            tracing::info!(pod = %pod_name(&pod), error = %format!("{e:#}"), "error syncing pod, skipping");
                            self.syncer.requeue(&uid, self.backoff);
                        }
                    }
                }
                Lifecycle::Terminating => {
                    let result = self
                        .syncer
                        .sync_terminating_pod(&uid, pod.as_ref(), running.as_ref(), grace)
                        .await;
                    match result {
                        Ok(()) => {
                            let result = self.syncer.sync_terminated_pod(&uid, pod.as_ref()).await;
                            match result {
                                Ok(()) => {
                                    if let Some(s) = self.states.lock().get_mut(&uid) {
                                        s.lifecycle = Lifecycle::Terminated;
                                    }
                                    return;
                                }
                                Err(e) => {
                                    tracing::info!(uid, error = %format!("{e:#}"), "cleaning up a terminated pod failed; retrying");
                                    self.retry(&uid, &wake);
                                }
                            }
                        }
                        Err(e) => {
                            tracing::info!(uid, error = %format!("{e:#}"), "stopping the pod failed; retrying");
                            self.retry(&uid, &wake);
                        }
                    }
                }
                Lifecycle::Terminated => return,
            }
        }
    }

    fn set_lifecycle(&self, uid: &str, lifecycle: Lifecycle, wake: &Notify) {
        if let Some(s) = self.states.lock().get_mut(uid) {
            if s.lifecycle == Lifecycle::Syncing {
                s.lifecycle = lifecycle;
                if s.grace.is_none() {
                    s.grace = grace_period(s.pod.as_deref(), None);
                }
            }
            s.pending.get_or_insert(UpdateType::Sync);
        }
        wake.notify_one();
    }

    /// Runs the pending step again after a second.
    fn retry(self: &Arc<Self>, uid: &str, wake: &Arc<Notify>) {
        if let Some(s) = self.states.lock().get_mut(uid) {
            s.pending.get_or_insert(UpdateType::Sync);
        }
        let wake = wake.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            wake.notify_one();
        });
    }
}

fn pod_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests;
