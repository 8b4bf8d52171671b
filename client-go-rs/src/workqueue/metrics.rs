//! Optional Prometheus-style metrics of a named queue, through the `metrics` facade.
//!
//! Names and the `name` label follow client-go's `workqueue_*` metrics so dashboards written
//! for Go controllers keep working. A queue without a name records nothing.

use metrics::{Counter, Gauge, Histogram};

/// Handles to the metrics of one named queue.
#[derive(Clone)]
pub(crate) struct QueueMetrics {
    pub(crate) depth: Gauge,
    pub(crate) adds: Counter,
    pub(crate) retries: Counter,
    pub(crate) queue_duration: Histogram,
    pub(crate) work_duration: Histogram,
}

impl QueueMetrics {
    /// Registers (or looks up) the metrics labelled with `name`.
    pub(crate) fn new(name: &str) -> Self {
        let name = name.to_owned();
        Self {
            depth: metrics::gauge!("workqueue_depth", "name" => name.clone()),
            adds: metrics::counter!("workqueue_adds_total", "name" => name.clone()),
            retries: metrics::counter!("workqueue_retries_total", "name" => name.clone()),
            queue_duration: metrics::histogram!(
                "workqueue_queue_duration_seconds", "name" => name.clone()
            ),
            work_duration: metrics::histogram!("workqueue_work_duration_seconds", "name" => name),
        }
    }
}
