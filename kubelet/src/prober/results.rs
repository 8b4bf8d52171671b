//! The latest verdict of every probe by container id, and the fan-out of changes (upstream's
//! results managers): readiness and startup changes also go to the status manager.

use super::ProbeKind;
use crate::container::{ContainerId, ProbeResult};
use crate::status::StatusManager;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A change of one probe's verdict: (pod uid, probe kind, result).
pub type ProbeUpdate = (String, ProbeKind, ProbeResult);

pub struct Results {
    cache: RwLock<HashMap<(ProbeKind, ContainerId), ProbeResult>>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<ProbeUpdate>>>,
    status: Arc<StatusManager>,
}

impl Results {
    pub fn new(status: Arc<StatusManager>) -> Self {
        Self {
            cache: RwLock::default(),
            subscribers: Mutex::default(),
            status,
        }
    }

    pub fn get(&self, kind: ProbeKind, id: &ContainerId) -> Option<ProbeResult> {
        self.cache.read().get(&(kind, id.clone())).copied()
    }

    /// Records a verdict; a change is announced to the status manager and the subscribers.
    pub fn set(&self, kind: ProbeKind, id: &ContainerId, result: ProbeResult, pod_uid: &str) {
        let prev = self.cache.write().insert((kind, id.clone()), result);
        if prev == Some(result) {
            return;
        }
        let cid = id.to_string();
        match kind {
            ProbeKind::Readiness => {
                self.status
                    .set_container_readiness(pod_uid, &cid, result == ProbeResult::Success)
            }
            ProbeKind::Startup => {
                self.status
                    .set_container_startup(pod_uid, &cid, result == ProbeResult::Success)
            }
            ProbeKind::Liveness => {}
        }
        self.subscribers
            .lock()
            .retain(|s| s.send((pod_uid.to_string(), kind, result)).is_ok());
    }

    /// Forgets a container's verdict (its worker stopped), silently.
    pub fn remove(&self, kind: ProbeKind, id: &ContainerId) {
        self.cache.write().remove(&(kind, id.clone()));
    }

    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<ProbeUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers.lock().push(tx);
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_announced() {
        let r = Results::new(Arc::new(StatusManager::default()));
        let mut rx = r.subscribe();
        let id = ContainerId::parse("containerd://a").unwrap();
        r.set(ProbeKind::Liveness, &id, ProbeResult::Success, "u1");
        r.set(ProbeKind::Liveness, &id, ProbeResult::Success, "u1");
        r.set(ProbeKind::Liveness, &id, ProbeResult::Failure, "u1");
        r.set(ProbeKind::Readiness, &id, ProbeResult::Failure, "u1");
        let got: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(
            got,
            [
                ("u1".to_string(), ProbeKind::Liveness, ProbeResult::Success),
                ("u1".to_string(), ProbeKind::Liveness, ProbeResult::Failure),
                ("u1".to_string(), ProbeKind::Readiness, ProbeResult::Failure),
            ]
        );
        assert_eq!(r.get(ProbeKind::Liveness, &id), Some(ProbeResult::Failure));
        r.remove(ProbeKind::Liveness, &id);
        assert_eq!(r.get(ProbeKind::Liveness, &id), None);
        assert_eq!(r.get(ProbeKind::Readiness, &id), Some(ProbeResult::Failure));
    }
}
