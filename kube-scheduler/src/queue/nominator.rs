//! Pods nominated to nodes (upstream's `nominator`): set by preemption and by pods'
//! `status.nominatedNodeName`, read by Filter so that the space a preemptor was promised is not
//! handed to a lower-priority pod meanwhile.

use crate::framework::PodInfo;
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::Arc;

/// `status.nominatedNodeName`, empty when unset.
pub fn nominated_node_name(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .unwrap_or_default()
}

fn uid_of(pod: &Pod) -> String {
    match pod.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => uid.to_string(),
        _ => format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

#[derive(Default)]
pub struct Nominator {
    by_node: HashMap<String, Vec<Arc<PodInfo>>>,
    node_of: HashMap<String, String>,
}

impl Nominator {
    /// Nominates the pod to `node` (preemption's choice) or, when `None`, to its
    /// `status.nominatedNodeName`; any previous nomination of the pod is replaced.
    pub fn add(&mut self, pi: &Arc<PodInfo>, node: Option<&str>) {
        self.delete(&pi.pod);
        let node = node.unwrap_or_else(|| nominated_node_name(&pi.pod));
        // A pod already bound needs no space held for it.
        if node.is_empty() || !pi.node_name().is_empty() {
            return;
        }
        self.node_of.insert(uid_of(&pi.pod), node.to_string());
        self.by_node
            .entry(node.to_string())
            .or_default()
            .push(pi.clone());
    }

    pub fn delete(&mut self, pod: &Pod) {
        let uid = uid_of(pod);
        let Some(node) = self.node_of.remove(&uid) else {
            return;
        };
        if let Some(pods) = self.by_node.get_mut(&node) {
            pods.retain(|p| uid_of(&p.pod) != uid);
            if pods.is_empty() {
                self.by_node.remove(&node);
            }
        }
    }

    /// Keeps the nomination current with the pod's new version. An update that carries no
    /// nomination on either side keeps the one preemption made in memory: the status write
    /// may simply not have been seen yet.
    pub fn update(&mut self, old: &Pod, new: &Arc<PodInfo>) {
        let kept =
            if nominated_node_name(old).is_empty() && nominated_node_name(&new.pod).is_empty() {
                self.node_of.get(&uid_of(old)).cloned()
            } else {
                None
            };
        self.delete(old);
        self.add(new, kept.as_deref());
    }

    /// Whether no pod is nominated anywhere (the common case: Filter then skips the lookup).
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    pub fn pods_for_node(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.by_node.get(node).cloned().unwrap_or_default()
    }

    pub fn node_of(&self, pod: &Pod) -> Option<&str> {
        self.node_of.get(&uid_of(pod)).map(String::as_str)
    }
}
