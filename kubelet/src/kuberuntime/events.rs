//! The events the runtime manager reports while it works on a pod (upstream's Pulling, Pulled,
//! Created, Started, Killing, BackOff, Failed...), handed to whatever recorder the kubelet
//! installs; none is installed by default.

use super::RuntimeManager;
use k8s_openapi::api::core::v1::{Container, Pod};
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

impl RuntimeManager {
    /// Installs the recorder events go to (the kubelet's event recorder).
    pub fn set_event_recorder(&self, recorder: EventRecorder) {
        *self.events.write() = Some(recorder);
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
}
