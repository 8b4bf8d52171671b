//! The pod status the kubelet reports: generated from the runtime's view and the probes, kept
//! per pod, and written through `pods/status` when it changes (upstream's status manager).
//! Owner: the core engineer.

pub mod conditions;
pub mod generate;
pub mod patch;
pub mod phase;
pub mod qos;
mod writer;

use generate::ProbeView;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use tokio::sync::mpsc;

/// One pod's latest status and what the writer has done with it.
#[derive(Clone)]
struct Entry {
    namespace: String,
    name: String,
    /// The static pod's status goes to its mirror pod (same name, its own uid).
    is_static: bool,
    status: PodStatus,
    /// Bumped on every change; the writer records the version it wrote.
    version: u64,
    written: u64,
    /// The pod's containers are gone: its API object may be deleted once the status is written.
    deletable: bool,
    /// The apiserver's status as last known (the answer to our last write, or the status the
    /// pod arrived with): the writer patches from it without reading the pod first. None
    /// after a failed write: the writer reads the pod.
    base: Option<PodStatus>,
    /// The resourceVersion our last write produced: an API copy older than it cannot tell
    /// whether the write stuck.
    written_rv: Option<u64>,
}

/// The latest status the kubelet computed for each pod, by uid; the writer to the apiserver.
pub struct StatusManager {
    statuses: RwLock<HashMap<String, Entry>>,
    /// Prober verdicts by container id.
    readiness: RwLock<HashMap<String, bool>>,
    startup: RwLock<HashMap<String, bool>>,
    /// Wakes the writer with the uid of a changed status.
    dirty_tx: mpsc::UnboundedSender<String>,
    dirty_rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    /// Pods whose probe verdicts changed, for the sync loop to regenerate their status.
    probe_tx: mpsc::UnboundedSender<String>,
    probe_rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
}

impl Default for StatusManager {
    fn default() -> Self {
        let (dirty_tx, dirty_rx) = mpsc::unbounded_channel();
        let (probe_tx, probe_rx) = mpsc::unbounded_channel();
        Self {
            statuses: RwLock::default(),
            readiness: RwLock::default(),
            startup: RwLock::default(),
            dirty_tx,
            dirty_rx: Mutex::new(Some(dirty_rx)),
            probe_tx,
            probe_rx: Mutex::new(Some(probe_rx)),
        }
    }
}

/// A terminal phase is final, whatever a later computation says, and so is what explains it.
/// A sync that began before an eviction recorded `Failed`/`Evicted` computes from the older
/// status: its result must not wipe the reason, message or `DisruptionTarget` condition (as
/// upstream's pod worker applies the eviction's status function to every terminating sync).
fn keep_terminal(old: &PodStatus, new: &mut PodStatus) {
    if !phase::is_terminal(old.phase.as_deref()) {
        return;
    }
    new.phase.clone_from(&old.phase);
    if new.reason.is_none() {
        new.reason.clone_from(&old.reason);
    }
    if new.message.is_none() {
        new.message.clone_from(&old.message);
    }
    let kept = old
        .conditions
        .iter()
        .flatten()
        .filter(|c| !conditions::kubelet_owned(&c.type_));
    for c in kept {
        let conds = new.conditions.get_or_insert_with(Vec::new);
        if !conds.iter().any(|n| n.type_ == c.type_) {
            conds.push(c.clone());
        }
    }
}

impl StatusManager {
    /// The last status computed for the pod with this uid.
    pub fn get_pod_status(&self, uid: &str) -> Option<PodStatus> {
        self.statuses.read().get(uid).map(|e| e.status.clone())
    }

    /// Records the status computed for `pod`; the writer sends it if it changed. Returns
    /// whether it changed.
    pub fn set_pod_status(&self, pod: &Pod, status: PodStatus) -> bool {
        let Some(uid) = pod.metadata.uid.clone() else {
            return false;
        };
        let mut statuses = self.statuses.write();
        let entry = statuses.entry(uid.clone()).or_insert_with(|| Entry {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            is_static: crate::pod::is_static_pod(pod),
            status: PodStatus::default(),
            version: 0,
            written: 0,
            deletable: false,
            base: pod.status.clone(),
            written_rv: None,
        });
        let mut status = status;
        keep_terminal(&entry.status, &mut status);
        if entry.version > 0 && entry.status == status {
            return false;
        }
        entry.status = status;
        entry.version += 1;
        drop(statuses);
        let _ = self.dirty_tx.send(uid);
        true
    }

    /// The pod's containers and volumes are gone: once its final status is written, its API
    /// object (when being deleted) is removed with grace 0, as upstream's status manager does.
    pub fn mark_deletable(&self, uid: &str) {
        if let Some(e) = self.statuses.write().get_mut(uid) {
            e.deletable = true;
        }
        let _ = self.dirty_tx.send(uid.to_string());
    }

    /// Compares the apiserver's copy of a pod (from the watch) with what the kubelet last
    /// wrote, as upstream's `needsReconcile`: when a copy newer than our last write still
    /// differs from our status, the write did not stick (lost, or overwritten), so the pod is
    /// written again from a fresh read.
    pub fn reconcile(&self, pod: &Pod) {
        let Some(uid) = pod.metadata.uid.as_deref() else {
            return;
        };
        let copy_rv = pod
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse::<u64>().ok());
        let mut statuses = self.statuses.write();
        let Some(entry) = statuses.get_mut(uid) else {
            return;
        };
        let settled = entry.written >= entry.version && entry.version > 0 && !entry.is_static;
        let newer = matches!((copy_rv, entry.written_rv), (Some(copy), Some(ours)) if copy > ours);
        if !settled || !newer {
            return;
        }
        let api = pod.status.clone().unwrap_or_default();
        let json = |s: &PodStatus| serde_json::to_value(s).unwrap_or_default();
        let target = writer::target_status(entry, &api);
        if patch::merge_diff(&json(&api), &json(&target)).is_none() {
            return;
        }
        tracing::info!(pod = %format!("{}/{}", entry.namespace, entry.name), "the apiserver's pod status differs from the one written; writing it again");
        entry.base = None;
        entry.version += 1;
        drop(statuses);
        let _ = self.dirty_tx.send(uid.to_string());
    }

    /// Forgets a pod the kubelet no longer knows.
    pub fn remove_pod(&self, uid: &str) {
        self.statuses.write().remove(uid);
    }

    /// Uids with a status, for housekeeping.
    pub fn known_uids(&self) -> Vec<String> {
        self.statuses.read().keys().cloned().collect()
    }

    /// Records a readiness verdict for one container (from the prober) and syncs it.
    pub fn set_container_readiness(&self, pod_uid: &str, container_id: &str, ready: bool) {
        let old = self
            .readiness
            .write()
            .insert(container_id.to_string(), ready);
        if old != Some(ready) {
            let _ = self.probe_tx.send(pod_uid.to_string());
        }
    }

    /// Records a startup verdict for one container (from the prober) and syncs it.
    pub fn set_container_startup(&self, pod_uid: &str, container_id: &str, started: bool) {
        let old = self
            .startup
            .write()
            .insert(container_id.to_string(), started);
        if old != Some(started) {
            let _ = self.probe_tx.send(pod_uid.to_string());
        }
    }

    /// Drops the verdicts of containers that no longer exist.
    pub fn forget_containers(&self, keep: &dyn Fn(&str) -> bool) {
        self.readiness.write().retain(|id, _| keep(id));
        self.startup.write().retain(|id, _| keep(id));
    }

    /// The uids of pods whose probe verdicts changed; taken once, by the sync loop.
    pub fn take_probe_updates(&self) -> Option<mpsc::UnboundedReceiver<String>> {
        self.probe_rx.lock().take()
    }
}

impl ProbeView for StatusManager {
    fn ready(&self, container_id: &str) -> Option<bool> {
        self.readiness.read().get(container_id).copied()
    }

    fn started(&self, container_id: &str) -> Option<bool> {
        self.startup.read().get(container_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodCondition;

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.uid = Some("u1".into());
        p.metadata.name = Some("p".into());
        p
    }

    fn cond(type_: &str) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: "True".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_sync_from_before_the_eviction_keeps_the_evicted_status() {
        let m = StatusManager::default();
        let evicted = PodStatus {
            phase: Some("Failed".into()),
            reason: Some("Evicted".into()),
            message: Some("low on memory".into()),
            conditions: Some(vec![cond("DisruptionTarget"), cond("Ready")]),
            ..Default::default()
        };
        m.set_pod_status(&pod(), evicted);
        let stale = PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![cond("Ready")]),
            ..Default::default()
        };
        m.set_pod_status(&pod(), stale);
        let got = m.get_pod_status("u1").unwrap();
        assert_eq!(got.phase.as_deref(), Some("Failed"));
        assert_eq!(got.reason.as_deref(), Some("Evicted"));
        assert_eq!(got.message.as_deref(), Some("low on memory"));
        let types: Vec<&str> = got
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(types, ["Ready", "DisruptionTarget"]);
    }

    #[test]
    fn a_running_pod_takes_the_new_status_whole() {
        let m = StatusManager::default();
        let first = PodStatus {
            phase: Some("Running".into()),
            reason: Some("X".into()),
            ..Default::default()
        };
        m.set_pod_status(&pod(), first);
        let next = PodStatus {
            phase: Some("Failed".into()),
            ..Default::default()
        };
        m.set_pod_status(&pod(), next.clone());
        assert_eq!(m.get_pod_status("u1"), Some(next));
    }
}
