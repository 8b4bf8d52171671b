//! The control loop: observe, raise conditions, reclaim node-level resources, evict one pod,
//! wait for it to be cleaned up (upstream's `synchronize` and `waitForPodsCleanup`).

use super::message::eviction_message;
use super::rank::{self, PodUsage};
use super::signals::{
    ConditionTracker, FirstObserved, Observations, Resource, Signal, Threshold, conditions_of,
    merge, thresholds_met,
};
use super::{EvictionHost, EvictionOptions, ImageReclaimer, PressureSink};
use super::{local_storage, observe};
use client_go_rs::events::{EventRecorder, EventType};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const CLEANUP_POLL: Duration = Duration::from_secs(1);

pub struct EvictionManager {
    options: EvictionOptions,
    host: Arc<dyn EvictionHost>,
    pressure: Arc<dyn PressureSink>,
    reclaimer: Option<Arc<dyn ImageReclaimer>>,
    tracker: ConditionTracker,
    first_observed: FirstObserved,
    /// The thresholds acted on last time: met until their minimum reclaim is available.
    last_met: Vec<Threshold>,
    recorder: Option<EventRecorder>,
    node_ref: ObjectReference,
}

/// The pod's reference in events.
fn pod_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

/// Whether two paths are on the same filesystem (the image filesystem is the nodefs).
fn same_filesystem(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dev = |p: &Path| {
        p.ancestors()
            .find_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.dev())
    };
    dev(a).is_some() && dev(a) == dev(b)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

impl EvictionManager {
    pub fn new(
        options: EvictionOptions,
        host: Arc<dyn EvictionHost>,
        pressure: Arc<dyn PressureSink>,
        reclaimer: Option<Arc<dyn ImageReclaimer>>,
    ) -> Self {
        Self {
            options,
            host,
            pressure,
            reclaimer,
            tracker: ConditionTracker::default(),
            first_observed: FirstObserved::default(),
            last_met: Vec::new(),
            recorder: None,
            node_ref: ObjectReference::default(),
        }
    }

    /// Records `EvictionThresholdMet` on the node (upstream's reference: its name as uid) and
    /// `Evicted` on each evicted pod.
    pub fn with_recorder(mut self, recorder: EventRecorder, node_name: &str) -> Self {
        self.recorder = Some(recorder);
        self.node_ref = ObjectReference {
            kind: Some("Node".into()),
            name: Some(node_name.to_string()),
            uid: Some(node_name.to_string()),
            ..Default::default()
        };
        self
    }

    /// Runs the loop until `shutdown`.
    pub fn start(self, shutdown: CancellationToken) {
        tokio::spawn(self.run(shutdown));
    }

    async fn run(mut self, shutdown: CancellationToken) {
        tracing::info!(
            thresholds = ?self.options.thresholds.iter().map(|t| t.signal.as_str()).collect::<Vec<_>>(),
            "eviction manager started"
        );
        loop {
            let evicted = self.synchronize().await;
            let wait = async {
                if evicted.is_empty() {
                    tokio::time::sleep(self.options.monitoring_period).await;
                } else {
                    self.wait_for_cleanup(&evicted).await;
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = wait => {}
            }
        }
    }

    async fn wait_for_cleanup(&self, uids: &[String]) {
        let deadline = Instant::now() + self.options.cleanup_timeout;
        while Instant::now() < deadline {
            if uids.iter().all(|uid| self.host.pod_cleaned_up(uid)) {
                tracing::info!(?uids, "eviction manager: pods are cleaned up");
                return;
            }
            tokio::time::sleep(CLEANUP_POLL).await;
        }
        tracing::warn!(
            ?uids,
            "eviction manager: timed out waiting for pods to be cleaned up"
        );
    }

    /// Measures `pods` (blocking reads of cgroups and directories).
    async fn usage(&self, pods: &[Arc<Pod>]) -> HashMap<String, PodUsage> {
        let sources = self.options.sources.clone();
        let containers: Vec<Vec<(String, String)>> = pods
            .iter()
            .map(|p| {
                self.host
                    .containers(p.metadata.uid.as_deref().unwrap_or_default())
            })
            .collect();
        let measured = pods.to_vec();
        blocking(move || {
            measured
                .iter()
                .zip(containers)
                .map(|(p, c)| {
                    (
                        p.metadata.uid.clone().unwrap_or_default(),
                        observe::pod_usage(&sources, p, &c),
                    )
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Evicts every pod over its local storage limits; their uids.
    async fn local_storage_eviction(&self, pods: &[Arc<Pod>]) -> Vec<String> {
        let limited: Vec<Arc<Pod>> = pods
            .iter()
            .filter(|p| local_storage::has_limits(p) && !rank::is_critical(p))
            .cloned()
            .collect();
        if limited.is_empty() {
            return Vec::new();
        }
        let usage = self.usage(&limited).await;
        let mut evicted = Vec::new();
        for pod in &limited {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let Some(message) = usage
                .get(&uid)
                .and_then(|u| local_storage::violation(pod, u))
            else {
                continue;
            };
            if self.evict(pod, &message, false, 0).await {
                evicted.push(uid);
            }
        }
        evicted
    }

    async fn evict(
        &self,
        pod: &Arc<Pod>,
        message: &str,
        disruption_condition: bool,
        grace: i64,
    ) -> bool {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        tracing::warn!(
            pod = %format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or_default(), pod.metadata.name.as_deref().unwrap_or_default()),
            %message,
            "eviction manager: evicting pod"
        );
        match self
            .host
            .evict(pod, message, disruption_condition, grace)
            .await
        {
            Ok(()) => {
                if let Some(r) = &self.recorder {
                    r.event(&pod_ref(pod), EventType::Warning, "Evicted", message);
                }
                true
            }
            Err(e) => {
                tracing::warn!(uid, error = %format!("{e:#}"), "eviction failed");
                false
            }
        }
    }

    async fn observe(&self) -> (Observations, Option<PathBuf>) {
        let image_fs = if self.needs_image_fs() {
            self.host.image_fs().await
        } else {
            None
        };
        let sources = self.options.sources.clone();
        let fs = image_fs.clone();
        let obs = blocking(move || observe::observe(&sources, fs.as_deref()))
            .await
            .unwrap_or_default();
        (obs, image_fs)
    }

    fn needs_image_fs(&self) -> bool {
        self.options.thresholds.iter().any(|t| {
            matches!(
                t.signal,
                Signal::ImageFsAvailable
                    | Signal::ImageFsInodesFree
                    | Signal::ContainerFsAvailable
                    | Signal::ContainerFsInodesFree
            )
        }) || self.reclaimer.is_some()
    }

    /// One pass; the uids of the pods evicted.
    pub async fn synchronize(&mut self) -> Vec<String> {
        let (observations, image_fs) = if self.options.thresholds.is_empty() {
            (Observations::new(), None)
        } else {
            self.observe().await
        };
        let now = Instant::now();
        let met = merge(
            thresholds_met(&self.options.thresholds, &observations, false),
            thresholds_met(&self.last_met, &observations, true),
        );
        // Conditions rise at once; soft thresholds act after their grace period.
        let in_force =
            self.tracker
                .update(&conditions_of(&met), now, self.options.transition_period);
        self.pressure.set_pressure(&in_force);
        let met = self.first_observed.update(&met, now);
        self.last_met = met.clone();
        let pods = self.host.active_pods();
        let evicted = self.local_storage_eviction(&pods).await;
        if !evicted.is_empty() {
            return evicted;
        }
        let Some(threshold) = met.first().cloned() else {
            return Vec::new();
        };
        let resource = threshold.signal.resource();
        tracing::warn!(
            signal = threshold.signal.as_str(),
            observed = ?observations.get(&threshold.signal),
            "eviction manager: attempting to reclaim"
        );
        if let Some(r) = &self.recorder {
            r.event(
                &self.node_ref,
                EventType::Warning,
                "EvictionThresholdMet",
                format!("Attempting to reclaim {}", resource.as_str()),
            );
        }
        if self
            .reclaim_node_level(&threshold, image_fs.as_deref())
            .await
        {
            return Vec::new();
        }
        if pods.is_empty() {
            tracing::warn!("eviction manager: no pods to evict");
            return Vec::new();
        }
        let usage = self.usage(&pods).await;
        let usage_of = |p: &Pod| usage.get(p.metadata.uid.as_deref()?).cloned();
        for pod in rank::rank(&pods, &usage_of, resource) {
            if rank::is_critical(&pod) {
                continue;
            }
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let message = eviction_message(
                &threshold,
                observations.get(&threshold.signal),
                &pod,
                usage.get(&uid),
            );
            let grace = if threshold.is_hard() {
                0
            } else {
                let own = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
                    .unwrap_or(30);
                self.options.max_pod_grace_period.min(own).max(0)
            };
            if self.evict(&pod, &message, true, grace).await {
                return vec![uid];
            }
        }
        tracing::warn!(
            resource = resource.as_str(),
            "eviction manager: unable to evict any pod"
        );
        Vec::new()
    }

    /// For disk signals of the filesystem images live on: delete unused images, then look
    /// again. True when that was enough.
    async fn reclaim_node_level(&mut self, threshold: &Threshold, image_fs: Option<&Path>) -> bool {
        let Some(reclaimer) = &self.reclaimer else {
            return false;
        };
        if !matches!(
            threshold.signal.resource(),
            Resource::EphemeralStorage | Resource::Inodes
        ) {
            return false;
        }
        let nodefs_signal = matches!(
            threshold.signal,
            Signal::NodeFsAvailable | Signal::NodeFsInodesFree
        );
        let shared = image_fs.is_none_or(|fs| same_filesystem(fs, &self.options.sources.root_dir));
        if nodefs_signal && !shared {
            // Images are on another filesystem: deleting them frees nothing here.
            return false;
        }
        match reclaimer.delete_unused_images().await {
            Ok(freed) => tracing::info!(freed, "eviction manager: deleted unused images"),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "eviction manager: image garbage collection failed");
                return false;
            }
        }
        let (observations, _) = self.observe().await;
        thresholds_met(&self.options.thresholds, &observations, true).is_empty()
    }
}

#[cfg(test)]
mod tests;
