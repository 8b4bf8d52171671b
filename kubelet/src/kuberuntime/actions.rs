//! What one sync must do to a pod, from its spec and what the runtime reports (upstream's
//! `computePodActions` and `computeInitContainerActions`): a pure function, so the rules for
//! sandboxes, init containers, sidecars, restart policies, changed specs and failed probes are
//! tested as tables.

use super::labels::hash_container;
use crate::container::{
    ContainerId, ContainerState, PodRuntimeStatus, ProbeResult, RuntimeContainerStatus,
    SandboxState,
};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};

/// Why a container is stopped: probe failures may use the probe's own grace period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    SpecChanged,
    Liveness,
    Startup,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerToKill {
    pub id: ContainerId,
    pub name: String,
    pub message: String,
    pub reason: KillReason,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodActions {
    /// Stop everything of the pod (then create a sandbox again when `create_sandbox`).
    pub kill_pod: bool,
    pub create_sandbox: bool,
    /// The sandbox to use when none is created.
    pub sandbox_id: String,
    /// The attempt number of the sandbox to create.
    pub attempt: u32,
    /// Indices into `spec.initContainers`, in spec order.
    pub init_containers_to_start: Vec<usize>,
    /// Indices into `spec.containers`.
    pub containers_to_start: Vec<usize>,
    pub containers_to_kill: Vec<ContainerToKill>,
}

/// Probe verdicts by container id.
pub type ProbeLookup<'a> = &'a (dyn Fn(&ContainerId) -> Option<ProbeResult> + Send + Sync);

pub fn restart_on_failure(spec: &PodSpec) -> bool {
    spec.restart_policy.as_deref() != Some("Never")
}

pub fn is_restartable_init(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn changed(c: &Container, s: &RuntimeContainerStatus) -> bool {
    s.hash != hash_container(c)
}

fn state_name(s: ContainerState) -> &'static str {
    match s {
        ContainerState::Created => "created",
        ContainerState::Running => "running",
        ContainerState::Exited => "exited",
        ContainerState::Unknown => "unknown",
    }
}

/// Upstream's `PodSandboxChanged`: (create a new one, its attempt, the sandbox id to use or
/// to clean up).
pub fn sandbox_changed(spec: &PodSpec, status: &PodRuntimeStatus) -> (bool, u32, String) {
    let Some(newest) = status.sandboxes.first() else {
        return (true, 0, String::new());
    };
    let ready = status
        .sandboxes
        .iter()
        .filter(|s| s.state == SandboxState::Ready)
        .count();
    if ready > 1 || newest.state != SandboxState::Ready {
        return (true, newest.attempt + 1, newest.id.clone());
    }
    let host = spec.host_network.unwrap_or(false);
    if newest.host_network != host {
        return (true, newest.attempt + 1, String::new());
    }
    if !host && newest.ips.is_empty() {
        return (true, newest.attempt + 1, newest.id.clone());
    }
    (false, newest.attempt, newest.id.clone())
}

/// Upstream's `ShouldContainerBeRestarted`.
pub fn should_restart(pod: &Pod, c: &Container, status: &PodRuntimeStatus) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(s) = status.container(&c.name) else {
        return true;
    };
    match s.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited => match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref())
        {
            Some("Never") => false,
            Some("OnFailure") => s.exit_code != 0,
            _ => true,
        },
    }
}

fn init_failed(s: &RuntimeContainerStatus) -> bool {
    s.reason == "OOMKilled"
        || (s.state == ContainerState::Exited && s.exit_code != 0)
        || s.state == ContainerState::Unknown
}

pub fn compute_pod_actions(
    pod: &Pod,
    status: &PodRuntimeStatus,
    liveness: ProbeLookup<'_>,
    startup: ProbeLookup<'_>,
) -> PodActions {
    let default_spec = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let (create, attempt, sandbox_id) = sandbox_changed(spec, status);
    let mut actions = PodActions {
        kill_pod: create,
        create_sandbox: create,
        sandbox_id,
        attempt,
        ..Default::default()
    };
    let inits = spec.init_containers.as_deref().unwrap_or_default();

    if create {
        if !restart_on_failure(spec) && attempt != 0 && !status.containers.is_empty() {
            // A Never pod whose sandbox died is done: do not bring it back.
            actions.create_sandbox = false;
            return actions;
        }
        let to_start: Vec<usize> = spec
            .containers
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                !(spec.restart_policy.as_deref() == Some("OnFailure")
                    && status
                        .container(&c.name)
                        .is_some_and(|s| s.state == ContainerState::Exited && s.exit_code == 0))
            })
            .map(|(i, _)| i)
            .collect();
        let initialized = spec
            .containers
            .iter()
            .any(|c| status.container(&c.name).is_some());
        if initialized && to_start.is_empty() {
            actions.create_sandbox = false;
            return actions;
        }
        if !inits.is_empty() {
            actions.init_containers_to_start = vec![0];
        } else {
            actions.containers_to_start = to_start;
        }
        return actions;
    }

    let initialized = init_container_actions(spec, status, &mut actions, liveness, startup);
    if actions.kill_pod || !initialized {
        return actions;
    }

    let mut keep = 0;
    for (idx, c) in spec.containers.iter().enumerate() {
        let s = status.container(&c.name);
        let Some(s) = s.filter(|s| s.state == ContainerState::Running) else {
            if should_restart(pod, c, status) {
                actions.containers_to_start.push(idx);
                if let Some(s) = s.filter(|s| s.state == ContainerState::Unknown) {
                    actions.containers_to_kill.push(ContainerToKill {
                        id: s.id.clone(),
                        name: c.name.clone(),
                        message: format!(
                            "Container is in {:?} state, try killing it before restart",
                            state_name(s.state)
                        ),
                        reason: KillReason::Unknown,
                    });
                }
            }
            continue;
        };
        let mut restart = restart_on_failure(spec);
        let (message, reason) = if changed(c, s) {
            // A changed spec restarts whatever the restart policy.
            restart = true;
            (
                format!("Container {} definition changed", c.name),
                KillReason::SpecChanged,
            )
        } else if liveness(&s.id) == Some(ProbeResult::Failure) {
            (
                format!("Container {} failed liveness probe", c.name),
                KillReason::Liveness,
            )
        } else if startup(&s.id) == Some(ProbeResult::Failure) {
            (
                format!("Container {} failed startup probe", c.name),
                KillReason::Startup,
            )
        } else {
            keep += 1;
            continue;
        };
        let message = if restart {
            actions.containers_to_start.push(idx);
            format!("{message}, will be restarted")
        } else {
            message
        };
        actions.containers_to_kill.push(ContainerToKill {
            id: s.id.clone(),
            name: c.name.clone(),
            message,
            reason,
        });
    }
    if keep == 0 && actions.containers_to_start.is_empty() {
        actions.kill_pod = true;
        // Sidecars must not keep a finished pod alive.
        actions.init_containers_to_start.clear();
    }
    actions
}

/// Upstream's `computeInitContainerActions`: walks the init containers from the last one
/// back, so that garbage-collected early ones do not rerun; returns whether initialization
/// is complete.
fn init_container_actions(
    spec: &PodSpec,
    status: &PodRuntimeStatus,
    actions: &mut PodActions,
    liveness: ProbeLookup<'_>,
    startup: ProbeLookup<'_>,
) -> bool {
    let inits = spec.init_containers.as_deref().unwrap_or_default();
    if inits.is_empty() {
        return true;
    }
    // A regular container that was created or runs means initialization happened, even if
    // the init containers' records are gone.
    let mut initialized = spec.containers.iter().any(|c| {
        status
            .container(&c.name)
            .is_some_and(|s| matches!(s.state, ContainerState::Created | ContainerState::Running))
    });
    let mut previously_initialized = initialized;
    let restart = restart_on_failure(spec);
    let mut to_start: Vec<usize> = Vec::new();
    let kill = |actions: &mut PodActions, s: &RuntimeContainerStatus, message: String, reason| {
        actions.containers_to_kill.push(ContainerToKill {
            id: s.id.clone(),
            name: s.name.clone(),
            message,
            reason,
        });
    };

    for i in (0..inits.len()).rev() {
        let c = &inits[i];
        let sidecar = is_restartable_init(c);
        let Some(s) = status.container(&c.name) else {
            if previously_initialized && sidecar {
                to_start.push(i);
            }
            continue;
        };
        if previously_initialized && !sidecar {
            continue;
        }
        match s.state {
            ContainerState::Created => to_start.push(i),
            ContainerState::Running if sidecar => 'running: {
                if c.startup_probe.is_some() {
                    match startup(&s.id) {
                        Some(ProbeResult::Success) => {}
                        Some(ProbeResult::Failure) => {
                            kill(
                                actions,
                                s,
                                format!("Init container {} failed startup probe", c.name),
                                KillReason::Startup,
                            );
                            to_start.push(i);
                            break 'running;
                        }
                        _ => break 'running,
                    }
                }
                if i == inits.len() - 1 {
                    initialized = true;
                } else if !previously_initialized {
                    to_start.push(i + 1);
                }
                if changed(c, s) {
                    kill(
                        actions,
                        s,
                        format!("Init container {} definition changed", c.name),
                        KillReason::SpecChanged,
                    );
                    to_start.push(i);
                    break 'running;
                }
                if c.liveness_probe.is_some() && liveness(&s.id) == Some(ProbeResult::Failure) {
                    kill(
                        actions,
                        s,
                        format!("Init container {} failed liveness probe", c.name),
                        KillReason::Liveness,
                    );
                    to_start.push(i);
                }
            }
            // A plain init container still running: wait for it.
            ContainerState::Running => {}
            ContainerState::Exited if sidecar => to_start.push(i),
            ContainerState::Exited => {
                if init_failed(s) {
                    if !restart {
                        actions.kill_pod = true;
                        actions.init_containers_to_start.clear();
                        return false;
                    }
                    to_start.push(i);
                } else if i == inits.len() - 1 {
                    initialized = true;
                } else {
                    to_start.push(i + 1);
                }
            }
            ContainerState::Unknown => {
                if !sidecar && !restart {
                    actions.kill_pod = true;
                    actions.init_containers_to_start.clear();
                    return false;
                }
                kill(
                    actions,
                    s,
                    format!(
                        "Init container is in \"{}\" state, try killing it before restart",
                        state_name(s.state)
                    ),
                    KillReason::Unknown,
                );
                to_start.push(i);
            }
        }
        previously_initialized = true;
    }
    if !previously_initialized {
        to_start.push(0);
    }
    to_start.reverse();
    actions.init_containers_to_start = to_start;
    initialized
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
