//! What happens when a pod cannot be scheduled: back to the queue (unless it changed under
//! us), a `FailedScheduling` event, and the `PodScheduled` condition (plus the nominated node
//! after preemption) written to the pod's status.

use super::Shared;
use super::schedule_one::CycleFailure;
use crate::framework::registry::PodNominator;
use crate::framework::{Framework, PodInfo, QueuedPodInfo, Status};
use client_go_rs::events::EventType;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

/// A failed attempt, as the pod's status and the event will tell it.
#[derive(Debug, Clone)]
pub struct Failure {
    /// `Unschedulable` (no node fits) or `SchedulerError`.
    pub reason: &'static str,
    pub message: String,
    pub unschedulable_plugins: HashSet<String>,
    /// The node preemption made room on.
    pub nominated: Option<String>,
    pub is_error: bool,
}

impl Failure {
    pub fn from_status(s: Status) -> Self {
        let rejected = s.is_rejected();
        Self {
            reason: if rejected {
                "Unschedulable"
            } else {
                "SchedulerError"
            },
            message: s.message(),
            unschedulable_plugins: if rejected && !s.plugin.is_empty() {
                HashSet::from([s.plugin])
            } else {
                HashSet::new()
            },
            nominated: None,
            is_error: !rejected,
        }
    }

    pub fn from_cycle(f: CycleFailure) -> Self {
        match f {
            CycleFailure::Error(s) => Self::from_status(s),
            CycleFailure::Unfit {
                message,
                diagnosis,
                nominated,
            } => Self {
                reason: "Unschedulable",
                message,
                unschedulable_plugins: diagnosis.unschedulable_plugins,
                nominated,
                is_error: false,
            },
        }
    }
}

pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

impl Shared {
    /// Upstream's `handleSchedulingFailure`.
    pub fn handle_failure(
        &self,
        fw: &Framework,
        mut qpi: QueuedPodInfo,
        failure: Failure,
        scheduling_cycle: u64,
    ) {
        let pod = qpi.pod_info.pod.clone();
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        if failure.is_error {
            tracing::info!(pod = %qpi.pod_info.key, error = %failure.message, "error scheduling pod; retrying");
        } else {
            tracing::debug!(pod = %qpi.pod_info.key, reason = %failure.message, "unable to schedule pod");
        }
        // The informer's copy decides: a pod deleted or bound meanwhile is not requeued.
        match self.pods.namespace(ns).get(name) {
            Some(latest) if latest.metadata.uid == pod.metadata.uid => {
                let assigned = latest
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_some_and(|n| !n.is_empty());
                if assigned {
                    tracing::debug!(pod = %qpi.pod_info.key, "pod was assigned meanwhile; not requeued");
                } else {
                    qpi.pod_info = Arc::new(PodInfo::new(latest.clone()));
                    qpi.unschedulable_plugins = failure.unschedulable_plugins.clone();
                    if failure.is_error {
                        qpi.consecutive_errors += 1;
                    } else {
                        qpi.consecutive_errors = 0;
                    }
                    let requeued = qpi.pod_info.clone();
                    if let Err(e) = self
                        .queue
                        .add_unschedulable_if_not_present(qpi, scheduling_cycle)
                    {
                        tracing::warn!(pod = %requeued.key, error = %e, "requeueing pod");
                    }
                    if let Some(node) = &failure.nominated {
                        self.queue.add_nominated_pod(&requeued, node);
                    }
                }
            }
            _ => tracing::debug!(pod = %qpi.pod_info.key, "pod is gone; not requeued"),
        }
        if let Some(recorder) = self.recorders.get(&fw.profile_name) {
            recorder.event_with(
                &pod_reference(&pod),
                None,
                EventType::Warning,
                "FailedScheduling",
                "Scheduling",
                failure.message.clone(),
            );
        }
        self.update_pod_status(&pod, failure);
    }

    /// Writes the `PodScheduled=False` condition (and the nominated node) unless the pod
    /// already says exactly that, in the background.
    fn update_pod_status(&self, pod: &Arc<Pod>, failure: Failure) {
        let status = pod.status.as_ref();
        let current = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        let same_condition = current.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some(failure.reason)
                && c.message.as_deref() == Some(failure.message.as_str())
        });
        let nominated_now = status.and_then(|s| s.nominated_node_name.clone());
        let same_nomination = failure.nominated.is_none() || failure.nominated == nominated_now;
        if same_condition && same_nomination {
            return;
        }
        let mut patch = json!({
            "status": {
                "conditions": [{
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": failure.reason,
                    "message": failure.message,
                    "lastProbeTime": null,
                    "lastTransitionTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                }]
            }
        });
        if let Some(node) = &failure.nominated {
            patch["status"]["nominatedNodeName"] = json!(node);
        }
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = pod.metadata.name.clone().unwrap_or_default();
        tokio::spawn(async move {
            if let Err(e) = api
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
            {
                tracing::debug!(pod = %name, error = %e, "updating the PodScheduled condition");
            }
        });
    }
}
