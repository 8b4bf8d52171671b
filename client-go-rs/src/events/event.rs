//! The event as the recorder sees it, and its two wire forms.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource, ObjectReference};
use k8s_openapi::api::events::v1::{Event as EventsV1Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};

/// An event's type: upstream allows only these two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Nothing to worry about.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event after correlation, independent of the API it is written to.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEvent {
    /// `<regarding name>.<hex nanoseconds>`, as upstream, fixed for the event's lifetime.
    pub name: String,
    /// The regarding object's namespace, or `default` for cluster-scoped objects.
    pub namespace: String,
    /// The object the event is about.
    pub regarding: ObjectReference,
    /// A second object involved, if any.
    pub related: Option<ObjectReference>,
    /// Normal or Warning.
    pub type_: EventType,
    /// Short machine-readable reason (`FailedScheduling`).
    pub reason: String,
    /// What was done or failed (`Binding`).
    pub action: String,
    /// Human-readable message.
    pub note: String,
    /// The controller that emits it (`default-scheduler`).
    pub reporting_controller: String,
    /// This controller instance (usually its identity or host name).
    pub reporting_instance: String,
    /// How many times it was observed (1 for a new event).
    pub count: i32,
    /// First observation.
    pub first_timestamp: Timestamp,
    /// Latest observation.
    pub last_timestamp: Timestamp,
}

impl RecordedEvent {
    /// The events.k8s.io/v1 form: a `series` appears once the event repeated.
    pub fn to_events_v1(&self) -> EventsV1Event {
        EventsV1Event {
            metadata: self.metadata(),
            event_time: Some(MicroTime(self.first_timestamp)),
            regarding: Some(self.regarding.clone()),
            related: self.related.clone(),
            type_: Some(self.type_.as_str().to_owned()),
            reason: Some(self.reason.clone()),
            action: Some(self.action.clone()),
            note: Some(self.note.clone()),
            reporting_controller: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            series: self.series(),
            ..Default::default()
        }
    }

    /// The core/v1 form, with `count` and first/last timestamps.
    pub fn to_core_v1(&self) -> CoreEvent {
        CoreEvent {
            metadata: self.metadata(),
            involved_object: self.regarding.clone(),
            related: self.related.clone(),
            type_: Some(self.type_.as_str().to_owned()),
            reason: Some(self.reason.clone()),
            action: Some(self.action.clone()),
            message: Some(self.note.clone()),
            source: Some(EventSource {
                component: Some(self.reporting_controller.clone()),
                host: None,
            }),
            reporting_component: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            count: Some(self.count),
            first_timestamp: Some(Time(self.first_timestamp)),
            last_timestamp: Some(Time(self.last_timestamp)),
            ..Default::default()
        }
    }

    /// The events.k8s.io/v1 series, present once the event has repeated.
    pub fn series(&self) -> Option<EventSeries> {
        (self.count > 1).then_some(EventSeries {
            count: self.count,
            last_observed_time: MicroTime(self.last_timestamp),
        })
    }

    fn metadata(&self) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            ..Default::default()
        }
    }
}

/// Upstream's event name: the object's name and the time in hex nanoseconds.
pub(crate) fn event_name(regarding: &ObjectReference, at: Timestamp) -> String {
    format!(
        "{}.{:x}",
        regarding.name.as_deref().unwrap_or_default(),
        at.as_nanosecond().max(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(count: i32) -> RecordedEvent {
        let regarding = ObjectReference {
            kind: Some("Pod".into()),
            name: Some("p".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        };
        RecordedEvent {
            name: event_name(&regarding, Timestamp::from_second(1).unwrap()),
            namespace: "ns".into(),
            regarding,
            related: None,
            type_: EventType::Warning,
            reason: "BackOff".into(),
            action: "Pulling".into(),
            note: "n".into(),
            reporting_controller: "kubelet".into(),
            reporting_instance: "node-1".into(),
            count,
            first_timestamp: Timestamp::from_second(1).unwrap(),
            last_timestamp: Timestamp::from_second(5).unwrap(),
        }
    }

    #[test]
    fn name_is_object_name_and_hex_nanoseconds() {
        assert_eq!(sample(1).name, "p.3b9aca00");
    }

    #[test]
    fn wire_forms_carry_the_fields() {
        let v1 = sample(1).to_events_v1();
        assert_eq!(v1.reporting_controller.as_deref(), Some("kubelet"));
        assert_eq!(v1.type_.as_deref(), Some("Warning"));
        assert!(v1.series.is_none());
        let v1 = sample(3).to_events_v1();
        assert_eq!(v1.series.map(|s| s.count), Some(3));
        let core = sample(3).to_core_v1();
        assert_eq!(core.count, Some(3));
        assert_eq!(core.message.as_deref(), Some("n"));
        assert_eq!(core.involved_object.name.as_deref(), Some("p"));
    }
}
