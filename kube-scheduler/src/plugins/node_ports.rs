//! The NodePorts plugin: a pod asking for host ports fits only where none of them is taken.

use crate::framework::events::{ClusterEventWithHint, EventResource, QueueingHint, action};
use crate::framework::node_info::{DEFAULT_BIND_ALL_HOST_IP, HostPortInfo, ProtocolPort};
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, Plugin, PluginContext, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};
use crate::plugins::helper::objects::as_pod;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodePorts";
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";
const PRE_FILTER_STATE_KEY: &str = "PreFilterNodePorts";

pub struct NodePorts;

pub fn new(_args: Option<&Value>, _ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodePorts))
}

/// One wanted host port, normalized once so Filter looks it up without allocating.
#[derive(Clone, Debug)]
struct WantedPort {
    ip: String,
    port: ProtocolPort,
}

#[derive(Clone, Debug, Default)]
struct PreFilterState(Vec<WantedPort>);

/// The host ports of the containers that run for the pod's lifetime: regular containers and
/// sidecars (restartable init containers), as upstream's `GetHostPorts`.
fn lifetime_host_ports(pod: &Pod) -> impl Iterator<Item = (&str, &str, i32)> {
    let spec = pod.spec.as_ref();
    let sidecars = spec
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    sidecars
        .chain(spec.map(|s| &s.containers).into_iter().flatten())
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let host_port = p.host_port.unwrap_or(0);
            (host_port > 0).then(|| {
                (
                    p.host_ip.as_deref().unwrap_or_default(),
                    p.protocol.as_deref().unwrap_or_default(),
                    host_port,
                )
            })
        })
}

fn wanted_ports(pod: &Pod) -> Vec<WantedPort> {
    lifetime_host_ports(pod)
        .map(|(ip, protocol, port)| WantedPort {
            ip: if ip.is_empty() {
                DEFAULT_BIND_ALL_HOST_IP
            } else {
                ip
            }
            .to_string(),
            port: ProtocolPort {
                protocol: if protocol.is_empty() { "TCP" } else { protocol }.to_string(),
                port,
            },
        })
        .collect()
}

/// Whether a wanted port collides with one in use; a wildcard IP collides with every IP,
/// either way round.
fn conflicts(used: &HostPortInfo, want: &WantedPort) -> bool {
    if want.ip == DEFAULT_BIND_ALL_HOST_IP {
        return used.0.values().any(|set| set.contains(&want.port));
    }
    [want.ip.as_str(), DEFAULT_BIND_ALL_HOST_IP]
        .iter()
        .any(|ip| used.0.get(*ip).is_some_and(|set| set.contains(&want.port)))
}

fn fits_ports(wanted: &[WantedPort], used: &HostPortInfo) -> bool {
    !wanted.iter().any(|w| conflicts(used, w))
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            // Container ports are immutable, so only a deletion can free a port.
            ClusterEventWithHint::new(EventResource::Pod, action::DELETE).with_hint(
                |pod, old, _new| {
                    let Some(deleted) = as_pod(old) else {
                        return QueueingHint::Queue;
                    };
                    let assigned = deleted
                        .spec
                        .as_ref()
                        .is_some_and(|s| s.node_name.as_deref().is_some_and(|n| !n.is_empty()))
                        || deleted
                            .status
                            .as_ref()
                            .and_then(|s| s.nominated_node_name.as_deref())
                            .is_some_and(|n| !n.is_empty());
                    if !assigned {
                        return QueueingHint::Skip;
                    }
                    let mut freed = HostPortInfo::default();
                    for (ip, protocol, port) in lifetime_host_ports(deleted) {
                        freed.add(ip, protocol, port);
                    }
                    if freed.is_empty() || fits_ports(&wanted_ports(pod), &freed) {
                        QueueingHint::Skip
                    } else {
                        QueueingHint::Queue
                    }
                },
            ),
            ClusterEventWithHint::new(EventResource::Node, action::ADD),
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let wanted = wanted_ports(&pod.pod);
        if wanted.is_empty() {
            return (None, Status::skip());
        }
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(wanted));
        (None, Status::success())
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return Status::state_not_found(PRE_FILTER_STATE_KEY);
        };
        if fits_ports(&s.0, &node.used_ports) {
            Status::success()
        } else {
            Status::unschedulable(ERR_REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::testing;
    use k8s_openapi::api::core::v1::ContainerPort;

    /// A pod with host ports given as "proto/ip/port".
    fn pod_with_ports(name: &str, ports: &[&str]) -> Pod {
        let mut p = testing::pod(name, &[]);
        let ports = ports
            .iter()
            .map(|s| {
                let parts: Vec<&str> = s.split('/').collect();
                let port: i32 = parts[2].parse().expect("test port");
                ContainerPort {
                    protocol: Some(parts[0].to_string()),
                    host_ip: Some(parts[1].to_string()),
                    host_port: Some(port),
                    container_port: port,
                    ..Default::default()
                }
            })
            .collect();
        if let Some(s) = p.spec.as_mut() {
            s.containers[0].ports = Some(ports);
            s.node_name = Some("n".into());
        }
        p
    }

    #[test]
    fn filter_table() {
        // Cases from upstream's TestNodePorts.
        let cases: &[(&str, &[&str], &[&str], Code)] = &[
            (
                "nothing running",
                &["UDP/127.0.0.1/8080"],
                &[],
                Code::Success,
            ),
            (
                "other port",
                &["UDP/127.0.0.1/8080"],
                &["UDP/127.0.0.1/9090"],
                Code::Success,
            ),
            (
                "same port",
                &["UDP/127.0.0.1/8080"],
                &["UDP/127.0.0.1/8080"],
                Code::Unschedulable,
            ),
            (
                "other ip",
                &["TCP/127.0.0.2/8080"],
                &["TCP/127.0.0.1/8080"],
                Code::Success,
            ),
            (
                "other protocol",
                &["UDP/127.0.0.1/8080"],
                &["TCP/127.0.0.1/8080"],
                Code::Success,
            ),
            (
                "second port collides",
                &["UDP/127.0.0.1/8080", "TCP/127.0.0.1/8081"],
                &["TCP/127.0.0.1/8081"],
                Code::Unschedulable,
            ),
            (
                "wildcard wanted",
                &["TCP/0.0.0.0/8001"],
                &["TCP/127.0.0.1/8001"],
                Code::Unschedulable,
            ),
            (
                "wildcard used",
                &["TCP/127.0.0.1/8001"],
                &["TCP/0.0.0.0/8001"],
                Code::Unschedulable,
            ),
            (
                "wildcard other protocol",
                &["UDP/127.0.0.1/8001"],
                &["TCP/0.0.0.0/8001"],
                Code::Success,
            ),
            (
                "wildcard both",
                &["TCP/0.0.0.0/8001"],
                &["TCP/0.0.0.0/8001"],
                Code::Unschedulable,
            ),
        ];
        for (name, wanted, used, code) in cases {
            let pi = testing::pod_info(pod_with_ports("p", wanted));
            let node = testing::node_info(
                testing::node("n", &[], &[]),
                vec![pod_with_ports("existing", used)],
            );
            let mut state = CycleState::new();
            let (_, s) = NodePorts.pre_filter(&mut state, &pi, &Snapshot::default());
            assert!(s.is_success(), "{name}");
            let s = NodePorts.filter(&state, &pi, &node);
            assert_eq!(s.code, *code, "{name}");
            if *code != Code::Success {
                assert_eq!(s.message(), ERR_REASON);
            }
        }
    }

    #[test]
    fn pre_filter_skips_pods_without_host_ports_and_filter_needs_state() {
        let pi = testing::pod_info(testing::pod("p", &[]));
        let (_, s) = NodePorts.pre_filter(&mut CycleState::new(), &pi, &Snapshot::default());
        assert!(s.is_skip());
        let node = testing::node_info(testing::node("n", &[], &[]), vec![]);
        assert_eq!(
            NodePorts.filter(&CycleState::new(), &pi, &node).code,
            Code::Error
        );
    }

    #[test]
    fn only_sidecar_init_containers_hold_ports() {
        let mut p = pod_with_ports("p", &[]);
        let port = |n: i32| {
            Some(vec![ContainerPort {
                host_port: Some(n),
                container_port: n,
                ..Default::default()
            }])
        };
        if let Some(s) = p.spec.as_mut() {
            s.containers[0].ports = None;
            s.init_containers = Some(vec![
                k8s_openapi::api::core::v1::Container {
                    name: "init".into(),
                    ports: port(8080),
                    ..Default::default()
                },
                k8s_openapi::api::core::v1::Container {
                    name: "sidecar".into(),
                    restart_policy: Some("Always".into()),
                    ports: port(9090),
                    ..Default::default()
                },
            ]);
        }
        let wanted: Vec<i32> = wanted_ports(&p).iter().map(|w| w.port.port).collect();
        assert_eq!(wanted, vec![9090]);
        assert_eq!(wanted_ports(&p)[0].port.protocol, "TCP");
        assert_eq!(wanted_ports(&p)[0].ip, DEFAULT_BIND_ALL_HOST_IP);
    }

    #[test]
    fn pod_delete_hint() {
        let events = NodePorts.events_to_register();
        let hint = events[0].hint.clone().expect("hint");
        let pod = pod_with_ports("p", &["TCP/0.0.0.0/8080"]);
        let same = pod_with_ports("q", &["TCP/127.0.0.1/8080"]);
        let other = pod_with_ports("q", &["TCP/127.0.0.1/9090"]);
        let mut unassigned = same.clone();
        if let Some(s) = unassigned.spec.as_mut() {
            s.node_name = None;
        }
        assert_eq!(hint(&pod, Some(&same), None), QueueingHint::Queue);
        assert_eq!(hint(&pod, Some(&other), None), QueueingHint::Skip);
        assert_eq!(hint(&pod, Some(&unassigned), None), QueueingHint::Skip);
    }
}
