//! What the controller needs from a ReplicaSet or a ReplicationController, so both run the
//! same code (upstream runs the ReplicaSet controller over converted ReplicationControllers).

use anyhow::Context as _;
use api_types::labels::Selector;
use client_go_rs::informers::InformerObject;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    PodTemplateSpec, ReplicationController, ReplicationControllerCondition,
    ReplicationControllerStatus,
};
use serde::Serialize;

/// A replicated set of pods. The status is viewed as a `ReplicaSetStatus` (the
/// ReplicationController's has the same fields).
pub trait ReplicatedSet:
    InformerObject + Serialize + kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
{
    /// Upstream's controller name (queue, events, service account).
    const CONTROLLER_NAME: &'static str;
    /// The identity it writes with and reports events as.
    const SERVICE_ACCOUNT: &'static str;
    /// The workqueue's name (its metrics label).
    const QUEUE_NAME: &'static str;
    const API_VERSION: &'static str;
    const KIND: &'static str;

    /// Desired replicas (defaults to 1, as the API does).
    fn replicas(&self) -> i32;
    fn min_ready_seconds(&self) -> i32;
    /// The pod selector; an empty or invalid one selects nothing, so a bad object never
    /// adopts every pod of its namespace.
    fn selector(&self) -> anyhow::Result<Selector>;
    fn template(&self) -> Option<&PodTemplateSpec>;
    fn status_view(&self) -> ReplicaSetStatus;
    /// A copy of `self` with `status`.
    fn with_status(&self, status: ReplicaSetStatus) -> Self;
}

fn nothing_if_empty(s: Selector) -> Selector {
    if s.is_empty() { Selector::nothing() } else { s }
}

impl ReplicatedSet for ReplicaSet {
    const CONTROLLER_NAME: &'static str = "replicaset-controller";
    const SERVICE_ACCOUNT: &'static str = "replicaset-controller";
    const QUEUE_NAME: &'static str = "replicaset";
    const API_VERSION: &'static str = "apps/v1";
    const KIND: &'static str = "ReplicaSet";

    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }
    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }
    fn selector(&self) -> anyhow::Result<Selector> {
        let ls = self.spec.as_ref().map(|s| &s.selector);
        Selector::from_label_selector(ls)
            .map(nothing_if_empty)
            .context("invalid selector")
    }
    fn template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref().and_then(|s| s.template.as_ref())
    }
    fn status_view(&self) -> ReplicaSetStatus {
        self.status.clone().unwrap_or_default()
    }
    fn with_status(&self, status: ReplicaSetStatus) -> Self {
        let mut rs = self.clone();
        rs.status = Some(status);
        rs
    }
}

impl ReplicatedSet for ReplicationController {
    const CONTROLLER_NAME: &'static str = "replicationcontroller-controller";
    const SERVICE_ACCOUNT: &'static str = "replication-controller";
    const QUEUE_NAME: &'static str = "replicationmanager";
    const API_VERSION: &'static str = "v1";
    const KIND: &'static str = "ReplicationController";

    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }
    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }
    fn selector(&self) -> anyhow::Result<Selector> {
        match self.spec.as_ref().and_then(|s| s.selector.as_ref()) {
            Some(map) if !map.is_empty() => {
                Selector::from_map(map).map_err(|e| anyhow::anyhow!("invalid selector: {e:?}"))
            }
            _ => Ok(Selector::nothing()),
        }
    }
    fn template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref().and_then(|s| s.template.as_ref())
    }
    fn status_view(&self) -> ReplicaSetStatus {
        let s = self.status.clone().unwrap_or_default();
        ReplicaSetStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicaSetCondition {
                        type_: c.type_,
                        status: c.status,
                        reason: c.reason,
                        message: c.message,
                        last_transition_time: c.last_transition_time,
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }
    fn with_status(&self, s: ReplicaSetStatus) -> Self {
        let mut rc = self.clone();
        rc.status = Some(ReplicationControllerStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicationControllerCondition {
                        type_: c.type_,
                        status: c.status,
                        reason: c.reason,
                        message: c.message,
                        last_transition_time: c.last_transition_time,
                    })
                    .collect()
            }),
        });
        rc
    }
}
