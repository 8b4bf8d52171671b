//! The API side of preemption once a node is chosen: mark and delete the victims, tell them
//! why, and take the node away from lower-priority pods nominated to it.

use super::candidates::Candidate;
use crate::framework::{PluginContext, PodInfo, Status};
use client_go_rs::events::EventType;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;

pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The DisruptionTarget condition's message, naming the preemptor's scheduler.
pub fn disruption_message(preemptor: &Pod) -> String {
    let scheduler = preemptor
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_SCHEDULER_NAME);
    format!("{scheduler}: preempting to accommodate a higher priority pod")
}

/// Whether the victim already carries the condition as we would set it (upstream patches only
/// when UpdatePodCondition changes something).
fn has_condition(victim: &Pod, message: &str) -> bool {
    victim
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| {
            c.type_ == DISRUPTION_TARGET
                && c.status == "True"
                && c.reason.as_deref() == Some(PREEMPTION_BY_SCHEDULER)
                && c.message.as_deref() == Some(message)
        })
}

/// Whether `pod` is going away because a scheduler preempted it.
pub fn terminating_by_preemption(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_none() {
        return false;
    }
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_TARGET)
        .is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some(PREEMPTION_BY_SCHEDULER))
}

pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

fn pods_api(ctx: &PluginContext, pod: &PodInfo) -> Api<Pod> {
    Api::namespaced(ctx.client.clone(), pod.namespace())
}

/// A victim already gone (or replaced by a namesake, which the uid precondition refuses) is
/// not a failure: the room it held is free either way.
fn gone(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.is_not_found() || s.is_conflict())
}

async fn preempt_victim(
    ctx: &PluginContext,
    preemptor: &PodInfo,
    victim: &PodInfo,
    node: &str,
) -> Result<(), String> {
    let api = pods_api(ctx, victim);
    let message = disruption_message(&preemptor.pod);
    if !has_condition(&victim.pod, &message) {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        // Strategic merge: conditions are a list keyed by type, so this adds or replaces ours.
        let patch = json!({"status": {"conditions": [{
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": message,
            "lastTransitionTime": now,
        }]}});
        if let Err(e) = api
            .patch_status(
                victim.name(),
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await
        {
            if gone(&e) {
                return Ok(());
            }
            return Err(format!(
                "adding the DisruptionTarget condition to pod {}: {e}",
                victim.key
            ));
        }
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(victim.uid().to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(victim.name(), &params).await {
        Ok(_) => {}
        Err(e) if gone(&e) => {
            tracing::debug!(victim = %victim.key, preemptor = %preemptor.key, node, "victim already deleted");
            return Ok(());
        }
        Err(e) => return Err(format!("deleting pod {}: {e}", victim.key)),
    }
    tracing::info!(victim = %victim.key, preemptor = %preemptor.key, node, "preempted victim pod");
    if let Some(recorder) = &ctx.recorder {
        recorder.event_with(
            &pod_reference(&victim.pod),
            Some(&pod_reference(&preemptor.pod)),
            EventType::Normal,
            "Preempted",
            "Preempting",
            format!("Preempted by pod {} on node {node}", preemptor.uid()),
        );
    }
    Ok(())
}

/// Clears `status.nominatedNodeName` of pods that have one set.
pub async fn clear_nominated_node_name(ctx: &PluginContext, pods: &[&PodInfo]) -> Vec<String> {
    let mut errors = Vec::new();
    for p in pods {
        let nominated = p
            .pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .unwrap_or_default();
        if nominated.is_empty() {
            continue;
        }
        let patch = json!({"status": {"nominatedNodeName": null}});
        if let Err(e) = pods_api(ctx, p)
            .patch_status(p.name(), &PatchParams::default(), &Patch::Merge(patch))
            .await
            && !gone(&e)
        {
            errors.push(format!("clearing nominatedNodeName of pod {}: {e}", p.key));
        }
    }
    errors
}

/// Evicts the candidate's victims (concurrently) and withdraws the node from lower-priority
/// pods nominated to it, which may no longer fit there.
pub async fn prepare_candidate(
    ctx: &PluginContext,
    preemptor: &PodInfo,
    candidate: &Candidate,
) -> Status {
    let node = candidate.node_name.as_str();
    let results = futures::future::join_all(
        candidate
            .victims
            .pods
            .iter()
            .map(|v| preempt_victim(ctx, preemptor, v, node)),
    )
    .await;
    if let Some(err) = results.into_iter().find_map(Result::err) {
        return Status::error(err);
    }
    let lower: Vec<_> = ctx
        .nominator()
        .map(|n| n.nominated_pods_for_node(node))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.priority() < preemptor.priority())
        .collect();
    let refs: Vec<&PodInfo> = lower.iter().map(|p| &**p).collect();
    for e in clear_nominated_node_name(ctx, &refs).await {
        // Not fatal, as upstream: the pod keeps a stale nomination until it is retried.
        tracing::warn!(error = %e, "cannot clear nominatedNodeName");
    }
    Status::success()
}
