//! Scoring a node by how a pod's requests would fill it (upstream's `resourceAllocationScorer`):
//! the resources and weights come from the plugin's args, the strategy turns the per-resource
//! (requested, allocatable) pairs into one score.

use super::balanced_allocation::balanced_resource_score;
use super::least_allocated::least_resource_score;
use super::most_allocated::most_resource_score;
use super::requested_to_capacity_ratio::Shape;
use crate::apis::config::args::ResourceSpec;
use crate::framework::resource::{CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name};
use crate::framework::{NodeInfo, PodInfo, Status};

/// How the per-resource amounts become a score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio(Shape),
    BalancedAllocation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ResourceKind {
    Cpu,
    Memory,
    EphemeralStorage,
    /// Extended resources, hugepages, attachable volumes: scored only when the pod asks.
    Scalar,
    /// Anything else (e.g. `pods`): looked up among the node's scalar amounts, as upstream.
    Other,
}

/// One scored resource with its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoredResource {
    pub name: String,
    pub weight: i64,
    kind: ResourceKind,
}

/// Scores nodes for one plugin's resources and strategy.
#[derive(Debug, Clone)]
pub struct ResourceAllocationScorer {
    resources: Vec<ScoredResource>,
    weights: Vec<i64>,
    /// Use the pods' actual requests; otherwise scoring's defaults for unset CPU and memory.
    use_requested: bool,
    strategy: Strategy,
}

/// Up to this many resources are scored without a heap allocation per node.
const INLINE_RESOURCES: usize = 8;

impl ResourceAllocationScorer {
    pub fn new(specs: &[ResourceSpec], use_requested: bool, strategy: Strategy) -> Self {
        let resources: Vec<ScoredResource> = specs
            .iter()
            .map(|s| ScoredResource {
                name: s.name.clone(),
                // An unset weight means 1, as upstream's defaulting.
                weight: if s.weight == 0 { 1 } else { s.weight },
                kind: match s.name.as_str() {
                    CPU => ResourceKind::Cpu,
                    MEMORY => ResourceKind::Memory,
                    EPHEMERAL_STORAGE => ResourceKind::EphemeralStorage,
                    n if is_scalar_resource_name(n) => ResourceKind::Scalar,
                    _ => ResourceKind::Other,
                },
            })
            .collect();
        let weights = resources.iter().map(|r| r.weight).collect();
        Self {
            resources,
            weights,
            use_requested,
            strategy,
        }
    }

    pub fn resources(&self) -> &[ScoredResource] {
        &self.resources
    }

    /// The pod's request of each scored resource (once per cycle, in PreScore).
    pub fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        let req = if self.use_requested {
            &pod.requests
        } else {
            &pod.non_zero_requests
        };
        self.resources.iter().map(|r| req.get(&r.name)).collect()
    }

    /// The node's (allocatable, requested with the pod) of one resource; (0, 0) leaves it out.
    fn allocatable_and_requested(
        &self,
        node: &NodeInfo,
        r: &ScoredResource,
        pod_request: i64,
    ) -> (i64, i64) {
        let requested = if self.use_requested {
            &node.requested
        } else {
            &node.non_zero_requested
        };
        match r.kind {
            ResourceKind::Cpu => (
                node.allocatable.milli_cpu,
                requested.milli_cpu + pod_request,
            ),
            ResourceKind::Memory => (node.allocatable.memory, requested.memory + pod_request),
            ResourceKind::EphemeralStorage => (
                node.allocatable.ephemeral_storage,
                node.requested.ephemeral_storage + pod_request,
            ),
            // A scalar resource the pod does not ask for says nothing about this pod's fit.
            ResourceKind::Scalar if pod_request == 0 => (0, 0),
            ResourceKind::Scalar | ResourceKind::Other => {
                match node.allocatable.scalar.get(&r.name) {
                    Some(alloc) => (
                        *alloc,
                        node.requested.scalar.get(&r.name).copied().unwrap_or(0) + pod_request,
                    ),
                    None => (0, 0),
                }
            }
        }
    }

    /// The node's score for a pod whose requests are `pod_requests` (see [`Self::pod_requests`]).
    pub fn score(&self, node: &NodeInfo, pod_requests: &[i64]) -> (i64, Status) {
        let n = self.resources.len();
        if n == 0 {
            return (0, Status::error("resources not found"));
        }
        if pod_requests.len() != n {
            return (
                0,
                Status::error("pod requests do not match the scored resources"),
            );
        }
        if n <= INLINE_RESOURCES {
            let mut requested = [0i64; INLINE_RESOURCES];
            let mut allocatable = [0i64; INLINE_RESOURCES];
            self.fill(
                node,
                pod_requests,
                &mut requested[..n],
                &mut allocatable[..n],
            );
            (
                self.apply(&requested[..n], &allocatable[..n]),
                Status::success(),
            )
        } else {
            let (mut requested, mut allocatable) = (vec![0i64; n], vec![0i64; n]);
            self.fill(node, pod_requests, &mut requested, &mut allocatable);
            (self.apply(&requested, &allocatable), Status::success())
        }
    }

    fn fill(
        &self,
        node: &NodeInfo,
        pod_requests: &[i64],
        requested: &mut [i64],
        allocatable: &mut [i64],
    ) {
        for (i, r) in self.resources.iter().enumerate() {
            let (alloc, req) = self.allocatable_and_requested(node, r, pod_requests[i]);
            if alloc != 0 {
                allocatable[i] = alloc;
                requested[i] = req;
            }
        }
    }

    fn apply(&self, requested: &[i64], allocatable: &[i64]) -> i64 {
        match &self.strategy {
            Strategy::LeastAllocated => least_resource_score(&self.weights, requested, allocatable),
            Strategy::MostAllocated => most_resource_score(&self.weights, requested, allocatable),
            Strategy::RequestedToCapacityRatio(shape) => {
                shape.score(&self.weights, requested, allocatable)
            }
            Strategy::BalancedAllocation => balanced_resource_score(requested, allocatable),
        }
    }
}
