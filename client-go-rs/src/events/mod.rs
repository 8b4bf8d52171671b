//! The event recorder, with client-go's behaviour: repeats of an event become one event with
//! a count, similar events (same reason, other messages) are combined after 10 within 10
//! minutes, each object may emit 25 events at once and one more every 5 minutes, and events
//! are written by a background task so recording never blocks.
//!
//! ```no_run
//! # async fn demo(client: kube::Client, pod: k8s_openapi::api::core::v1::ObjectReference) {
//! use std::sync::Arc;
//! use client_go_rs::events::{EventBroadcaster, EventType, KubeEventsV1Sink};
//! let broadcaster = EventBroadcaster::new(Arc::new(KubeEventsV1Sink::new(client)));
//! let recorder = broadcaster.new_recorder("default-scheduler", "scheduler-1");
//! recorder.event(&pod, EventType::Normal, "Scheduled", format!("assigned to {}", "node-1"));
//! # }
//! ```

mod broadcaster;
mod cache;
mod correlator;
mod event;
mod sink;

pub use broadcaster::{BroadcasterOptions, EventBroadcaster, EventRecorder};
pub use correlator::{COMBINED_PREFIX, Correlated, CorrelatorOptions, EventCorrelator};
pub use event::{EventType, RecordedEvent};
pub use sink::{
    EventSink, InMemoryEventSink, KubeCoreV1Sink, KubeEventsV1Sink, SinkError, SinkWrite,
};
