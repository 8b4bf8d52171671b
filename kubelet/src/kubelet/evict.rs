//! The kubelet's side of eviction: the candidates, the containers to measure, and the kill
//! through the pod workers with the eviction's grace period after the eviction status is
//! recorded (as upstream's `killPodNow` with its status function).

use super::Kubelet;
use super::pod_workers::{Lifecycle, UpdateType, WorkUpdate};
use crate::container::ContainerState;
use crate::eviction::EvictionHost;
use crate::eviction::message::{evicted_status, without_disruption_condition};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::path::PathBuf;
use std::sync::Arc;

#[async_trait::async_trait]
impl EvictionHost for Kubelet {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        Kubelet::active_pods(self)
    }

    fn containers(&self, uid: &str) -> Vec<(String, String)> {
        self.cache
            .get(uid)
            .map(|(status, _)| {
                status
                    .containers
                    .iter()
                    .filter(|c| c.state == ContainerState::Running)
                    .map(|c| (c.name.clone(), c.id.id.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    async fn evict(
        &self,
        pod: &Arc<Pod>,
        message: &str,
        disruption_condition: bool,
        grace: i64,
    ) -> anyhow::Result<()> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        anyhow::ensure!(!uid.is_empty(), "the pod has no uid");
        let old = self
            .status
            .get_pod_status(&uid)
            .or_else(|| pod.status.clone())
            .unwrap_or_default();
        // The status first: the worker's terminating sync keeps a terminal phase and the
        // reason, so the pod ends Failed/Evicted whatever its containers exit with.
        let status = evicted_status(old, message, Time(jiff::Timestamp::now()));
        let status = if disruption_condition {
            status
        } else {
            without_disruption_condition(status)
        };
        self.status.set_pod_status(pod, status);
        self.workers().update_pod(WorkUpdate {
            kind: UpdateType::Kill,
            pod: Some(pod.clone()),
            running: None,
            grace_override: Some(grace),
        });
        Ok(())
    }

    fn pod_cleaned_up(&self, uid: &str) -> bool {
        self.workers()
            .lifecycle(uid)
            .is_none_or(|l| l == Lifecycle::Terminated)
    }

    async fn image_fs(&self) -> Option<PathBuf> {
        match self.runtime.image_fs_usage().await {
            Ok(list) => list
                .into_iter()
                .map(|(mountpoint, _)| PathBuf::from(mountpoint))
                .find(|p| !p.as_os_str().is_empty()),
            Err(e) => {
                tracing::debug!(error = %format!("{e:#}"), "image filesystem info unavailable");
                None
            }
        }
    }
}
