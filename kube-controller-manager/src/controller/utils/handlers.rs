//! What the pod-event handlers of the workload controllers share: finding the object a
//! controllerRef points at, and the extra sync a newly ready pod needs under minReadySeconds.

use client_go_rs::listers::Lister;
use client_go_rs::workqueue::RateLimitingQueue;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::sync::Arc;
use std::time::Duration;

use super::pods::is_pod_ready;

/// The cached object of kind `kind` that `reference` points at, if it is still the same
/// object: a uid mismatch means it was deleted and recreated, and no longer owns the pod.
pub fn resolve_controller_ref<T: kube::Resource>(
    lister: &Lister<T>,
    kind: &str,
    namespace: &str,
    reference: &OwnerReference,
) -> Option<Arc<T>> {
    if reference.kind != kind {
        return None;
    }
    let object = lister.namespace(namespace).get(&reference.name)?;
    (object.meta().uid.as_deref() == Some(reference.uid.as_str())).then_some(object)
}

/// Requeues `key` once a pod that just became ready has been ready for `min_ready_seconds`:
/// no pod event will come when it turns available, yet its owner's status must count it.
pub fn enqueue_when_available(
    queue: &RateLimitingQueue<String>,
    key: &str,
    min_ready_seconds: i32,
    old: &Pod,
    cur: &Pod,
) {
    if min_ready_seconds > 0 && !is_pod_ready(old) && is_pod_ready(cur) {
        // One second past the deadline, so the sync sees it elapsed.
        let secs = u64::try_from(min_ready_seconds).unwrap_or(0) + 1;
        queue.add_after(key.to_string(), Duration::from_secs(secs));
    }
}
