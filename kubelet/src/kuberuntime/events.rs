//! The events the runtime manager reports while it works on a pod (upstream's Pulling, Pulled,
//! Created, Started, Killing, BackOff, Failed...), handed to whatever recorder the kubelet
//! installs; none is installed by default. [`api_recorder`] turns the kubelet's client-go-rs
//! recorder into one, so events reach the apiserver on the pod as involvedObject.

use super::RuntimeManager;
use client_go_rs::events::EventType;
use k8s_openapi::api::core::v1::{Container, ObjectReference, Pod};
use std::sync::Arc;

/// One event about a pod, or one of its containers when `field_path` is set
/// (`spec.containers{name}`, `spec.initContainers{name}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeEvent {
    pub pod_uid: String,
    pub pod_name: String,
    pub pod_namespace: String,
    pub field_path: String,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

pub type EventRecorder = Arc<dyn Fn(RuntimeEvent) + Send + Sync>;

pub const NORMAL: &str = "Normal";
pub const WARNING: &str = "Warning";

/// Upstream's field path of a container inside its pod.
pub fn field_path(pod: &Pod, container: &str) -> String {
    let is_init = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .is_some_and(|inits| inits.iter().any(|c| c.name == container));
    if is_init {
        format!("spec.initContainers{{{container}}}")
    } else {
        format!("spec.containers{{{container}}}")
    }
}

/// The pod (and container, through `fieldPath`) an event is about, as upstream's
/// `ref.GetReference` makes it.
pub fn pod_reference(event: &RuntimeEvent) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(event.pod_name.clone()),
        namespace: Some(event.pod_namespace.clone()),
        uid: Some(event.pod_uid.clone()),
        field_path: (!event.field_path.is_empty()).then(|| event.field_path.clone()),
        ..Default::default()
    }
}

/// A recorder writing the runtime's (and volumes', probes') events through client-go-rs.
pub fn api_recorder(recorder: client_go_rs::events::EventRecorder) -> EventRecorder {
    Arc::new(move |event: RuntimeEvent| {
        let type_ = if event.type_ == WARNING {
            EventType::Warning
        } else {
            EventType::Normal
        };
        recorder.event(&pod_reference(&event), type_, event.reason, event.message);
    })
}

/// Event reasons are a small fixed vocabulary (`OutOfcpu`, `NodeAffinity`, ...): each distinct
/// one is kept once for the process's life, so events can keep `&'static str` reasons.
fn intern(reason: &str) -> &'static str {
    static SEEN: parking_lot::Mutex<Vec<&'static str>> = parking_lot::Mutex::new(Vec::new());
    let mut seen = SEEN.lock();
    if let Some(r) = seen.iter().find(|r| **r == reason) {
        return r;
    }
    let r: &'static str = Box::leak(reason.to_owned().into_boxed_str());
    seen.push(r);
    r
}

impl RuntimeManager {
    /// Installs the recorder events go to (the kubelet's event recorder).
    pub fn set_event_recorder(&self, recorder: EventRecorder) {
        *self.events.write() = Some(recorder);
    }

    /// Records an event about a pod through the installed recorder, for the rest of the
    /// kubelet (e.g. an admission rejection: `Warning`, the rejection's reason and message).
    pub fn pod_event(&self, pod: &Pod, warning: bool, reason: &str, message: String) {
        let type_ = if warning { WARNING } else { NORMAL };
        self.event(pod, None, type_, intern(reason), message);
    }

    pub(super) fn event(
        &self,
        pod: &Pod,
        container: Option<&Container>,
        type_: &'static str,
        reason: &'static str,
        message: String,
    ) {
        let Some(recorder) = self.events.read().clone() else {
            return;
        };
        recorder(RuntimeEvent {
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            pod_namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            field_path: container.map_or_else(String::new, |c| field_path(pod, &c.name)),
            type_,
            reason,
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_name_init_and_regular_containers() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}
        }))
        .unwrap();
        assert_eq!(field_path(&pod, "i"), "spec.initContainers{i}");
        assert_eq!(field_path(&pod, "c"), "spec.containers{c}");
    }

    #[test]
    fn reasons_are_interned_once() {
        let a = intern(&String::from("OutOfcpu"));
        let b = intern(&String::from("OutOfcpu"));
        assert!(std::ptr::eq(a, b));
        assert_eq!(intern("Taint"), "Taint");
    }

    #[test]
    fn references_name_the_pod_and_the_container() {
        let mut event = RuntimeEvent {
            pod_uid: "u".into(),
            pod_name: "p".into(),
            pod_namespace: "ns".into(),
            field_path: "spec.containers{c}".into(),
            type_: NORMAL,
            reason: "Pulled",
            message: String::new(),
        };
        let r = pod_reference(&event);
        assert_eq!(
            (r.kind.as_deref(), r.name.as_deref(), r.namespace.as_deref()),
            (Some("Pod"), Some("p"), Some("ns"))
        );
        assert_eq!(r.field_path.as_deref(), Some("spec.containers{c}"));
        event.field_path.clear();
        assert_eq!(pod_reference(&event).field_path, None);
    }
}
