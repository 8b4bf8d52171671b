//! The taint-eviction controller: pods on nodes with NoExecute taints they do not tolerate are
//! deleted, at once or after the shortest `tolerationSeconds` of the tolerations they rely on
//! (a delayed requeue, cancelled when the taint goes away).

use super::monitor::pod_ref;
use super::taints::{self, NO_EXECUTE};
use super::writes;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Indexer, Lister};
use client_go_rs::workqueue::RateLimitingQueue;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use kube::api::{Api, DeleteParams};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Node(String),
    Pod(String),
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Node(n) => write!(f, "node/{n}"),
            Key::Pod(p) => write!(f, "pod/{p}"),
        }
    }
}

/// What a pod's tolerations make of its node's NoExecute taints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No NoExecute taint, or all tolerated forever.
    Stay,
    /// Some taint is not tolerated.
    EvictNow,
    /// Tolerated for this long.
    EvictAfter(Duration),
}

pub fn verdict(taints: &[Taint], tolerations: &[Toleration]) -> Verdict {
    let mut min: Option<i64> = None;
    for taint in taints.iter().filter(|t| t.effect == NO_EXECUTE) {
        let Some(toleration) = tolerations.iter().find(|t| taints::tolerates(t, taint)) else {
            return Verdict::EvictNow;
        };
        if let Some(secs) = toleration.toleration_seconds {
            min = Some(min.map_or(secs, |m| m.min(secs)));
        }
    }
    match min {
        None => Verdict::Stay,
        Some(secs) if secs <= 0 => Verdict::EvictNow,
        Some(secs) => Verdict::EvictAfter(Duration::from_secs(secs as u64)),
    }
}

pub struct TaintEviction {
    pub client: kube::Client,
    pub pods: Arc<Indexer<Pod>>,
    pub nodes: Lister<Node>,
    pub recorder: EventRecorder,
    pub queue: RateLimitingQueue<Key>,
    /// Pods with a pending deletion, and when it was first decided.
    scheduled: Mutex<HashMap<String, Timestamp>>,
}

impl TaintEviction {
    pub fn new(
        client: kube::Client,
        pods: Arc<Indexer<Pod>>,
        nodes: Lister<Node>,
        recorder: EventRecorder,
        queue: RateLimitingQueue<Key>,
    ) -> Self {
        Self {
            client,
            pods,
            nodes,
            recorder,
            queue,
            scheduled: Mutex::new(HashMap::new()),
        }
    }

    pub async fn sync(&self, key: Key) -> anyhow::Result<()> {
        match key {
            Key::Node(name) => {
                for pod in self
                    .pods
                    .by_index(super::PODS_BY_NODE, &name)
                    .unwrap_or_default()
                {
                    self.queue
                        .add(Key::Pod(client_go_rs::listers::object_key(pod.as_ref())));
                }
                Ok(())
            }
            Key::Pod(key) => self.sync_pod(&key).await,
        }
    }

    fn cancel(&self, key: &str, pod: Option<&Pod>) {
        if self.scheduled.lock().remove(key).is_some()
            && let Some(pod) = pod
        {
            self.recorder.event(
                &pod_ref(pod),
                EventType::Normal,
                "TaintManagerEviction",
                format!("Cancelling deletion of Pod {key}"),
            );
        }
    }

    async fn sync_pod(&self, key: &str) -> anyhow::Result<()> {
        let Some(pod) = self.pods.get_by_key(key) else {
            self.scheduled.lock().remove(key);
            return Ok(());
        };
        if pod.metadata.deletion_timestamp.is_some() {
            self.scheduled.lock().remove(key);
            return Ok(());
        }
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .and_then(|n| self.nodes.get(n));
        let Some(node) = node else {
            self.cancel(key, Some(&pod));
            return Ok(());
        };
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        let delay = match verdict(taints::taints(&node), tolerations) {
            Verdict::Stay => {
                self.cancel(key, Some(&pod));
                return Ok(());
            }
            Verdict::EvictNow => Duration::ZERO,
            Verdict::EvictAfter(d) => d,
        };
        let now = Timestamp::now();
        let since = *self.scheduled.lock().entry(key.to_string()).or_insert(now);
        let due = since + SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
        if due > now {
            let wait = now.duration_until(due).unsigned_abs();
            self.queue.add_after(Key::Pod(key.to_string()), wait);
            return Ok(());
        }
        self.evict(key, &pod).await
    }

    async fn evict(&self, key: &str, pod: &Pod) -> anyhow::Result<()> {
        self.recorder.event(
            &pod_ref(pod),
            EventType::Normal,
            "TaintManagerEviction",
            format!("Marking for deletion Pod {key}"),
        );
        let condition = json!({
            "type": "DisruptionTarget", "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": Timestamp::now().to_string(),
        });
        match writes::set_pod_condition(&self.client, pod, condition).await {
            Err(err) if writes::is_not_found(&err) => {
                self.scheduled.lock().remove(key);
                return Ok(());
            }
            other => other?,
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let result = Api::<Pod>::namespaced(self.client.clone(), ns)
            .delete(name, &DeleteParams::default())
            .await;
        match result {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(err) => return Err(anyhow::Error::new(err).context(format!("deleting pod {key}"))),
        }
        self.scheduled.lock().remove(key);
        Ok(())
    }
}

/// Whether a node change can change eviction decisions.
pub fn no_execute_changed(old: &Node, new: &Node) -> bool {
    let pick = |n: &Node| -> Vec<Taint> {
        taints::taints(n)
            .iter()
            .filter(|t| t.effect == NO_EXECUTE)
            .cloned()
            .collect()
    };
    pick(old) != pick(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::nodelifecycle::taints::{NOT_READY, UNREACHABLE, taint};

    fn tol(key: &str, secs: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(NO_EXECUTE.into()),
            toleration_seconds: secs,
            ..Default::default()
        }
    }

    #[test]
    fn verdicts() {
        let unreachable = [taint(UNREACHABLE, NO_EXECUTE), taint("x", "NoSchedule")];
        let both = [taint(UNREACHABLE, NO_EXECUTE), taint(NOT_READY, NO_EXECUTE)];
        let cases: Vec<(&str, &[Taint], Vec<Toleration>, Verdict)> = vec![
            ("no taint", &[], vec![], Verdict::Stay),
            ("untolerated", &unreachable, vec![], Verdict::EvictNow),
            (
                "forever",
                &unreachable,
                vec![tol(UNREACHABLE, None)],
                Verdict::Stay,
            ),
            (
                "for a while",
                &unreachable,
                vec![tol(UNREACHABLE, Some(3))],
                Verdict::EvictAfter(Duration::from_secs(3)),
            ),
            (
                "zero seconds",
                &unreachable,
                vec![tol(UNREACHABLE, Some(0))],
                Verdict::EvictNow,
            ),
            (
                "one of two tolerated",
                &both,
                vec![tol(UNREACHABLE, None)],
                Verdict::EvictNow,
            ),
            (
                "shortest wins",
                &both,
                vec![tol(UNREACHABLE, Some(30)), tol(NOT_READY, Some(5))],
                Verdict::EvictAfter(Duration::from_secs(5)),
            ),
        ];
        for (name, taints, tolerations, want) in cases {
            assert_eq!(verdict(taints, &tolerations), want, "{name}");
        }
    }
}
