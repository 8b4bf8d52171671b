//! The pod phase from the container statuses, as upstream's `getPhase`.

use k8s_openapi::api::core::v1::{Container, ContainerStatus, PodSpec};

pub const PENDING: &str = "Pending";
pub const RUNNING: &str = "Running";
pub const SUCCEEDED: &str = "Succeeded";
pub const FAILED: &str = "Failed";

/// A phase the pod never leaves.
pub fn is_terminal(phase: Option<&str>) -> bool {
    matches!(phase, Some(SUCCEEDED | FAILED))
}

/// An init container with `restartPolicy: Always` (a sidecar).
pub fn is_restartable_init(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn find<'a>(statuses: &'a [ContainerStatus], name: &str) -> Option<&'a ContainerStatus> {
    statuses.iter().find(|s| s.name == name)
}

fn running(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.running.is_some())
}

fn terminated_exit(s: &ContainerStatus) -> Option<i32> {
    s.state
        .as_ref()
        .and_then(|st| st.terminated.as_ref())
        .map(|t| t.exit_code)
}

fn waiting(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.waiting.is_some())
}

fn last_exit(s: &ContainerStatus) -> Option<i32> {
    s.last_state
        .as_ref()
        .and_then(|st| st.terminated.as_ref())
        .map(|t| t.exit_code)
}

/// The phase of a pod whose containers report `init` and `regular` statuses. `pod_is_terminal`
/// says the kubelet will not restart anything (the pod is being torn down for good).
pub fn get_phase(
    spec: &PodSpec,
    init: &[ContainerStatus],
    regular: &[ContainerStatus],
    pod_is_terminal: bool,
) -> &'static str {
    let mut pending_sidecars = 0;
    let mut pending_init = 0;
    let mut failed_init = 0;
    for c in spec.init_containers.iter().flatten() {
        let Some(s) = find(init, &c.name) else {
            if is_restartable_init(c) {
                pending_sidecars += 1;
            } else {
                pending_init += 1;
            }
            continue;
        };
        if is_restartable_init(c) {
            if !running(s) {
                pending_sidecars += 1;
            }
            continue;
        }
        if running(s) {
            pending_init += 1;
        } else if let Some(code) = terminated_exit(s) {
            if code != 0 {
                failed_init += 1;
            }
        } else if waiting(s) {
            match last_exit(s) {
                Some(code) if code != 0 => failed_init += 1,
                Some(_) => {}
                None => pending_init += 1,
            }
        } else {
            pending_init += 1;
        }
    }

    let (mut unknown, mut run, mut wait, mut stopped, mut succeeded) = (0, 0, 0, 0, 0);
    for c in &spec.containers {
        let Some(s) = find(regular, &c.name) else {
            unknown += 1;
            continue;
        };
        if running(s) {
            run += 1;
        } else if let Some(code) = terminated_exit(s) {
            stopped += 1;
            if code == 0 {
                succeeded += 1;
            }
        } else if waiting(s) {
            if last_exit(s).is_some() {
                stopped += 1;
            } else {
                wait += 1;
            }
        } else {
            unknown += 1;
        }
    }

    let restart_policy = spec.restart_policy.as_deref().unwrap_or("Always");
    if failed_init > 0 && restart_policy == "Never" {
        return FAILED;
    }
    let any_regular_started = regular
        .iter()
        .any(|s| running(s) || terminated_exit(s).is_some() || last_exit(s).is_some());
    if pending_init > 0 || (pending_sidecars > 0 && !any_regular_started) || wait > 0 {
        return PENDING;
    }
    if run > 0 && unknown == 0 {
        return RUNNING;
    }
    if run == 0 && stopped > 0 && unknown == 0 {
        if pod_is_terminal {
            return if stopped == succeeded {
                SUCCEEDED
            } else {
                FAILED
            };
        }
        if restart_policy == "Always" {
            return RUNNING;
        }
        if stopped == succeeded {
            return SUCCEEDED;
        }
        if restart_policy == "Never" {
            return FAILED;
        }
        return RUNNING;
    }
    PENDING
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    };

    fn spec(policy: &str, init: &[&str], containers: &[&str]) -> PodSpec {
        let c = |n: &&str| Container {
            name: n.to_string(),
            ..Default::default()
        };
        PodSpec {
            restart_policy: Some(policy.into()),
            init_containers: (!init.is_empty()).then(|| init.iter().map(c).collect()),
            containers: containers.iter().map(c).collect(),
            ..Default::default()
        }
    }

    fn st(name: &str, state: &str, last_exit: Option<i32>) -> ContainerStatus {
        let state = match state {
            "run" => ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..Default::default()
            },
            "wait" => ContainerState {
                waiting: Some(ContainerStateWaiting::default()),
                ..Default::default()
            },
            code => ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code.parse().unwrap_or(1),
                    ..Default::default()
                }),
                ..Default::default()
            },
        };
        ContainerStatus {
            name: name.into(),
            state: Some(state),
            last_state: last_exit.map(|exit_code| ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn phases_follow_upstream() {
        type Case = (
            &'static str,
            PodSpec,
            Vec<ContainerStatus>,
            Vec<ContainerStatus>,
            bool,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                "nothing yet",
                spec("Always", &[], &["a"]),
                vec![],
                vec![st("a", "wait", None)],
                false,
                PENDING,
            ),
            (
                "running",
                spec("Always", &[], &["a"]),
                vec![],
                vec![st("a", "run", None)],
                false,
                RUNNING,
            ),
            (
                "one unknown",
                spec("Always", &[], &["a", "b"]),
                vec![],
                vec![st("a", "run", None)],
                false,
                PENDING,
            ),
            (
                "never, exit 1",
                spec("Never", &[], &["a"]),
                vec![],
                vec![st("a", "1", None)],
                false,
                FAILED,
            ),
            (
                "never, exit 0",
                spec("Never", &[], &["a"]),
                vec![],
                vec![st("a", "0", None)],
                false,
                SUCCEEDED,
            ),
            (
                "onfailure, exit 1",
                spec("OnFailure", &[], &["a"]),
                vec![],
                vec![st("a", "1", None)],
                false,
                RUNNING,
            ),
            (
                "onfailure, exit 0",
                spec("OnFailure", &[], &["a"]),
                vec![],
                vec![st("a", "0", None)],
                false,
                SUCCEEDED,
            ),
            (
                "always, exited",
                spec("Always", &[], &["a"]),
                vec![],
                vec![st("a", "1", None)],
                false,
                RUNNING,
            ),
            (
                "always, exited, terminal",
                spec("Always", &[], &["a"]),
                vec![],
                vec![st("a", "0", None)],
                true,
                SUCCEEDED,
            ),
            (
                "crash loop",
                spec("Always", &[], &["a"]),
                vec![],
                vec![st("a", "wait", Some(1))],
                false,
                RUNNING,
            ),
            (
                "init running",
                spec("Always", &["i"], &["a"]),
                vec![st("i", "run", None)],
                vec![st("a", "wait", None)],
                false,
                PENDING,
            ),
            (
                "init failed, never",
                spec("Never", &["i"], &["a"]),
                vec![st("i", "2", None)],
                vec![st("a", "wait", None)],
                false,
                FAILED,
            ),
            (
                "init failed, always",
                spec("Always", &["i"], &["a"]),
                vec![st("i", "wait", Some(2))],
                vec![st("a", "wait", None)],
                false,
                PENDING,
            ),
            (
                "init done",
                spec("Always", &["i"], &["a"]),
                vec![st("i", "0", None)],
                vec![st("a", "run", None)],
                false,
                RUNNING,
            ),
        ];
        for (name, spec, init, regular, terminal, want) in cases {
            assert_eq!(get_phase(&spec, &init, &regular, terminal), want, "{name}");
        }
    }
}
