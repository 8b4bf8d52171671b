//! The pod conditions the kubelet owns: PodReadyToStartContainers, Initialized,
//! ContainersReady and Ready (with readiness gates), as upstream's `status` package.

use super::phase::{SUCCEEDED, is_restartable_init};
use crate::container::{PodRuntimeStatus, SandboxState};
use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodSpec};

pub const READY_TO_START: &str = "PodReadyToStartContainers";
pub const INITIALIZED: &str = "Initialized";
pub const CONTAINERS_READY: &str = "ContainersReady";
pub const READY: &str = "Ready";
pub const SCHEDULED: &str = "PodScheduled";

/// The condition types the kubelet computes; every other type is kept as others set it.
pub fn kubelet_owned(type_: &str) -> bool {
    matches!(
        type_,
        READY_TO_START | INITIALIZED | CONTAINERS_READY | READY
    )
}

fn cond(type_: &str, ok: bool, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: if ok { None } else { reason.map(Into::into) },
        message: if ok { None } else { message },
        ..Default::default()
    }
}

/// True once the newest sandbox is ready (created, networked).
pub fn ready_to_start(runtime: &PodRuntimeStatus) -> PodCondition {
    let ok = runtime
        .sandboxes
        .first()
        .is_some_and(|s| s.state == SandboxState::Ready);
    cond(READY_TO_START, ok, None, None)
}

fn find<'a>(statuses: &'a [ContainerStatus], name: &str) -> Option<&'a ContainerStatus> {
    statuses.iter().find(|s| s.name == name)
}

fn list(names: &[String]) -> String {
    format!("[{}]", names.join(" "))
}

/// True when every regular init container exited 0 and every sidecar has started (or any
/// regular container ever started: the init phase is then over for good).
pub fn initialized(
    spec: &PodSpec,
    init: &[ContainerStatus],
    regular: &[ContainerStatus],
) -> PodCondition {
    let regular_started = regular.iter().any(|s| {
        s.state
            .as_ref()
            .is_some_and(|st| st.running.is_some() || st.terminated.is_some())
            || s.last_state
                .as_ref()
                .is_some_and(|st| st.terminated.is_some())
    });
    let mut incomplete = Vec::new();
    for c in spec.init_containers.iter().flatten() {
        let s = find(init, &c.name);
        let done = if is_restartable_init(c) {
            s.is_some_and(|s| s.started == Some(true))
        } else {
            s.is_some_and(|s| {
                s.state
                    .as_ref()
                    .and_then(|st| st.terminated.as_ref())
                    .is_some_and(|t| t.exit_code == 0)
            })
        };
        if !done {
            incomplete.push(c.name.clone());
        }
    }
    let ok = incomplete.is_empty() || regular_started;
    cond(
        INITIALIZED,
        ok,
        Some("ContainersNotInitialized"),
        Some(format!(
            "containers with incomplete status: {}",
            list(&incomplete)
        )),
    )
}

/// True when every container and sidecar is ready; a succeeded pod is `PodCompleted`.
pub fn containers_ready(
    spec: &PodSpec,
    init: &[ContainerStatus],
    regular: &[ContainerStatus],
    phase: &str,
) -> PodCondition {
    if phase == SUCCEEDED {
        return cond(CONTAINERS_READY, false, Some("PodCompleted"), None);
    }
    let mut unready = Vec::new();
    for c in spec.init_containers.iter().flatten() {
        if is_restartable_init(c) && !find(init, &c.name).is_some_and(|s| s.ready) {
            unready.push(c.name.clone());
        }
    }
    for c in &spec.containers {
        if !find(regular, &c.name).is_some_and(|s| s.ready) {
            unready.push(c.name.clone());
        }
    }
    cond(
        CONTAINERS_READY,
        unready.is_empty(),
        Some("ContainersNotReady"),
        Some(format!(
            "containers with unready status: {}",
            list(&unready)
        )),
    )
}

/// ContainersReady and every readiness gate's condition True (gates read from `existing`).
pub fn ready(
    spec: &PodSpec,
    containers_ready: &PodCondition,
    existing: &[PodCondition],
) -> PodCondition {
    if containers_ready.status != "True" {
        return PodCondition {
            type_: READY.into(),
            ..containers_ready.clone()
        };
    }
    let missing: Vec<String> = spec
        .readiness_gates
        .iter()
        .flatten()
        .filter(|g| {
            !existing
                .iter()
                .any(|c| c.type_ == g.condition_type && c.status == "True")
        })
        .map(|g| g.condition_type.clone())
        .collect();
    let message = format!(
        "corresponding condition of pod readiness gate {} does not exist or is not True",
        missing
            .iter()
            .map(|m| format!("\"{m}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    cond(
        READY,
        missing.is_empty(),
        Some("ReadinessGatesNotReady"),
        Some(message),
    )
}
