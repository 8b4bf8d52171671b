//! The `endpoints.kubernetes.io/last-change-trigger-time` of a sync, as upstream's
//! TriggerTimeTracker: the earliest change (a pod's readiness transition, the service's
//! creation) not yet reflected by an earlier sync of the same service. The first sync of a
//! service has none.

use k8s_openapi::api::core::v1::{Pod, Service};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Default, Clone)]
struct State {
    pods: HashMap<String, jiff::Timestamp>,
    service: Option<jiff::Timestamp>,
}

#[derive(Debug, Default)]
pub struct TriggerTimeTracker {
    states: Mutex<HashMap<String, State>>,
}

fn pod_trigger_time(pod: &Pod) -> Option<jiff::Timestamp> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

impl TriggerTimeTracker {
    /// The trigger time of syncing `service` (key `key`) over `pods`; records their state.
    pub fn compute(
        &self,
        key: &str,
        service: &Service,
        pods: &[Arc<Pod>],
    ) -> Option<jiff::Timestamp> {
        let mut states = self.states.lock();
        let previous = states.get(key).cloned();
        let last = previous.clone().unwrap_or_default();
        let mut next = State::default();
        let mut earliest: Option<jiff::Timestamp> = None;
        let mut changed = |t: jiff::Timestamp| {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        };
        for pod in pods {
            let Some(t) = pod_trigger_time(pod) else {
                continue;
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if last.pods.get(&name).is_none_or(|seen| t > *seen) {
                changed(t);
            }
            next.pods.insert(name, t);
        }
        next.service = service.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(t) = next.service
            && last.service.is_none_or(|seen| t > seen)
        {
            changed(t);
        }
        states.insert(key.to_string(), next);
        previous.and(earliest)
    }

    pub fn delete_service(&self, key: &str) {
        self.states.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn at(secs: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(secs).unwrap()
    }

    fn pod(name: &str, ready_at: i64) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(at(ready_at))),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn earliest_unseen_change() {
        let t = TriggerTimeTracker::default();
        let svc = Service {
            metadata: ObjectMeta {
                creation_timestamp: Some(Time(at(100))),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(t.compute("k", &svc, &[pod("a", 110)]), None, "first sync");
        assert_eq!(t.compute("k", &svc, &[pod("a", 110)]), None, "nothing new");
        let pods = [pod("a", 130), pod("b", 120)];
        assert_eq!(t.compute("k", &svc, &pods), Some(at(120)));
        assert_eq!(
            t.compute("k", &svc, &pods[..1]),
            None,
            "a removal has no time"
        );
        t.delete_service("k");
        assert_eq!(
            t.compute("k", &svc, &pods),
            None,
            "known again from scratch"
        );
    }
}
