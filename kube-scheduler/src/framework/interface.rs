//! The plugin interfaces of upstream's scheduling framework, one trait per extension point.
//! A plugin is one `Arc<dyn Plugin>`; it says which points it implements through the `as_*`
//! accessors, so the framework can list it at each point its profile enables.

use super::cycle_state::CycleState;
use super::events::ClusterEventWithHint;
use super::node_info::NodeInfo;
use super::pod_info::PodInfo;
use super::runtime::Framework;
use super::snapshot::Snapshot;
use super::status::Status;
use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The highest score a Score plugin may give after normalization.
pub const MAX_NODE_SCORE: i64 = 100;
pub const MIN_NODE_SCORE: i64 = 0;

/// A pod waiting in the scheduling queue, with its attempts and timestamps.
#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    pub pod_info: Arc<PodInfo>,
    /// When it entered the queue this time (QueueSort's tie breaker).
    pub timestamp: Instant,
    /// Scheduling attempts so far (backoff grows with them).
    pub attempts: u32,
    /// When it first entered the queue (the scheduling SLI's start).
    pub initial_attempt_timestamp: Option<Instant>,
    /// Plugins that rejected it last time (their events move it back).
    pub unschedulable_plugins: HashSet<String>,
    /// Plugins that returned Pending (PreEnqueue) last time.
    pub pending_plugins: HashSet<String>,
    /// PreEnqueue's answer when it is gated.
    pub gated: bool,
    /// Consecutive errors (not rejections), for the backoff.
    pub consecutive_errors: u32,
}

impl QueuedPodInfo {
    pub fn new(pod_info: Arc<PodInfo>, now: Instant) -> Self {
        Self {
            pod_info,
            timestamp: now,
            attempts: 0,
            initial_attempt_timestamp: None,
            unschedulable_plugins: HashSet::new(),
            pending_plugins: HashSet::new(),
            gated: false,
            consecutive_errors: 0,
        }
    }

    pub fn pod(&self) -> &Pod {
        &self.pod_info.pod
    }
}

/// Every plugin: its name, the events it cares about, and which extension points it implements.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// The cluster events that may make a pod it rejected schedulable (EnqueueExtensions).
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        Vec::new()
    }

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        None
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        None
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        None
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        None
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        None
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        None
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        None
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        None
    }
    fn as_post_bind(&self) -> Option<&dyn PostBindPlugin> {
        None
    }
}

/// Decides whether a pod may enter the active queue at all (scheduling gates).
pub trait PreEnqueuePlugin: Send + Sync {
    fn pre_enqueue(&self, pod: &Pod) -> Status;
}

/// Orders the active queue.
pub trait QueueSortPlugin: Send + Sync {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;
}

/// The nodes a PreFilter limits the cycle to (`None` = all nodes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    pub node_names: Option<HashSet<String>>,
}

impl PreFilterResult {
    pub fn all_nodes(&self) -> bool {
        self.node_names.is_none()
    }

    /// Intersection of two results.
    pub fn merge(&self, other: &PreFilterResult) -> PreFilterResult {
        match (&self.node_names, &other.node_names) {
            (None, x) | (x, None) => PreFilterResult {
                node_names: x.clone(),
            },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(b).cloned().collect()),
            },
        }
    }
}

/// Computes per-cycle state once before Filter runs on each node.
pub trait PreFilterPlugin: Send + Sync {
    /// Returns `Skip` to have this plugin's Filter skipped for this pod.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// Incremental updates of the PreFilter state when preemption simulates adding or removing
    /// a pod on a node; `None` when the plugin's state does not depend on other pods.
    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        None
    }
}

pub trait PreFilterExtensions: Send + Sync {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
}

/// Whether the pod can run on one node. Called in parallel over nodes.
pub trait FilterPlugin: Send + Sync {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
}

/// Each node's Filter outcome of a failed cycle (PostFilter and the failure message read it).
pub type NodeToStatus = HashMap<String, Status>;

/// What PostFilter achieved (preemption: the node to nominate).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostFilterResult {
    pub nominated_node_name: Option<String>,
}

/// Runs after no node passed Filter (preemption).
#[async_trait]
pub trait PostFilterPlugin: Send + Sync {
    async fn post_filter(
        &self,
        fw: &Framework,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status);
}

/// Computes per-cycle state once before Score runs on each feasible node.
pub trait PreScorePlugin: Send + Sync {
    /// Returns `Skip` to have this plugin's Score skipped for this pod.
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        snapshot: &Snapshot,
    ) -> Status;
}

/// One node's score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeScore {
    pub name: Arc<str>,
    pub score: i64,
}

/// Ranks a feasible node, 0..=100 after normalization. Called in parallel over nodes.
pub trait ScorePlugin: Send + Sync {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status);

    /// Rescales the raw scores into 0..=100 (ScoreExtensions); the default keeps them.
    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _scores: &mut [NodeScore],
    ) -> Status {
        Status::success()
    }
}

/// Holds or releases resources for a pod once its node is chosen (VolumeBinding's assumptions).
pub trait ReservePlugin: Send + Sync {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status;
    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str);
}

/// Approves, refuses or delays binding.
pub trait PermitPlugin: Send + Sync {
    /// A `Wait` status with the timeout to wait at most.
    fn permit(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> (Status, Duration);
}

/// Work before the binding (VolumeBinding binds the claims).
#[async_trait]
pub trait PreBindPlugin: Send + Sync {
    async fn pre_bind(&self, state: &CycleState, pod: &PodInfo, node_name: &str) -> Status;
}

/// Binds the pod; `Skip` passes to the next binder.
#[async_trait]
pub trait BindPlugin: Send + Sync {
    async fn bind(&self, state: &CycleState, pod: &PodInfo, node_name: &str) -> Status;
}

/// Informational, after a successful binding.
pub trait PostBindPlugin: Send + Sync {
    fn post_bind(&self, state: &CycleState, pod: &PodInfo, node_name: &str);
}
