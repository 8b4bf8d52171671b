//! The pod status the kubelet reports: generated from the runtime's view and the probes, kept
//! per pod, and written through `pods/status` when it changes (upstream's status manager).
//! Owner: the core engineer.

use k8s_openapi::api::core::v1::PodStatus;
use parking_lot::RwLock;
use std::collections::HashMap;

/// The latest status the kubelet computed for each pod, by uid; the writer to the apiserver.
#[derive(Default)]
pub struct StatusManager {
    statuses: RwLock<HashMap<String, PodStatus>>,
}

impl StatusManager {
    /// The last status computed for the pod with this uid.
    pub fn get_pod_status(&self, uid: &str) -> Option<PodStatus> {
        self.statuses.read().get(uid).cloned()
    }

    /// Records a readiness verdict for one container (from the prober) and syncs it.
    pub fn set_container_readiness(&self, _pod_uid: &str, _container_id: &str, _ready: bool) {}

    /// Records a startup verdict for one container (from the prober) and syncs it.
    pub fn set_container_startup(&self, _pod_uid: &str, _container_id: &str, _started: bool) {}
}
