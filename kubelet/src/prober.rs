//! Liveness, readiness and startup probes (exec, httpGet, tcpSocket, grpc): one worker per
//! probe per container, results cached by container id. Owner: the pod-sources engineer.
//!
//! The core adds pods as they are synced ([`ProbeManager::add_pod`]), removes them when they
//! stop, fills `ready`/`started` of every status it generates ([`ProbeManager::update_pod_status`])
//! and resyncs a pod whenever [`ProbeManager::subscribe`] reports a change (a liveness failure
//! restarts the container through `SyncContext::liveness`).

mod grpc;
pub mod httpclient;
pub mod probes;
mod results;
mod worker;

pub use results::ProbeUpdate;
pub use worker::Streak;

use crate::container::{ContainerId, ProbeResult};
use crate::kuberuntime::{EventRecorder, RuntimeManager};
use crate::status::StatusManager;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodStatus, Probe};
use parking_lot::Mutex;
use results::Results;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use worker::{Handle, Worker};

/// Which probe of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

type WorkerKey = (String, String, ProbeKind);

/// State shared by the manager and its workers.
pub struct Inner {
    runtime: Option<Arc<RuntimeManager>>,
    status: Arc<StatusManager>,
    results: Results,
    workers: Mutex<HashMap<WorkerKey, Handle>>,
    next_worker: AtomicU64,
    started: Instant,
    /// Where `Unhealthy` events go; none until the kubelet installs its recorder.
    events: parking_lot::RwLock<Option<EventRecorder>>,
}

impl Inner {
    /// A worker that ended on its own leaves the map, unless a newer worker took its place.
    fn remove_worker(&self, uid: &str, container: &str, kind: ProbeKind, id: u64) {
        let mut workers = self.workers.lock();
        let key = (uid.to_string(), container.to_string(), kind);
        if workers.get(&key).is_some_and(|h| h.id == id) {
            workers.remove(&key);
        }
    }
}

/// Runs the probes of the pods it is given and keeps their latest results.
pub struct ProbeManager {
    inner: Arc<Inner>,
}

impl Default for ProbeManager {
    /// A manager without a runtime: exec probes cannot run (they give no verdict).
    fn default() -> Self {
        Self::build(None, Arc::new(StatusManager::default()))
    }
}

/// The probes a container declares, in upstream's order of worker creation.
fn probes_of(c: &Container) -> impl Iterator<Item = (ProbeKind, &Probe)> {
    [
        (ProbeKind::Startup, c.startup_probe.as_ref()),
        (ProbeKind::Readiness, c.readiness_probe.as_ref()),
        (ProbeKind::Liveness, c.liveness_probe.as_ref()),
    ]
    .into_iter()
    .filter_map(|(k, p)| p.map(|p| (k, p)))
}

fn is_restartable_init(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn uid_of(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

impl ProbeManager {
    pub fn new(runtime: Arc<RuntimeManager>, status: Arc<StatusManager>) -> Self {
        Self::build(Some(runtime), status)
    }

    fn build(runtime: Option<Arc<RuntimeManager>>, status: Arc<StatusManager>) -> Self {
        Self {
            inner: Arc::new(Inner {
                runtime,
                results: Results::new(status.clone()),
                status,
                workers: Mutex::default(),
                next_worker: AtomicU64::new(0),
                started: Instant::now(),
                events: parking_lot::RwLock::new(None),
            }),
        }
    }

    /// Installs the recorder of the probes' `Unhealthy` events (the kubelet's).
    pub fn set_event_recorder(&self, recorder: EventRecorder) {
        *self.inner.events.write() = Some(recorder);
    }

    /// Starts a worker for every probe of the pod's containers (and sidecars) that has none;
    /// existing workers get the newer copy of the pod. Needs a Tokio runtime.
    pub fn add_pod(&self, pod: &Pod) {
        let Some(spec) = pod.spec.as_ref() else {
            return;
        };
        let uid = uid_of(pod);
        let shared_pod = Arc::new(pod.clone());
        let containers = spec.containers.iter().chain(
            spec.init_containers
                .iter()
                .flatten()
                .filter(|c| is_restartable_init(c)),
        );
        let mut workers = self.inner.workers.lock();
        for c in containers {
            for (kind, probe) in probes_of(c) {
                let key = (uid.clone(), c.name.clone(), kind);
                if let Some(h) = workers.get(&key) {
                    *h.pod.lock() = shared_pod.clone();
                    continue;
                }
                let handle = Handle {
                    id: self.inner.next_worker.fetch_add(1, Ordering::Relaxed),
                    stop: CancellationToken::new(),
                    trigger: Arc::new(Notify::new()),
                    pod: Arc::new(Mutex::new(shared_pod.clone())),
                };
                let w = Worker::new(self.inner.clone(), kind, c.clone(), probe.clone(), &handle);
                workers.insert(key, handle);
                tokio::spawn(w.run());
            }
        }
    }

    /// Stops the pod's workers (their results go with them).
    pub fn remove_pod(&self, pod: &Pod) {
        let uid = uid_of(pod);
        self.stop_where(|(u, _, _)| *u == uid);
    }

    /// Stops the workers of every pod not in `desired` (pod uids).
    pub fn cleanup(&self, desired: &HashSet<String>) {
        self.stop_where(|(u, _, _)| !desired.contains(u));
    }

    fn stop_where(&self, pred: impl Fn(&WorkerKey) -> bool) {
        let mut workers = self.inner.workers.lock();
        workers.retain(|k, h| {
            if pred(k) {
                h.stop.cancel();
                false
            } else {
                true
            }
        });
    }

    /// Whether a worker runs for this probe.
    pub fn has_worker(&self, pod_uid: &str, container: &str, kind: ProbeKind) -> bool {
        self.inner
            .workers
            .lock()
            .contains_key(&(pod_uid.to_string(), container.to_string(), kind))
    }

    pub fn liveness(&self, id: &ContainerId) -> Option<ProbeResult> {
        self.inner.results.get(ProbeKind::Liveness, id)
    }

    pub fn readiness(&self, id: &ContainerId) -> Option<ProbeResult> {
        self.inner.results.get(ProbeKind::Readiness, id)
    }

    pub fn startup(&self, id: &ContainerId) -> Option<ProbeResult> {
        self.inner.results.get(ProbeKind::Startup, id)
    }

    /// Every change of a probe's verdict, as (pod uid, kind, result): resync that pod.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<ProbeUpdate> {
        self.inner.results.subscribe()
    }

    fn is_started(&self, pod_uid: &str, c: &ContainerStatus) -> bool {
        if c.state.as_ref().and_then(|s| s.running.as_ref()).is_none() {
            return false;
        }
        let id = c.container_id.as_deref().and_then(ContainerId::parse);
        if let Some(r) = id.and_then(|id| self.startup(&id)) {
            return r == ProbeResult::Success;
        }
        // A startup probe that has not run yet: not started.
        !self.has_worker(pod_uid, &c.name, ProbeKind::Startup)
    }

    fn is_ready(&self, pod_uid: &str, c: &ContainerStatus) -> bool {
        if c.state.as_ref().and_then(|s| s.running.as_ref()).is_none() {
            return false;
        }
        let id = c.container_id.as_deref().and_then(ContainerId::parse);
        if id.and_then(|id| self.readiness(&id)) == Some(ProbeResult::Success) {
            return true;
        }
        let key = (pod_uid.to_string(), c.name.clone(), ProbeKind::Readiness);
        match self.inner.workers.lock().get(&key) {
            // Not ready until its probe says so; probe now rather than at the next period.
            Some(h) => {
                h.trigger.notify_one();
                false
            }
            None => true, // no readiness probe: ready when running
        }
    }

    /// Sets `started` and `ready` of every container status from the probes, as upstream: a
    /// container is started once its startup probe passed (or it has none) and ready once started
    /// and its readiness probe passed (or it has none); a regular init container is ready when it
    /// exited 0.
    pub fn update_pod_status(&self, pod: &Pod, status: &mut PodStatus) {
        let uid = uid_of(pod);
        for c in status.container_statuses.iter_mut().flatten() {
            let started = self.is_started(&uid, c);
            c.started = Some(started);
            if started {
                c.ready = self.is_ready(&uid, c);
            }
        }
        let init_specs = pod.spec.as_ref().and_then(|s| s.init_containers.as_ref());
        for c in status.init_container_statuses.iter_mut().flatten() {
            let started = self.is_started(&uid, c);
            c.started = Some(started);
            let sidecar = init_specs
                .and_then(|specs| specs.iter().find(|s| s.name == c.name))
                .is_some_and(is_restartable_init);
            if !sidecar {
                let exited_ok = c
                    .state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .is_some_and(|t| t.exit_code == 0);
                if exited_ok {
                    c.ready = true;
                }
                continue;
            }
            if started {
                c.ready = self.is_ready(&uid, c);
            }
        }
    }
}

#[cfg(test)]
#[path = "prober/tests.rs"]
mod tests;
