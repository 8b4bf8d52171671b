//! Where events are written: a trait, kube-backed implementations of both APIs, and an
//! in-memory one for tests.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;

use super::event::RecordedEvent;

/// Why a write failed; decides whether the broadcaster retries.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The event to update is gone (expired): the broadcaster creates it again.
    #[error("event not found")]
    NotFound,
    /// An event with that name exists already: nothing left to do.
    #[error("event already exists")]
    AlreadyExists,
    /// The server refused the event (invalid, forbidden...): retrying cannot help.
    #[error("event rejected: {0}")]
    Rejected(String),
    /// A transport failure: worth retrying.
    #[error("event sink unavailable: {0}")]
    Transient(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Writes correlated events.
pub trait EventSink: Send + Sync {
    /// Creates a new event.
    fn create(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>>;
    /// Updates the count and last observation of an event already created.
    fn update(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>>;
}

fn map_kube_error(err: kube::Error) -> SinkError {
    match err {
        kube::Error::Api(status) if status.is_not_found() => SinkError::NotFound,
        kube::Error::Api(status) if status.is_already_exists() => SinkError::AlreadyExists,
        kube::Error::Api(status) => SinkError::Rejected(status.message.clone()),
        other => SinkError::Transient(Box::new(other)),
    }
}

/// Writes events.k8s.io/v1 Events; a repeat patches `series`.
pub struct KubeEventsV1Sink {
    client: kube::Client,
}

impl KubeEventsV1Sink {
    /// A sink writing through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

impl EventSink for KubeEventsV1Sink {
    fn create(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let api: Api<EventsV1Event> = Api::namespaced(self.client.clone(), &event.namespace);
        let body = event.to_events_v1();
        Box::pin(async move {
            api.create(&PostParams::default(), &body)
                .await
                .map(|_| ())
                .map_err(map_kube_error)
        })
    }

    fn update(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let api: Api<EventsV1Event> = Api::namespaced(self.client.clone(), &event.namespace);
        let name = event.name.clone();
        let patch = json!({ "series": event.series() });
        Box::pin(async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
                .map_err(map_kube_error)
        })
    }
}

/// Writes core/v1 Events; a repeat patches `count`, `lastTimestamp` and `message`.
pub struct KubeCoreV1Sink {
    client: kube::Client,
}

impl KubeCoreV1Sink {
    /// A sink writing through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

impl EventSink for KubeCoreV1Sink {
    fn create(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &event.namespace);
        let body = event.to_core_v1();
        Box::pin(async move {
            api.create(&PostParams::default(), &body)
                .await
                .map(|_| ())
                .map_err(map_kube_error)
        })
    }

    fn update(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &event.namespace);
        let name = event.name.clone();
        let core = event.to_core_v1();
        let patch = json!({
            "count": core.count,
            "lastTimestamp": core.last_timestamp,
            "message": core.message,
        });
        Box::pin(async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
                .map_err(map_kube_error)
        })
    }
}

/// One write seen by an [`InMemoryEventSink`].
#[derive(Debug, Clone, PartialEq)]
pub enum SinkWrite {
    /// A create.
    Create(RecordedEvent),
    /// An update of an existing event.
    Update(RecordedEvent),
}

/// Keeps events in memory, for tests of anything that records events.
#[derive(Default)]
pub struct InMemoryEventSink {
    state: Mutex<MemoryState>,
}

#[derive(Default)]
struct MemoryState {
    events: Vec<RecordedEvent>,
    writes: Vec<SinkWrite>,
}

impl InMemoryEventSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stored events, in creation order, with their latest count.
    pub fn events(&self) -> Vec<RecordedEvent> {
        self.state.lock().events.clone()
    }

    /// Every write, in order.
    pub fn writes(&self) -> Vec<SinkWrite> {
        self.state.lock().writes.clone()
    }
}

impl EventSink for InMemoryEventSink {
    fn create(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let result = {
            let mut st = self.state.lock();
            st.writes.push(SinkWrite::Create(event.clone()));
            let exists = st
                .events
                .iter()
                .any(|e| e.namespace == event.namespace && e.name == event.name);
            if exists {
                Err(SinkError::AlreadyExists)
            } else {
                st.events.push(event.clone());
                Ok(())
            }
        };
        Box::pin(async move { result })
    }

    fn update(&self, event: &RecordedEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        let result = {
            let mut st = self.state.lock();
            st.writes.push(SinkWrite::Update(event.clone()));
            match st
                .events
                .iter_mut()
                .find(|e| e.namespace == event.namespace && e.name == event.name)
            {
                Some(stored) => {
                    stored.count = event.count;
                    stored.last_timestamp = event.last_timestamp;
                    stored.note = event.note.clone();
                    Ok(())
                }
                None => Err(SinkError::NotFound),
            }
        };
        Box::pin(async move { result })
    }
}
