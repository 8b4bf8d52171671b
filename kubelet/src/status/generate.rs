//! The API `PodStatus` from the pod's spec, what the runtime reports, the last sync's errors
//! and the probes' verdicts: upstream's `generateAPIPodStatus`.

use super::conditions::{self, kubelet_owned};
use super::phase::{self, get_phase, is_restartable_init};
use super::qos::qos_class;
use crate::container::{ContainerState as RtState, PodRuntimeStatus, RuntimeContainerStatus};
use crate::kuberuntime::SyncError;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The prober's verdicts by container id (`containerd://...`); None = no verdict yet.
pub trait ProbeView {
    fn ready(&self, container_id: &str) -> Option<bool>;
    fn started(&self, container_id: &str) -> Option<bool>;
    /// The prober's final say on `ready`/`started` of the container statuses, before the
    /// conditions are derived from them.
    fn update_pod_status(&self, _pod: &Pod, _status: &mut PodStatus) {}
}

/// Everything a status is made from.
pub struct Inputs<'a> {
    pub pod: &'a Pod,
    /// The status the apiserver (or the kubelet's last write) holds.
    pub old: &'a PodStatus,
    pub runtime: &'a PodRuntimeStatus,
    /// The last sync's failures, by container name (waiting reasons).
    pub sync_errors: &'a [SyncError],
    pub probes: &'a dyn ProbeView,
    /// The node's IPs, primary first.
    pub host_ips: &'a [String],
    /// The kubelet will not start anything again (the pod is being torn down for good).
    pub pod_is_terminal: bool,
    pub now: Timestamp,
}

pub fn time_from_nanos(nanos: i64) -> Option<Time> {
    (nanos > 0)
        .then(|| Timestamp::from_nanosecond(i128::from(nanos)).ok())
        .flatten()
        .map(Time)
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            message,
        }),
        ..Default::default()
    }
}

fn terminated(rt: &RuntimeContainerStatus) -> ContainerState {
    let reason = if !rt.reason.is_empty() {
        rt.reason.clone()
    } else if rt.exit_code == 0 {
        "Completed".into()
    } else {
        "Error".into()
    };
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            container_id: Some(rt.id.to_string()),
            exit_code: rt.exit_code,
            reason: Some(reason),
            message: (!rt.message.is_empty()).then(|| rt.message.clone()),
            started_at: time_from_nanos(rt.started_at),
            finished_at: time_from_nanos(rt.finished_at),
            signal: None,
        }),
        ..Default::default()
    }
}

fn api_state(rt: &RuntimeContainerStatus, default: &ContainerState) -> ContainerState {
    match rt.state {
        RtState::Running => ContainerState {
            running: Some(ContainerStateRunning {
                started_at: time_from_nanos(rt.started_at),
            }),
            ..Default::default()
        },
        RtState::Exited => terminated(rt),
        RtState::Created | RtState::Unknown => default.clone(),
    }
}

/// Upstream's `ShouldContainerBeRestarted` for the newest attempt `latest`.
fn should_restart(
    pod: &Pod,
    spec: &PodSpec,
    c: &Container,
    latest: Option<&RuntimeContainerStatus>,
    is_init: bool,
) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(latest) = latest else { return true };
    match latest.state {
        RtState::Running => false,
        RtState::Created | RtState::Unknown => true,
        RtState::Exited => {
            if is_init && is_restartable_init(c) {
                return true;
            }
            match spec.restart_policy.as_deref().unwrap_or("Always") {
                "Never" => false,
                "OnFailure" => latest.exit_code != 0,
                _ => !is_init || latest.exit_code != 0,
            }
        }
    }
}

fn convert(
    inp: &Inputs<'_>,
    spec: &PodSpec,
    containers: &[Container],
    old: &[ContainerStatus],
    is_init: bool,
) -> Vec<ContainerStatus> {
    let default = waiting(
        if spec.init_containers.as_ref().is_some_and(|i| !i.is_empty()) {
            "PodInitializing"
        } else {
            "ContainerCreating"
        },
        None,
    );
    let mut out = Vec::with_capacity(containers.len());
    for c in containers {
        let mut attempts = inp.runtime.attempts(&c.name);
        let latest = attempts.next();
        let previous = attempts.find(|a| a.state == RtState::Exited);
        let old_status = old.iter().find(|s| s.name == c.name);
        let mut s = ContainerStatus {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            state: Some(default.clone()),
            started: Some(false),
            ..Default::default()
        };
        match latest {
            None => {
                if let Some(o) = old_status {
                    s.restart_count = o.restart_count;
                    s.last_state = o.last_state.clone();
                }
            }
            Some(rt) => {
                s.container_id = Some(rt.id.to_string());
                if !rt.image.is_empty() {
                    s.image = rt.image.clone();
                }
                s.image_id = rt.image_ref.clone();
                s.restart_count = rt.restart_count;
                s.state = Some(api_state(rt, &default));
                s.last_state = previous.map(terminated);
                let id = rt.id.to_string();
                if rt.state == RtState::Running {
                    let started =
                        c.startup_probe.is_none() || inp.probes.started(&id) == Some(true);
                    let ready = c.readiness_probe.is_none() || inp.probes.ready(&id) == Some(true);
                    s.started = Some(started);
                    s.ready = started && ready;
                } else if is_init && !is_restartable_init(c) {
                    s.ready = rt.state == RtState::Exited && rt.exit_code == 0;
                }
            }
        }
        // A container that will be started again shows why it is not running yet.
        if should_restart(inp.pod, spec, c, latest, is_init)
            && let Some(err) = inp.sync_errors.iter().find(|e| e.container == c.name)
        {
            if let Some(rt) = latest.filter(|rt| rt.state == RtState::Exited) {
                s.last_state = Some(terminated(rt));
            }
            s.state = Some(waiting(
                &err.reason,
                (!err.message.is_empty()).then(|| err.message.clone()),
            ));
            s.ready = false;
        }
        out.push(s);
    }
    out
}

/// Keeps the old transition time of a condition whose status did not change.
fn with_transition(mut c: PodCondition, old: &[PodCondition], now: Timestamp) -> PodCondition {
    c.last_transition_time = match old.iter().find(|o| o.type_ == c.type_) {
        Some(o) if o.status == c.status && o.last_transition_time.is_some() => {
            o.last_transition_time.clone()
        }
        _ => Some(Time(now)),
    };
    c
}

/// The status to report for `inp.pod`.
pub fn generate(inp: &Inputs<'_>) -> PodStatus {
    let default_spec = PodSpec::default();
    let spec = inp.pod.spec.as_ref().unwrap_or(&default_spec);
    let old = inp.old;
    let init = convert(
        inp,
        spec,
        spec.init_containers.as_deref().unwrap_or_default(),
        old.init_container_statuses.as_deref().unwrap_or_default(),
        true,
    );
    let regular = convert(
        inp,
        spec,
        &spec.containers,
        old.container_statuses.as_deref().unwrap_or_default(),
        false,
    );
    let mut probed = PodStatus {
        init_container_statuses: Some(init),
        container_statuses: Some(regular),
        ..Default::default()
    };
    inp.probes.update_pod_status(inp.pod, &mut probed);
    let init = probed.init_container_statuses.unwrap_or_default();
    let regular = probed.container_statuses.unwrap_or_default();
    let mut phase = get_phase(spec, &init, &regular, inp.pod_is_terminal).to_string();
    if phase::is_terminal(old.phase.as_deref()) {
        phase = old.phase.clone().unwrap_or(phase);
    }

    let old_conditions = old.conditions.as_deref().unwrap_or_default();
    let mut conds: Vec<PodCondition> = old_conditions
        .iter()
        .filter(|c| !kubelet_owned(&c.type_))
        .cloned()
        .collect();
    let containers_ready = conditions::containers_ready(spec, &init, &regular, &phase);
    let ready = conditions::ready(spec, &containers_ready, old_conditions);
    for c in [
        conditions::ready_to_start(inp.runtime),
        conditions::initialized(spec, &init, &regular),
        ready,
        containers_ready,
    ] {
        conds.push(with_transition(c, old_conditions, inp.now));
    }
    // A pod bound without the scheduler (nodeName set at creation) is scheduled all the same.
    if !conds.iter().any(|c| c.type_ == conditions::SCHEDULED) {
        conds.push(with_transition(
            PodCondition {
                type_: conditions::SCHEDULED.into(),
                status: "True".into(),
                ..Default::default()
            },
            old_conditions,
            inp.now,
        ));
    }

    let host_network = spec.host_network == Some(true);
    let pod_ips: Vec<String> = if host_network {
        inp.host_ips.to_vec()
    } else if !inp.runtime.ips.is_empty() {
        inp.runtime.ips.clone()
    } else {
        old.pod_ips.iter().flatten().map(|p| p.ip.clone()).collect()
    };

    PodStatus {
        phase: Some(phase),
        conditions: Some(conds),
        message: old.message.clone(),
        reason: old.reason.clone(),
        nominated_node_name: old.nominated_node_name.clone(),
        host_ip: inp.host_ips.first().cloned(),
        host_ips: (!inp.host_ips.is_empty()).then(|| {
            inp.host_ips
                .iter()
                .map(|ip| HostIP { ip: ip.clone() })
                .collect()
        }),
        pod_ip: pod_ips.first().cloned(),
        pod_ips: (!pod_ips.is_empty())
            .then(|| pod_ips.iter().map(|ip| PodIP { ip: ip.clone() }).collect()),
        qos_class: Some(qos_class(inp.pod).into()),
        start_time: old.start_time.clone().or(Some(Time(inp.now))),
        init_container_statuses: (!init.is_empty()).then_some(init),
        container_statuses: Some(regular),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{ContainerId, SandboxState, SandboxStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    struct NoProbes;

    impl ProbeView for NoProbes {
        fn ready(&self, _: &str) -> Option<bool> {
            None
        }

        fn started(&self, _: &str) -> Option<bool> {
            None
        }
    }

    fn pod(policy: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                uid: Some("u".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                restart_policy: Some(policy.into()),
                containers: vec![Container {
                    name: "main".into(),
                    image: Some("busybox".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn attempt(
        id: &str,
        state: RtState,
        exit_code: i32,
        restart_count: i32,
    ) -> RuntimeContainerStatus {
        RuntimeContainerStatus {
            id: ContainerId {
                runtime: "containerd".into(),
                id: id.into(),
            },
            name: "main".into(),
            state,
            created_at: 1,
            started_at: 1_000_000_000,
            finished_at: if state == RtState::Exited {
                2_000_000_000
            } else {
                0
            },
            exit_code,
            image: "busybox".into(),
            image_ref: "sha256:x".into(),
            hash: 0,
            restart_count,
            reason: String::new(),
            message: String::new(),
            log_path: String::new(),
        }
    }

    fn runtime(containers: Vec<RuntimeContainerStatus>) -> PodRuntimeStatus {
        PodRuntimeStatus {
            uid: "u".into(),
            ips: vec!["10.0.0.2".into()],
            sandboxes: vec![SandboxStatus {
                id: "sb".into(),
                state: SandboxState::Ready,
                created_at: 1,
                attempt: 0,
                ips: vec!["10.0.0.2".into()],
                host_network: false,
            }],
            containers,
            ..Default::default()
        }
    }

    fn status_of(pod: &Pod, rt: &PodRuntimeStatus, errors: &[SyncError]) -> PodStatus {
        generate(&Inputs {
            pod,
            old: &PodStatus::default(),
            runtime: rt,
            sync_errors: errors,
            probes: &NoProbes,
            host_ips: &["127.0.0.1".to_string()],
            pod_is_terminal: false,
            now: Timestamp::now(),
        })
    }

    fn cond(s: &PodStatus, t: &str) -> String {
        s.conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == t)
            .map(|c| c.status.clone())
            .unwrap_or_default()
    }

    #[test]
    fn statuses_from_the_runtime() {
        // Nothing created yet: ContainerCreating, Pending, not ready.
        let s = status_of(&pod("Always"), &runtime(vec![]), &[]);
        assert_eq!(s.phase.as_deref(), Some("Pending"));
        let c = &s.container_statuses.as_ref().unwrap()[0];
        let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref()).unwrap();
        assert_eq!(waiting.reason.as_deref(), Some("ContainerCreating"));
        assert_eq!(cond(&s, "Ready"), "False");
        assert_eq!(cond(&s, "PodScheduled"), "True");

        // Running: ready, started, IP, Running.
        let s = status_of(
            &pod("Always"),
            &runtime(vec![attempt("a", RtState::Running, 0, 0)]),
            &[],
        );
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert_eq!(s.pod_ip.as_deref(), Some("10.0.0.2"));
        let c = &s.container_statuses.as_ref().unwrap()[0];
        assert!(c.ready && c.started == Some(true));
        assert_eq!(c.container_id.as_deref(), Some("containerd://a"));
        for t in [
            "Ready",
            "ContainersReady",
            "Initialized",
            "PodReadyToStartContainers",
        ] {
            assert_eq!(cond(&s, t), "True", "{t}");
        }

        // Backing off after two exits: waiting CrashLoopBackOff, lastState the newest exit.
        let rt = runtime(vec![
            attempt("b", RtState::Exited, 2, 1),
            attempt("a", RtState::Exited, 2, 0),
        ]);
        let backoff = SyncError {
            container: "main".into(),
            reason: "CrashLoopBackOff".into(),
            message: "back-off 10s".into(),
        };
        let s = status_of(&pod("Always"), &rt, std::slice::from_ref(&backoff));
        let c = &s.container_statuses.as_ref().unwrap()[0];
        let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref()).unwrap();
        assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
        let last = c
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .unwrap();
        assert_eq!(
            (last.exit_code, last.container_id.as_deref()),
            (2, Some("containerd://b"))
        );
        assert_eq!(c.restart_count, 1);
        assert_eq!(s.phase.as_deref(), Some("Running"));

        // Never: the exit stays terminated (no waiting override) and the pod fails.
        let s = status_of(
            &pod("Never"),
            &runtime(vec![attempt("a", RtState::Exited, 1, 0)]),
            &[backoff],
        );
        let c = &s.container_statuses.as_ref().unwrap()[0];
        let t = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .unwrap();
        assert_eq!((t.exit_code, t.reason.as_deref()), (1, Some("Error")));
        assert_eq!(s.phase.as_deref(), Some("Failed"));
    }
}
