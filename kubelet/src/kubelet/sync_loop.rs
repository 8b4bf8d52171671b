//! The sync loop: pod updates from the sources, PLEG events, probe verdicts, the 1 s tick for
//! pods whose next sync is due and housekeeping every 2 s, as upstream's `syncLoopIteration`.

use super::Kubelet;
use super::admission;
use super::pod_workers::UpdateType;
use crate::config::{PodOperation, PodUpdate, SourcesReady};
use crate::pleg::{EventType, PodLifecycleEvent};
use crate::pod::is_mirror_pod;
use crate::status::phase;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const SYNC_TICK: Duration = Duration::from_secs(1);
const HOUSEKEEPING: Duration = Duration::from_secs(2);

impl Kubelet {
    /// Runs PLEG, the status writer and the sync loop until `shutdown`.
    pub async fn run(
        self: Arc<Self>,
        mut updates: mpsc::Receiver<PodUpdate>,
        sources_ready: SourcesReady,
        shutdown: CancellationToken,
    ) {
        let _ = self.sources_ready.set(sources_ready);
        tokio::spawn(
            self.pleg
                .clone()
                .run(crate::pleg::RELIST_PERIOD, shutdown.clone()),
        );
        tokio::spawn(
            self.status
                .clone()
                .run_writer(self.client.clone(), shutdown.clone()),
        );
        let Some(mut pleg_events) = self.pleg_events.lock().take() else {
            tracing::error!("the kubelet's sync loop runs once");
            return;
        };
        let mut probe_results = self.probes.subscribe();
        let mut status_probes = self
            .status
            .take_probe_updates()
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        let mut sync_tick = tokio::time::interval(SYNC_TICK);
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut cleaning: Option<tokio::task::JoinHandle<()>> = None;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                Some(update) = updates.recv() => self.handle_update(update),
                Some(event) = pleg_events.recv() => self.handle_pleg_event(event),
                Some((uid, _, _)) = probe_results.recv() => self.dispatch_uid(&uid, UpdateType::Sync),
                Some(uid) = status_probes.recv() => self.dispatch_uid(&uid, UpdateType::Sync),
                _ = sync_tick.tick() => {
                    for uid in self.take_due() {
                        self.dispatch_uid(&uid, UpdateType::Sync);
                    }
                }
                _ = housekeeping.tick() => {
                    let ready = self.sources_ready.get().is_some_and(|r| r.all_ready());
                    // Off the loop, one at a time: its runtime, cgroup and API calls must not
                    // hold back new pods and PLEG events.
                    if ready && (cleaning.as_ref().is_none_or(|h| h.is_finished())) {
                        let this = self.clone();
                        cleaning = Some(tokio::spawn(async move { this.housekeeping().await }));
                    }
                }
            }
        }
    }

    fn handle_pleg_event(&self, event: PodLifecycleEvent) {
        tracing::debug!(uid = %event.uid, kind = ?event.kind, "PLEG event");
        if event.kind == EventType::ContainerRemoved {
            return;
        }
        self.dispatch_uid(&event.uid, UpdateType::Sync);
    }

    fn handle_update(&self, update: PodUpdate) {
        let mut pods = update.pods;
        pods.sort_by(|a, b| {
            let t = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        });
        for pod in pods {
            tracing::debug!(uid = ?pod.metadata.uid, op = ?update.op, "pod update received");
            if is_mirror_pod(&pod) {
                self.handle_mirror(update.op, pod);
                continue;
            }
            match update.op {
                PodOperation::Add => {
                    self.pods.add_pod(pod.clone());
                    self.admit_and_dispatch(pod);
                }
                PodOperation::Update | PodOperation::Delete => {
                    self.status.reconcile(&pod);
                    self.pods.update_pod(pod.clone());
                    self.dispatch(Arc::new(pod), UpdateType::Update);
                }
                PodOperation::Remove => {
                    self.pods.remove_pod(&pod);
                    self.dispatch(Arc::new(pod), UpdateType::Kill);
                }
                PodOperation::Reconcile => {
                    self.status.reconcile(&pod);
                    self.pods.update_pod(pod);
                }
            }
        }
    }

    /// Mirror pods are never run: their changes resync the static pod they stand for.
    fn handle_mirror(&self, op: PodOperation, pod: Pod) {
        match op {
            PodOperation::Remove => self.pods.remove_pod(&pod),
            PodOperation::Add => self.pods.add_pod(pod.clone()),
            _ => self.pods.update_pod(pod.clone()),
        }
        if let Some(static_pod) = self.pods.get_pod_by_mirror_pod(&pod) {
            self.dispatch(static_pod, UpdateType::Sync);
        }
    }

    /// Admits a pod seen for the first time, or rejects it with a Failed status.
    fn admit_and_dispatch(&self, pod: Pod) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let known = self.workers().lifecycle(&uid).is_some();
        let terminal = phase::is_terminal(pod.status.as_ref().and_then(|s| s.phase.as_deref()));
        if !known
            && !terminal
            && pod.metadata.deletion_timestamp.is_none()
            && let Some(node) = self.node.node()
        {
            let others: Vec<Arc<Pod>> = self
                .active_pods()
                .into_iter()
                .filter(|p| p.metadata.uid.as_deref() != Some(uid.as_str()))
                .collect();
            if let Err(rejection) = admission::admit(&pod, &node, &others) {
                tracing::info!(pod = %format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or_default(), pod.metadata.name.as_deref().unwrap_or_default()), reason = %rejection.reason, "pod rejected at admission");
                self.rejected.lock().insert(uid);
                self.runtime
                    .pod_event(&pod, true, &rejection.reason, rejection.message.clone());
                let mut status = self
                    .status
                    .get_pod_status(pod.metadata.uid.as_deref().unwrap_or_default())
                    .or_else(|| pod.status.clone())
                    .unwrap_or_default();
                status = PodStatus {
                    phase: Some(phase::FAILED.into()),
                    reason: Some(rejection.reason),
                    message: Some(format!("Pod was rejected: {}", rejection.message)),
                    ..status
                };
                self.status.set_pod_status(&pod, status);
                return;
            }
        }
        self.dispatch(Arc::new(pod), UpdateType::Create);
    }
}
