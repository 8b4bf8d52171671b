//! The node lifecycle controller: a periodic health monitor (every `--node-monitor-period`, as
//! upstream) that marks silent nodes Unknown, keeps zone states and queues NoExecute taints at
//! each zone's rate; a 100 ms pass that applies those taints; and an event-driven NoSchedule
//! pass that keeps condition taints in line with each node's conditions.

use super::health::{self, NodeHealth};
use super::taints::{self, NO_EXECUTE, NOT_READY, UNREACHABLE};
use super::writes;
use super::zones::{self, Disruption, TaintQueue, ZoneState};
use crate::controller::settings::ControllerSettings;
use client_go_rs::events::{EventRecorder, EventType};
use client_go_rs::listers::{Indexer, Lister};
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often queued NoExecute taints are applied (upstream's scheduler period).
pub const TAINT_PASS_PERIOD: Duration = Duration::from_millis(100);
const TAINT_RETRY: Duration = Duration::from_secs(1);
const EXCLUDE_DISRUPTION_LABEL: &str = "node.kubernetes.io/exclude-disruption";

#[derive(Default)]
struct State {
    health: HashMap<String, NodeHealth>,
    zone_states: HashMap<String, ZoneState>,
    tainters: HashMap<String, TaintQueue>,
    /// Nodes whose pods could not all be marked not ready.
    pods_to_retry: HashSet<String>,
}

pub struct NodeLifecycle {
    pub client: kube::Client,
    pub nodes: Lister<Node>,
    pub leases: Lister<Lease>,
    pub pods: Arc<Indexer<Pod>>,
    pub recorder: EventRecorder,
    pub settings: Arc<ControllerSettings>,
    state: Mutex<State>,
}

pub fn node_ref(node: &Node) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: node.metadata.name.clone(),
        uid: node.metadata.uid.clone(),
        ..Default::default()
    }
}

pub fn pod_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

fn zone_of(node: &Node) -> String {
    zones::zone_key(node.metadata.labels.as_ref())
}

fn name_of(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

impl NodeLifecycle {
    pub fn new(
        client: kube::Client,
        nodes: Lister<Node>,
        leases: Lister<Lease>,
        pods: Arc<Indexer<Pod>>,
        recorder: EventRecorder,
        settings: Arc<ControllerSettings>,
    ) -> Self {
        Self {
            client,
            nodes,
            leases,
            pods,
            recorder,
            settings,
            state: Mutex::new(State::default()),
        }
    }

    /// The NoSchedule pass and label reconciliation for one node (queued on every node change).
    pub async fn sync_no_schedule(&self, name: String) -> anyhow::Result<()> {
        let Some(node) = self.nodes.get(&name) else {
            return Ok(());
        };
        if let Some(next) = taints::reconcile_no_schedule(&node) {
            writes::set_taints(&self.client, &node, &next).await?;
        }
        if let Some(labels) = super::labels::reconcile(&node) {
            writes::set_labels(&self.client, &name, &labels).await?;
        }
        Ok(())
    }

    fn lease_renew(&self, node: &str) -> Option<Timestamp> {
        self.leases
            .namespace("kube-node-lease")
            .get(node)
            .and_then(|l| l.spec.as_ref()?.renew_time.as_ref().map(|t| t.0))
    }

    /// One health pass over every node.
    pub async fn monitor(&self) {
        let now = Timestamp::now();
        let instant = Instant::now();
        let nodes = self.nodes.list();
        self.track_membership(&nodes, instant);
        let mut zone_statuses: HashMap<String, Vec<String>> = HashMap::new();
        for node in &nodes {
            let name = name_of(node).to_string();
            let lease = self.lease_renew(&name);
            let (health, previous) = {
                let mut st = self.state.lock();
                let saved = st.health.get(&name);
                let previous = saved
                    .map(|h| h.ready_status.clone())
                    .unwrap_or_else(|| health::ready_status(node));
                let h = health::observe(saved, node, lease, now);
                st.health.insert(name.clone(), h.clone());
                (h, previous)
            };
            let observed = health::ready_status(node);
            let mut current = observed.clone();
            let grace = health::grace_period(
                node,
                self.settings.node_monitor_grace_period,
                self.settings.node_startup_grace_period,
            );
            if health::expired(&health, grace, now) {
                if let Some(conditions) = health::unknown_conditions(node, now) {
                    tracing::info!(node = %name, "node stopped posting status, marking it Unknown");
                    if let Err(err) = writes::set_conditions(&self.client, node, &conditions).await
                    {
                        tracing::warn!("{err:#}");
                        continue;
                    }
                }
                current = "Unknown".into();
            }
            let excluded = node
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(EXCLUDE_DISRUPTION_LABEL));
            if !excluded {
                zone_statuses
                    .entry(zone_of(node))
                    .or_default()
                    .push(current.clone());
            }
            if current.is_empty() {
                continue;
            }
            self.process_taint_eviction(node, &observed, instant).await;
            let retry = self.state.lock().pods_to_retry.contains(&name);
            if current != "True" && previous == "True" {
                self.recorder.event(
                    &node_ref(node),
                    EventType::Normal,
                    "NodeNotReady",
                    format!("Node {name} status is now: NodeNotReady"),
                );
            }
            if current != "True" && (previous == "True" || retry) {
                let ok = self.mark_pods_not_ready(&name).await;
                let mut st = self.state.lock();
                if ok {
                    st.pods_to_retry.remove(&name);
                } else {
                    st.pods_to_retry.insert(name.clone());
                }
            }
            if let Some(h) = self.state.lock().health.get_mut(&name) {
                h.ready_status = current;
            }
        }
        self.handle_disruption(zone_statuses, &nodes, instant).await;
    }

    /// RegisteredNode / RemovingNode events and per-zone queues for nodes that come and go.
    fn track_membership(&self, nodes: &[Arc<Node>], now: Instant) {
        let mut st = self.state.lock();
        let present: HashSet<&str> = nodes.iter().map(|n| name_of(n)).collect();
        let gone: Vec<String> = st
            .health
            .keys()
            .filter(|n| !present.contains(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            st.health.remove(&name);
            st.pods_to_retry.remove(&name);
            for q in st.tainters.values_mut() {
                q.remove(&name);
            }
            let node_ref = ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(name.clone()),
                ..Default::default()
            };
            self.recorder.event(
                &node_ref,
                EventType::Normal,
                "RemovingNode",
                format!("Node {name} event: Removing Node {name} from Controller"),
            );
        }
        for node in nodes {
            let name = name_of(node);
            if !st.health.contains_key(name) {
                self.recorder.event(
                    &node_ref(node),
                    EventType::Normal,
                    "RegisteredNode",
                    format!("Node {name} event: Registered Node {name} in Controller"),
                );
            }
            let qps = self.settings.node_eviction_rate;
            st.tainters
                .entry(zone_of(node))
                .or_insert_with(|| TaintQueue::new(qps, now));
        }
    }

    /// Queues (or swaps, or removes) the NoExecute taint a node's observed Ready status calls for.
    async fn process_taint_eviction(&self, node: &Node, observed: &str, now: Instant) {
        let name = name_of(node);
        let zone = zone_of(node);
        let (wanted, other) = match observed {
            "False" => (NOT_READY, UNREACHABLE),
            "Unknown" => (UNREACHABLE, NOT_READY),
            "True" => {
                if let Err(err) = self.mark_reachable(node).await {
                    tracing::warn!("{err:#}");
                }
                return;
            }
            _ => return,
        };
        if taints::has_taint(node, other, NO_EXECUTE) {
            // Already evicting: only the reason changed, no need to wait for the limiter.
            if let Some(next) = taints::swap_no_execute(
                taints::taints(node),
                Some(wanted),
                &[other],
                Timestamp::now(),
            ) && let Err(err) = writes::set_taints(&self.client, node, &next).await
            {
                tracing::warn!("{err:#}");
            }
            return;
        }
        let mut st = self.state.lock();
        let qps = self.settings.node_eviction_rate;
        let q = st
            .tainters
            .entry(zone)
            .or_insert_with(|| TaintQueue::new(qps, now));
        if !taints::has_taint(node, wanted, NO_EXECUTE) {
            // Tainted before but the taint is gone: queue it again.
            q.remove(name);
        }
        q.add(name, now);
    }

    async fn mark_reachable(&self, node: &Node) -> anyhow::Result<()> {
        let name = name_of(node);
        for q in self.state.lock().tainters.values_mut() {
            q.remove(name);
        }
        if let Some(next) = taints::swap_no_execute(
            taints::taints(node),
            None,
            &[NOT_READY, UNREACHABLE],
            Timestamp::now(),
        ) {
            writes::set_taints(&self.client, node, &next).await?;
        }
        Ok(())
    }

    /// Applies the NoExecute taints the zone limiters admit now.
    pub async fn taint_pass(&self) {
        let now = Instant::now();
        let due: Vec<(String, String)> = {
            let mut st = self.state.lock();
            st.tainters
                .iter_mut()
                .flat_map(|(zone, q)| q.pop_due(now).into_iter().map(|n| (zone.clone(), n)))
                .collect()
        };
        for (zone, name) in due {
            let Some(node) = self.nodes.get(&name) else {
                continue;
            };
            let (add, remove) = match health::ready_status(&node).as_str() {
                "False" => (NOT_READY, UNREACHABLE),
                "Unknown" => (UNREACHABLE, NOT_READY),
                _ => continue,
            };
            let Some(next) = taints::swap_no_execute(
                taints::taints(&node),
                Some(add),
                &[remove],
                Timestamp::now(),
            ) else {
                continue;
            };
            if let Err(err) = writes::set_taints(&self.client, &node, &next).await {
                tracing::warn!("{err:#}");
                if let Some(q) = self.state.lock().tainters.get_mut(&zone) {
                    q.retry(name, now, TAINT_RETRY);
                }
            }
        }
    }

    /// Upstream's MarkPodsNotReady: the pods of a node that stopped being ready are not ready
    /// either. Returns whether every pod was handled.
    async fn mark_pods_not_ready(&self, node: &str) -> bool {
        let pods = self
            .pods
            .by_index(super::PODS_BY_NODE, node)
            .unwrap_or_default();
        let mut ok = true;
        for pod in pods {
            let ready = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
            if ready.is_none_or(|c| c.status == "False") {
                continue;
            }
            let condition = json!({
                "type": "Ready", "status": "False",
                "lastTransitionTime": Timestamp::now().to_string(),
            });
            match writes::set_pod_condition(&self.client, &pod, condition).await {
                Ok(()) => self.recorder.event(
                    &pod_ref(&pod),
                    EventType::Warning,
                    "NodeNotReady",
                    "Node is not ready",
                ),
                Err(err) if writes::is_not_found(&err) => {}
                Err(err) => {
                    tracing::warn!("{err:#}");
                    ok = false;
                }
            }
        }
        ok
    }

    /// Zone states and their tainting rates; when every zone is fully disrupted the controller
    /// assumes it is the one cut off and stops evicting everywhere.
    async fn handle_disruption(
        &self,
        zone_statuses: HashMap<String, Vec<String>>,
        nodes: &[Arc<Node>],
        now: Instant,
    ) {
        let s = &self.settings;
        let new_states: HashMap<String, (usize, ZoneState)> = zone_statuses
            .iter()
            .map(|(zone, statuses)| {
                let (_, state) = zones::zone_state(statuses, s.unhealthy_zone_threshold);
                (zone.clone(), (statuses.len(), state))
            })
            .collect();
        let entering = {
            let mut st = self.state.lock();
            for zone in new_states.keys() {
                st.zone_states
                    .entry(zone.clone())
                    .or_insert(ZoneState::Initial);
            }
            st.zone_states
                .retain(|zone, _| new_states.contains_key(zone));
            st.tainters.retain(|zone, _| new_states.contains_key(zone));
            let previous: Vec<ZoneState> = st.zone_states.values().copied().collect();
            let current: Vec<ZoneState> = new_states.values().map(|(_, s)| *s).collect();
            match zones::disruption(&previous, &current) {
                Disruption::Ongoing => false,
                Disruption::Entering => {
                    tracing::warn!("all nodes are not ready: entering master disruption mode");
                    for state in st.zone_states.values_mut() {
                        *state = ZoneState::FullDisruption;
                    }
                    for q in st.tainters.values_mut() {
                        q.limiter.set_qps(0.0, now);
                    }
                    true
                }
                mode => {
                    if mode == Disruption::Exiting {
                        tracing::info!("a node is ready again: exiting master disruption mode");
                        let probe = Timestamp::now();
                        for h in st.health.values_mut() {
                            h.probe = probe;
                        }
                    }
                    for (zone, (size, state)) in &new_states {
                        let qps = zones::zone_qps(
                            *state,
                            *size,
                            s.node_eviction_rate,
                            s.secondary_node_eviction_rate,
                            s.large_cluster_size_threshold,
                        );
                        if let Some(q) = st.tainters.get_mut(zone) {
                            q.limiter.set_qps(qps, now);
                        }
                        if st.zone_states.insert(zone.clone(), *state) != Some(*state) {
                            tracing::info!(zone = %zone, ?state, "zone state changed");
                        }
                    }
                    false
                }
            }
        };
        if entering {
            for node in nodes {
                if let Err(err) = self.mark_reachable(node).await {
                    tracing::warn!("{err:#}");
                }
            }
        }
    }
}
