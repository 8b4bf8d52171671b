use super::*;
use crate::container::SandboxStatus;
use k8s_openapi::api::core::v1::Probe;

fn c(name: &str) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox".into()),
        ..Default::default()
    }
}

fn sidecar(name: &str) -> Container {
    Container {
        restart_policy: Some("Always".into()),
        ..c(name)
    }
}

fn pod(policy: &str, inits: Vec<Container>, containers: Vec<Container>) -> Pod {
    Pod {
        spec: Some(PodSpec {
            restart_policy: Some(policy.into()),
            init_containers: (!inits.is_empty()).then_some(inits),
            containers,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn sandbox(state: SandboxState, attempt: u32) -> SandboxStatus {
    SandboxStatus {
        id: format!("sb{attempt}"),
        state,
        created_at: 0,
        attempt,
        ips: vec!["10.0.0.2".into()],
        host_network: false,
    }
}

/// A container record: state, exit code, and whether its hash matches the spec.
fn st(name: &str, state: ContainerState, exit_code: i32) -> RuntimeContainerStatus {
    RuntimeContainerStatus {
        id: ContainerId {
            runtime: "containerd".into(),
            id: format!("{name}-id"),
        },
        name: name.into(),
        state,
        created_at: 0,
        started_at: 0,
        finished_at: 0,
        exit_code,
        image: "busybox".into(),
        image_ref: String::new(),
        hash: hash_container(&c(name)),
        restart_count: 0,
        reason: String::new(),
        message: String::new(),
        log_path: String::new(),
    }
}

fn status(
    sandboxes: Vec<SandboxStatus>,
    containers: Vec<RuntimeContainerStatus>,
) -> PodRuntimeStatus {
    PodRuntimeStatus {
        uid: "u".into(),
        name: "p".into(),
        namespace: "ns".into(),
        ips: vec![],
        sandboxes,
        containers,
    }
}

use ContainerState::{Created, Exited, Running, Unknown};

fn ready() -> Vec<SandboxStatus> {
    vec![sandbox(SandboxState::Ready, 0)]
}

/// (kill_pod, create_sandbox, attempt, inits to start, containers to start, names killed)
type Want = (bool, bool, u32, Vec<usize>, Vec<usize>, Vec<&'static str>);

fn run(
    pod: &Pod,
    status: &PodRuntimeStatus,
    liveness: Option<ProbeResult>,
    startup: Option<ProbeResult>,
) -> Want {
    let live = move |_: &ContainerId| liveness;
    let start = move |_: &ContainerId| startup;
    let a = compute_pod_actions(pod, status, &live, &start);
    let mut killed: Vec<&'static str> = a
        .containers_to_kill
        .iter()
        .map(|k| &*Box::leak(k.name.clone().into_boxed_str()))
        .collect();
    killed.sort();
    (
        a.kill_pod,
        a.create_sandbox,
        a.attempt,
        a.init_containers_to_start,
        a.containers_to_start,
        killed,
    )
}

#[test]
fn sandbox_and_regular_containers() {
    let two = || pod("Always", vec![], vec![c("a"), c("b")]);
    let mut changed = st("a", Running, 0);
    changed.hash = 1;
    let mut no_ip = sandbox(SandboxState::Ready, 0);
    no_ip.ips.clear();
    let mut host = sandbox(SandboxState::Ready, 3);
    host.host_network = true;
    let cases: Vec<(&str, Pod, PodRuntimeStatus, Want)> = vec![
        (
            "new pod",
            two(),
            status(vec![], vec![]),
            (true, true, 0, vec![], vec![0, 1], vec![]),
        ),
        (
            "running pod is left alone",
            two(),
            status(ready(), vec![st("a", Running, 0), st("b", Running, 0)]),
            (false, false, 0, vec![], vec![], vec![]),
        ),
        (
            "dead sandbox is recreated with the next attempt",
            two(),
            status(
                vec![sandbox(SandboxState::NotReady, 1)],
                vec![st("a", Exited, 0)],
            ),
            (true, true, 2, vec![], vec![0, 1], vec![]),
        ),
        (
            "two ready sandboxes are one too many",
            two(),
            status(
                vec![
                    sandbox(SandboxState::Ready, 1),
                    sandbox(SandboxState::Ready, 0),
                ],
                vec![],
            ),
            (true, true, 2, vec![], vec![0, 1], vec![]),
        ),
        (
            "sandbox without an IP is recreated",
            two(),
            status(vec![no_ip], vec![]),
            (true, true, 1, vec![], vec![0, 1], vec![]),
        ),
        (
            "network mode changed",
            two(),
            status(vec![host], vec![]),
            (true, true, 4, vec![], vec![0, 1], vec![]),
        ),
        (
            "Never pod whose sandbox died stays dead",
            pod("Never", vec![], vec![c("a")]),
            status(
                vec![sandbox(SandboxState::NotReady, 0)],
                vec![st("a", Exited, 0)],
            ),
            (true, false, 1, vec![], vec![], vec![]),
        ),
        (
            "OnFailure pod with every container succeeded gets no new sandbox",
            pod("OnFailure", vec![], vec![c("a")]),
            status(
                vec![sandbox(SandboxState::NotReady, 0)],
                vec![st("a", Exited, 0)],
            ),
            (true, false, 1, vec![], vec![], vec![]),
        ),
        (
            "Always restarts an exited container",
            two(),
            status(ready(), vec![st("a", Exited, 0), st("b", Running, 0)]),
            (false, false, 0, vec![], vec![0], vec![]),
        ),
        (
            "OnFailure restarts only failures",
            pod("OnFailure", vec![], vec![c("a"), c("b")]),
            status(ready(), vec![st("a", Exited, 0), st("b", Exited, 2)]),
            (false, false, 0, vec![], vec![1], vec![]),
        ),
        (
            "Never leaves a failed container and ends the pod",
            pod("Never", vec![], vec![c("a")]),
            status(ready(), vec![st("a", Exited, 1)]),
            (true, false, 0, vec![], vec![], vec![]),
        ),
        (
            "created and unknown containers are started again (unknown killed first)",
            two(),
            status(ready(), vec![st("a", Created, 0), st("b", Unknown, 0)]),
            (false, false, 0, vec![], vec![0, 1], vec!["b"]),
        ),
        (
            "changed spec restarts even under Never",
            pod("Never", vec![], vec![c("a")]),
            status(ready(), vec![changed]),
            (false, false, 0, vec![], vec![0], vec!["a"]),
        ),
    ];
    for (name, pod, status, want) in cases {
        assert_eq!(run(&pod, &status, None, None), want, "{name}");
    }
}

#[test]
fn probes_restart_containers() {
    let always = pod("Always", vec![], vec![c("a")]);
    let never = pod("Never", vec![], vec![c("a")]);
    let running = status(ready(), vec![st("a", Running, 0)]);
    let fail = Some(ProbeResult::Failure);
    let ok = Some(ProbeResult::Success);
    let cases = [
        (
            "liveness failure restarts",
            &always,
            fail,
            None,
            (false, false, 0, vec![], vec![0], vec!["a"]),
        ),
        (
            "startup failure restarts",
            &always,
            ok,
            fail,
            (false, false, 0, vec![], vec![0], vec!["a"]),
        ),
        (
            "liveness failure under Never kills",
            &never,
            fail,
            None,
            (true, false, 0, vec![], vec![], vec!["a"]),
        ),
        (
            "success keeps",
            &always,
            ok,
            ok,
            (false, false, 0, vec![], vec![], vec![]),
        ),
    ];
    for (name, pod, live, start, want) in cases {
        assert_eq!(run(pod, &running, live, start), want, "{name}");
    }
    let live = |_: &ContainerId| fail;
    let none = |_: &ContainerId| None;
    let a = compute_pod_actions(&always, &running, &live, &none);
    assert_eq!(a.containers_to_kill[0].reason, KillReason::Liveness);
    assert_eq!(
        a.containers_to_kill[0].message,
        "Container a failed liveness probe, will be restarted"
    );
}

#[test]
fn init_containers_run_in_order() {
    let p = |policy| pod(policy, vec![c("i0"), c("i1")], vec![c("a")]);
    let mut oom = st("i0", Exited, 0);
    oom.reason = "OOMKilled".into();
    let cases: Vec<(&str, Pod, PodRuntimeStatus, Want)> = vec![
        (
            "new pod starts the first init",
            p("Always"),
            status(vec![], vec![]),
            (true, true, 0, vec![0], vec![], vec![]),
        ),
        (
            "sandbox up, nothing ran",
            p("Always"),
            status(ready(), vec![]),
            (false, false, 0, vec![0], vec![], vec![]),
        ),
        (
            "first init running: wait",
            p("Always"),
            status(ready(), vec![st("i0", Running, 0)]),
            (false, false, 0, vec![], vec![], vec![]),
        ),
        (
            "first done, second next",
            p("Always"),
            status(ready(), vec![st("i0", Exited, 0)]),
            (false, false, 0, vec![1], vec![], vec![]),
        ),
        (
            "all done: regular containers",
            p("Always"),
            status(ready(), vec![st("i1", Exited, 0), st("i0", Exited, 0)]),
            (false, false, 0, vec![], vec![0], vec![]),
        ),
        (
            "last init record alone is enough",
            p("Always"),
            status(ready(), vec![st("i1", Exited, 0)]),
            (false, false, 0, vec![], vec![0], vec![]),
        ),
        (
            "failed init is retried",
            p("OnFailure"),
            status(ready(), vec![st("i0", Exited, 1)]),
            (false, false, 0, vec![0], vec![], vec![]),
        ),
        (
            "OOM-killed init is a failure",
            p("Always"),
            status(ready(), vec![oom]),
            (false, false, 0, vec![0], vec![], vec![]),
        ),
        (
            "failed init under Never ends the pod",
            p("Never"),
            status(ready(), vec![st("i0", Exited, 1)]),
            (true, false, 0, vec![], vec![], vec![]),
        ),
        (
            "created init is started again",
            p("Always"),
            status(ready(), vec![st("i0", Created, 0)]),
            (false, false, 0, vec![0], vec![], vec![]),
        ),
        (
            "initialized pod does not rerun inits",
            p("Always"),
            status(ready(), vec![st("a", Running, 0)]),
            (false, false, 0, vec![], vec![], vec![]),
        ),
        (
            "dead sandbox restarts from the first init",
            p("Always"),
            status(
                vec![sandbox(SandboxState::NotReady, 0)],
                vec![st("a", Exited, 0), st("i1", Exited, 0)],
            ),
            (true, true, 1, vec![0], vec![], vec![]),
        ),
    ];
    for (name, pod, status, want) in cases {
        assert_eq!(run(&pod, &status, None, None), want, "{name}");
    }
}

#[test]
fn sidecars_start_in_order_and_keep_running() {
    let p = pod("Always", vec![sidecar("s0"), c("i1")], vec![c("a")]);
    let mut probed = sidecar("s0");
    probed.startup_probe = Some(Probe::default());
    let with_probe = pod("Always", vec![probed, c("i1")], vec![c("a")]);
    let never = pod("Never", vec![sidecar("s0")], vec![c("a")]);
    let cases: Vec<(&str, &Pod, PodRuntimeStatus, Option<ProbeResult>, Want)> = vec![
        (
            "sidecar first",
            &p,
            status(ready(), vec![]),
            None,
            (false, false, 0, vec![0], vec![], vec![]),
        ),
        (
            "sidecar up, next init",
            &p,
            status(ready(), vec![st("s0", Running, 0)]),
            None,
            (false, false, 0, vec![1], vec![], vec![]),
        ),
        (
            "startup probe pending: wait",
            &with_probe,
            status(ready(), vec![st("s0", Running, 0)]),
            None,
            (false, false, 0, vec![], vec![], vec![]),
        ),
        (
            "startup probe passed: next init",
            &with_probe,
            status(ready(), vec![st("s0", Running, 0)]),
            Some(ProbeResult::Success),
            (false, false, 0, vec![1], vec![], vec![]),
        ),
        (
            "startup probe failed: restart sidecar",
            &with_probe,
            status(ready(), vec![st("s0", Running, 0)]),
            Some(ProbeResult::Failure),
            (false, false, 0, vec![0], vec![], vec!["s0"]),
        ),
        (
            "inits done, sidecar kept, containers start",
            &p,
            status(ready(), vec![st("i1", Exited, 0), st("s0", Running, 0)]),
            None,
            (false, false, 0, vec![], vec![0], vec![]),
        ),
        (
            "exited sidecar of an initialized pod restarts",
            &p,
            status(
                ready(),
                vec![
                    st("a", Running, 0),
                    st("i1", Exited, 0),
                    st("s0", Exited, 1),
                ],
            ),
            None,
            (false, false, 0, vec![0], vec![], vec![]),
        ),
        (
            "sidecar does not keep a finished Never pod alive",
            &never,
            status(ready(), vec![st("a", Exited, 0), st("s0", Running, 0)]),
            None,
            (true, false, 0, vec![], vec![], vec![]),
        ),
    ];
    for (name, pod, status, startup, want) in cases {
        assert_eq!(run(pod, &status, None, startup), want, "{name}");
    }
}

#[test]
fn deleted_pods_are_not_restarted() {
    let mut p = pod("Always", vec![], vec![c("a")]);
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::UNIX_EPOCH,
    ));
    let s = status(ready(), vec![st("a", Exited, 0)]);
    assert_eq!(
        run(&p, &s, None, None),
        (true, false, 0, vec![], vec![], vec![])
    );
}
