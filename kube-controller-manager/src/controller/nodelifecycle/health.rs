//! A node's health from its heartbeats: when the controller last saw the kubelet's Ready
//! condition heartbeat or its Lease renewal change (measured on the controller's own clock, as
//! upstream's probe timestamp, so clock skew between kubelet and controller does not matter),
//! and the conditions a silent node gets.

use super::taints::condition;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

/// The conditions marked Unknown when the kubelet stops posting status.
pub const MANAGED_CONDITIONS: [&str; 4] =
    ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

#[derive(Debug, Clone, PartialEq)]
pub struct NodeHealth {
    /// When (on our clock) the node last showed a sign of life.
    pub probe: Timestamp,
    pub ready_heartbeat: Option<Timestamp>,
    pub lease_renew: Option<Timestamp>,
    /// The Ready status seen at the previous pass ("" when absent).
    pub ready_status: String,
}

fn ready_heartbeat(node: &Node) -> Option<Timestamp> {
    condition(node, "Ready").and_then(|c| c.last_heartbeat_time.as_ref().map(|t| t.0))
}

pub fn ready_status(node: &Node) -> String {
    condition(node, "Ready")
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

/// Updates what we know of the node's heartbeats at `now`.
pub fn observe(
    saved: Option<&NodeHealth>,
    node: &Node,
    lease_renew: Option<Timestamp>,
    now: Timestamp,
) -> NodeHealth {
    let heartbeat = ready_heartbeat(node);
    let Some(saved) = saved else {
        // A node that never posted status is measured from its creation (startup grace).
        let probe = if condition(node, "Ready").is_none() {
            node.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0)
                .unwrap_or(now)
        } else {
            now
        };
        return NodeHealth {
            probe,
            ready_heartbeat: heartbeat,
            lease_renew,
            ready_status: ready_status(node),
        };
    };
    let mut probe = saved.probe;
    if heartbeat != saved.ready_heartbeat {
        probe = now;
    }
    if lease_renew.is_some() && lease_renew > saved.lease_renew {
        probe = now;
    }
    NodeHealth {
        probe,
        ready_heartbeat: heartbeat,
        lease_renew: lease_renew.or(saved.lease_renew),
        ready_status: saved.ready_status.clone(),
    }
}

/// The grace a node gets: the startup grace until it posted a Ready condition.
pub fn grace_period(node: &Node, monitor_grace: Duration, startup_grace: Duration) -> Duration {
    if condition(node, "Ready").is_none() {
        startup_grace
    } else {
        monitor_grace
    }
}

pub fn expired(health: &NodeHealth, grace: Duration, now: Timestamp) -> bool {
    let grace = SignedDuration::try_from(grace).unwrap_or(SignedDuration::MAX);
    now.duration_since(health.probe) > grace
}

/// The node's conditions with the managed ones set to Unknown, or None if they already are.
pub fn unknown_conditions(node: &Node, now: Timestamp) -> Option<Vec<NodeCondition>> {
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut changed = false;
    for type_ in MANAGED_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(c) if c.status == "Unknown" => {}
            Some(c) => {
                c.status = "Unknown".into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some("Kubelet stopped posting node status.".into());
                c.last_transition_time = Some(Time(now));
                changed = true;
            }
            None => {
                conditions.push(NodeCondition {
                    type_: type_.into(),
                    status: "Unknown".into(),
                    reason: Some("NodeStatusNeverUpdated".into()),
                    message: Some("Kubelet never posted node status.".into()),
                    last_heartbeat_time: node.metadata.creation_timestamp.clone(),
                    last_transition_time: Some(Time(now)),
                });
                changed = true;
            }
        }
    }
    changed.then_some(conditions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeStatus;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn node(ready: Option<(&str, i64)>) -> Node {
        let mut n = Node::default();
        n.metadata.creation_timestamp = Some(Time(ts(0)));
        n.status = Some(NodeStatus {
            conditions: Some(
                ready
                    .into_iter()
                    .map(|(status, hb)| NodeCondition {
                        type_: "Ready".into(),
                        status: status.into(),
                        last_heartbeat_time: Some(Time(ts(hb))),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        n
    }

    #[test]
    fn probe_follows_heartbeats_and_leases() {
        let grace = Duration::from_secs(4);
        let n = node(Some(("True", 1)));
        let h = observe(None, &n, Some(ts(1)), ts(10));
        assert_eq!(h.probe, ts(10));
        // Nothing new: the probe stays and the node expires after the grace.
        let h = observe(Some(&h), &n, Some(ts(1)), ts(13));
        assert_eq!(h.probe, ts(10));
        assert!(!expired(&h, grace, ts(14)));
        assert!(expired(&h, grace, ts(15)));
        // A lease renewal is a sign of life.
        let h = observe(Some(&h), &n, Some(ts(2)), ts(15));
        assert_eq!(h.probe, ts(15));
        // So is a new Ready heartbeat.
        let h = observe(Some(&h), &node(Some(("True", 16))), Some(ts(2)), ts(17));
        assert_eq!(h.probe, ts(17));
        // A node that never posted status counts from its creation with the startup grace.
        let fresh = node(None);
        let h = observe(None, &fresh, None, ts(100));
        assert_eq!(h.probe, ts(0));
        assert_eq!(
            grace_period(&fresh, grace, Duration::from_secs(60)),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn silent_node_conditions() {
        let now = ts(50);
        let conditions = unknown_conditions(&node(Some(("True", 1))), now).unwrap();
        let ready = conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "Unknown");
        assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
        assert_eq!(
            ready.message.as_deref(),
            Some("Kubelet stopped posting node status.")
        );
        assert_eq!(ready.last_heartbeat_time, Some(Time(ts(1))));
        assert_eq!(conditions.len(), 4);
        let mem = conditions
            .iter()
            .find(|c| c.type_ == "MemoryPressure")
            .unwrap();
        assert_eq!(mem.reason.as_deref(), Some("NodeStatusNeverUpdated"));
        let mut marked = node(None);
        marked.status.as_mut().unwrap().conditions = Some(conditions);
        assert!(unknown_conditions(&marked, now).is_none());
    }
}
