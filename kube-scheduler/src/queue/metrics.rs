//! The queue's Prometheus series, named as upstream's: `scheduler_pending_pods` by sub-queue,
//! `scheduler_queue_incoming_pods_total` by sub-queue and the event that moved the pod, and
//! `scheduler_unschedulable_pods` by the plugin that rejected them.

use metrics::Gauge;

pub const ACTIVE: &str = "active";
pub const BACKOFF: &str = "backoff";
pub const UNSCHEDULABLE: &str = "unschedulable";
pub const GATED: &str = "gated";

/// Handles to the pending-pods gauges, resolved once.
pub struct PendingGauges {
    active: Gauge,
    backoff: Gauge,
    unschedulable: Gauge,
    gated: Gauge,
}

impl Default for PendingGauges {
    fn default() -> Self {
        Self::new()
    }
}

impl PendingGauges {
    pub fn new() -> Self {
        let g = |q: &'static str| metrics::gauge!("scheduler_pending_pods", "queue" => q);
        Self {
            active: g(ACTIVE),
            backoff: g(BACKOFF),
            unschedulable: g(UNSCHEDULABLE),
            gated: g(GATED),
        }
    }

    pub fn set(&self, active: usize, backoff: usize, unschedulable: usize, gated: usize) {
        self.active.set(active as f64);
        self.backoff.set(backoff as f64);
        self.unschedulable.set(unschedulable as f64);
        self.gated.set(gated as f64);
    }
}

pub fn incoming(queue: &'static str, event: &'static str) {
    metrics::counter!("scheduler_queue_incoming_pods_total", "queue" => queue, "event" => event)
        .increment(1);
}

/// Counts (`delta` = 1) or uncounts (-1) a pending pod's rejection by `plugin`.
pub fn unschedulable_reason(plugin: &str, profile: &str, delta: f64) {
    metrics::gauge!(
        "scheduler_unschedulable_pods",
        "plugin" => plugin.to_string(),
        "profile" => profile.to_string()
    )
    .increment(delta);
}
