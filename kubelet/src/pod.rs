//! The kubelet's desired pods: the pod manager (pods from every source, with the mirror pods of
//! static pods) and the mirror pod client. Owner: the pod-sources engineer.

use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;

/// Annotation naming where a pod came from: `api`, `file` or `http`.
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// Annotation on mirror pods (and static pods) carrying the static pod's hash.
pub const CONFIG_MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
pub const CONFIG_HASH_ANNOTATION: &str = "kubernetes.io/config.hash";

/// Pods the kubelet should run, by uid, and mirror pods by the static pod's full name.
#[derive(Default)]
pub struct PodManager {}

impl PodManager {
    /// Every desired pod (static pods as themselves, not their mirrors).
    pub fn get_pods(&self) -> Vec<Arc<Pod>> {
        Vec::new()
    }

    pub fn get_pod_by_uid(&self, _uid: &str) -> Option<Arc<Pod>> {
        None
    }

    pub fn get_pod_by_name(&self, _namespace: &str, _name: &str) -> Option<Arc<Pod>> {
        None
    }
}

/// A pod from the static pod directory or the manifest URL.
pub fn is_static_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
        .is_some_and(|s| s != "api")
}

/// The apiserver's copy of a static pod.
pub fn is_mirror_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CONFIG_MIRROR_ANNOTATION))
}
