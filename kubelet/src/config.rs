//! Pod sources (upstream's `pkg/kubelet/config`): the apiserver (pods bound to this node), the
//! static pod directory and the manifest URL, merged into one stream of updates.
//! Owner: the pod-sources engineer.

use k8s_openapi::api::core::v1::Pod;

/// The source names, as the `kubernetes.io/config.source` annotation carries them.
pub const SOURCE_API: &str = "api";
pub const SOURCE_FILE: &str = "file";
pub const SOURCE_HTTP: &str = "http";

/// What changed, as upstream's `PodOperation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodOperation {
    /// New pods from a source.
    Add,
    /// Changed specs or metadata.
    Update,
    /// Pods gone from their source: stop them.
    Remove,
    /// Pods whose apiserver object is being deleted gracefully (deletionTimestamp set).
    Delete,
    /// Only status changed at the source: no new work, the kubelet refreshes its copy.
    Reconcile,
}

/// One merged update.
#[derive(Debug, Clone)]
pub struct PodUpdate {
    pub op: PodOperation,
    pub pods: Vec<Pod>,
    pub source: &'static str,
}
