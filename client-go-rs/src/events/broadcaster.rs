//! The broadcaster: recorders hand events to a bounded channel; one background task
//! correlates them and writes them to the sink, so callers never block.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::correlator::{Correlated, CorrelatorOptions, EventCorrelator};
use super::event::{EventType, RecordedEvent};
use super::sink::{EventSink, SinkError};

/// Tuning of a broadcaster; the defaults are client-go's.
#[derive(Debug, Clone)]
pub struct BroadcasterOptions {
    /// Events queued before recorders start dropping them (1000).
    pub queue_capacity: usize,
    /// Attempts to write one event before giving up (12).
    pub max_tries: u32,
    /// Pause between attempts (10 s; the first one randomised so that many processes
    /// failing together do not retry together).
    pub retry_interval: Duration,
    /// Aggregation and spam-filter limits.
    pub correlator: CorrelatorOptions,
}

impl Default for BroadcasterOptions {
    fn default() -> Self {
        Self {
            queue_capacity: 1000,
            max_tries: 12,
            retry_interval: Duration::from_secs(10),
            correlator: CorrelatorOptions::default(),
        }
    }
}

/// Owns the background task writing events; make recorders with
/// [`EventBroadcaster::new_recorder`].
pub struct EventBroadcaster {
    tx: mpsc::Sender<RecordedEvent>,
    task: JoinHandle<()>,
}

impl EventBroadcaster {
    /// A broadcaster writing to `sink` with client-go's defaults.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its writer task).
    pub fn new(sink: Arc<dyn EventSink>) -> Self {
        Self::with_options(sink, BroadcasterOptions::default())
    }

    /// A broadcaster writing to `sink`.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn with_options(sink: Arc<dyn EventSink>, options: BroadcasterOptions) -> Self {
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let task = tokio::spawn(write_loop(rx, sink, options));
        Self { tx, task }
    }

    /// A recorder for `reporting_controller` (e.g. `default-scheduler`) and
    /// `reporting_instance` (e.g. its identity).
    pub fn new_recorder(
        &self,
        reporting_controller: impl Into<String>,
        reporting_instance: impl Into<String>,
    ) -> EventRecorder {
        EventRecorder {
            tx: self.tx.clone(),
            reporting_controller: reporting_controller.into(),
            reporting_instance: reporting_instance.into(),
        }
    }

    /// Stops accepting events from this broadcaster's handle and waits until everything
    /// queued has been written. Recorders still alive keep the channel open: drop them
    /// first, or their later events are written too before this returns.
    pub async fn shutdown(self) {
        drop(self.tx);
        if let Err(err) = self.task.await {
            tracing::warn!(error = %err, "event writer task failed");
        }
    }
}

/// Records events about objects; cheap to clone, never blocks.
#[derive(Clone)]
pub struct EventRecorder {
    tx: mpsc::Sender<RecordedEvent>,
    reporting_controller: String,
    reporting_instance: String,
}

impl EventRecorder {
    /// Records an event about `regarding`; the action is the reason.
    pub fn event(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: impl Into<String>,
    ) {
        self.event_with(regarding, None, type_, reason, reason, note);
    }

    /// Records an event with a related object and an explicit action (the events.k8s.io
    /// recorder's `Eventf`; format the note with `format!`).
    pub fn event_with(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: impl Into<String>,
    ) {
        let now = Timestamp::now();
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let event = RecordedEvent {
            // Named by the correlator, which knows whether this repeats an earlier event.
            name: String::new(),
            namespace,
            regarding: regarding.clone(),
            related: related.cloned(),
            type_,
            reason: reason.to_owned(),
            action: action.to_owned(),
            note: note.into(),
            reporting_controller: self.reporting_controller.clone(),
            reporting_instance: self.reporting_instance.clone(),
            count: 1,
            first_timestamp: now,
            last_timestamp: now,
        };
        // As client-go's broadcaster: when the queue is full the event is dropped rather
        // than blocking the caller.
        if let Err(err) = self.tx.try_send(event) {
            tracing::warn!(reason, error = %err, "dropping event");
        }
    }
}

async fn write_loop(
    mut rx: mpsc::Receiver<RecordedEvent>,
    sink: Arc<dyn EventSink>,
    options: BroadcasterOptions,
) {
    let mut correlator = EventCorrelator::new(options.correlator.clone());
    while let Some(event) = rx.recv().await {
        match correlator.correlate(event) {
            Correlated::Skip => {
                tracing::debug!("event dropped by the spam filter");
            }
            Correlated::Create(event) => write_with_retries(&*sink, event, false, &options).await,
            Correlated::Update(event) => write_with_retries(&*sink, event, true, &options).await,
        }
    }
}

async fn write_with_retries(
    sink: &dyn EventSink,
    event: RecordedEvent,
    mut update: bool,
    options: &BroadcasterOptions,
) {
    for attempt in 1..=options.max_tries.max(1) {
        let result = if update {
            sink.update(&event).await
        } else {
            sink.create(&event).await
        };
        match result {
            Ok(()) | Err(SinkError::AlreadyExists) => return,
            // The event expired on the server: write it afresh, count included.
            Err(SinkError::NotFound) if update => {
                update = false;
                match sink.create(&event).await {
                    Ok(()) | Err(SinkError::AlreadyExists) => return,
                    Err(SinkError::Transient(err)) => {
                        tracing::warn!(error = %err, attempt, "unable to write event");
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "event rejected, not retrying");
                        return;
                    }
                }
            }
            Err(SinkError::Transient(err)) => {
                tracing::warn!(error = %err, attempt, "unable to write event");
            }
            Err(err) => {
                tracing::warn!(error = %err, "event rejected, not retrying");
                return;
            }
        }
        if attempt == 1 {
            let first = options.retry_interval.mul_f64(rand::random::<f64>());
            tokio::time::sleep(first).await;
        } else {
            tokio::time::sleep(options.retry_interval).await;
        }
    }
    tracing::warn!(name = %event.name, "giving up writing event");
}
