//! The scheduler proper: the scheduling loop (one pod at a time, as upstream), the binding
//! cycles it starts in the background, failure handling, and the informer handlers that feed
//! the queue and the cache.

pub mod binding;
#[cfg(test)]
mod cycle_bench;
pub mod event_handlers;
pub mod failure;
pub mod find_nodes;
pub mod metrics;
pub mod schedule_one;

use crate::cache::Cache;
use crate::framework::{Framework, Snapshot};
use crate::queue::SchedulingQueue;
use client_go_rs::events::EventRecorder;
use client_go_rs::listers::Lister;
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::Arc;

/// What the scheduling loop and its binding tasks share.
pub struct Shared {
    pub cache: Arc<Cache>,
    pub queue: Arc<SchedulingQueue>,
    pub profiles: HashMap<String, Arc<Framework>>,
    pub client: kube::Client,
    /// One recorder per profile, reporting as the profile's scheduler name.
    pub recorders: HashMap<String, EventRecorder>,
    /// The pod informer's lister: failure handling re-reads the pod before requeueing it.
    pub pods: Lister<Pod>,
    /// Bounds the binding cycles in flight (see [`MAX_BINDINGS_IN_FLIGHT`]).
    pub binding_slots: Arc<tokio::sync::Semaphore>,
}

/// Binding cycles allowed at once. Our client speaks HTTP/1.1, one request per connection, so
/// every binding in flight holds a TLS connection; unbounded, a slow apiserver made the
/// scheduler open (and handshake) thousands. When all are busy the scheduling loop waits.
pub const MAX_BINDINGS_IN_FLIGHT: usize = 64;

/// The scheduling loop's own state (only it touches the snapshot and the start index).
pub struct Scheduler {
    pub shared: Arc<Shared>,
    pub percentage_of_nodes_to_score: i32,
    snapshot: Snapshot,
    next_start_node_index: usize,
}

impl Scheduler {
    pub fn new(shared: Arc<Shared>, percentage_of_nodes_to_score: i32) -> Self {
        Self {
            shared,
            percentage_of_nodes_to_score,
            snapshot: Snapshot::default(),
            next_start_node_index: 0,
        }
    }

    /// Schedules pods one at a time until the queue is closed.
    pub async fn run(mut self) {
        while let Some(qpi) = self.shared.queue.pop().await {
            self.schedule_one(qpi).await;
        }
    }
}
