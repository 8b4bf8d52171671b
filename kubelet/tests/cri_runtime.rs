//! The runtime manager against a real containerd (one per test, from `e2e::containerd`):
//! pods synced through CRI reach running with init containers first, restart policies and
//! CrashLoopBackOff hold, kill_pod honours the grace period and preStop, remove_pod leaves
//! nothing, and image policies fail with upstream's reasons.

use async_trait::async_trait;
use e2e::containerd::Containerd;
use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet::container::{
    ContainerId, ContainerState, Mount, MountPropagation, PodRuntimeStatus, ProbeResult,
    RunContainerOptions, SandboxState,
};
use kubelet::kuberuntime::{
    DnsConfig, PodSyncResult, RuntimeEvent, RuntimeHelper, RuntimeManager, RuntimeOptions,
    SyncContext, hash_container,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A hang guard for polls, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

/// No volumes: the container's declared env values, one host dir at `/out`, and a
/// termination-message file per attempt.
struct Helper {
    cgroup_root: String,
    dir: PathBuf,
}

#[async_trait]
impl RuntimeHelper for Helper {
    async fn run_container_options(
        &self,
        pod: &Pod,
        container: &Container,
        _pod_ips: &[String],
    ) -> anyhow::Result<RunContainerOptions> {
        if container.name == "broken-config" {
            anyhow::bail!("configmap \"missing\" not found");
        }
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let out = self.dir.join("out").join(&uid);
        std::fs::create_dir_all(&out)?;
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos();
        Ok(RunContainerOptions {
            envs: container
                .env
                .iter()
                .flatten()
                .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
                .collect(),
            mounts: vec![Mount {
                container_path: "/out".into(),
                host_path: out.display().to_string(),
                read_only: false,
                propagation: MountPropagation::Private,
            }],
            hostname: pod.metadata.name.clone().unwrap_or_default(),
            termination_message_host_path: Some(
                self.dir
                    .join("term")
                    .join(&uid)
                    .join(format!("{}-{n}", container.name))
                    .display()
                    .to_string(),
            ),
            annotations: Default::default(),
        })
    }

    fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        format!("{}/kubepods/besteffort/pod{uid}", self.cgroup_root)
    }

    fn dns_config(&self, _pod: &Pod) -> anyhow::Result<Option<DnsConfig>> {
        Ok(Some(DnsConfig {
            servers: vec!["10.96.0.10".into()],
            searches: vec!["default.svc.cluster.local".into()],
            options: vec!["ndots:5".into()],
        }))
    }
}

/// A cgroup root of the test's own, removed (deepest first, every hierarchy) on drop.
struct CgroupRoot(String);

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
            return;
        };
        for h in hierarchies.flatten() {
            let mut dirs = Vec::new();
            collect_dirs(&h.path().join(self.0.trim_start_matches('/')), &mut dirs);
            dirs.sort_by_key(|d| std::cmp::Reverse(d.as_os_str().len()));
            for d in dirs {
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_path_buf());
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&e.path(), out);
        }
    }
}

/// Field order is drop order: the runtime client, containerd, the cgroups, the temp dir.
struct Env {
    runtime: RuntimeManager,
    events: Arc<Mutex<Vec<RuntimeEvent>>>,
    helper: Helper,
    containerd: Containerd,
    _cgroups: CgroupRoot,
    dir: tempfile::TempDir,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().to_path_buf();
    let containerd =
        tokio::task::spawn_blocking(move || Containerd::start(&root.join("containerd")))
            .await
            .expect("join")
            .expect("containerd starts");
    let cgroup_root = format!("/kt-rt-{}-{}", std::process::id(), rand::random::<u32>());
    let runtime = RuntimeManager::connect(RuntimeOptions {
        endpoint: containerd.endpoint(),
        image_endpoint: String::new(),
        request_timeout: Duration::from_secs(60),
        pod_logs_dir: dir.path().join("pods"),
        serialize_image_pulls: true,
        container_log_max_size: 10 << 20,
        container_log_max_files: 5,
    })
    .await
    .expect("connects to containerd");
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    runtime.set_event_recorder(Arc::new(move |e| sink.lock().unwrap().push(e)));
    Env {
        runtime,
        events,
        helper: Helper {
            cgroup_root: cgroup_root.clone(),
            dir: dir.path().to_path_buf(),
        },
        containerd,
        _cgroups: CgroupRoot(cgroup_root),
        dir,
    }
}

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("{name}-{}", rand::random::<u32>()),
        },
        "spec": spec,
    }))
    .expect("a pod")
}

fn busybox(name: &str, script: &str) -> serde_json::Value {
    json!({
        "name": name,
        "image": e2e::containerd::BUSYBOX_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", script],
    })
}

impl Env {
    /// (field path, reason) of every event so far.
    fn event_reasons(&self) -> Vec<(String, &'static str)> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .map(|e| (e.field_path.clone(), e.reason))
            .collect()
    }

    async fn sync_with(&self, pod: &Pod, liveness: Option<ProbeResult>) -> PodSyncResult {
        let status = self.status(pod).await;
        let live = move |_: &ContainerId| liveness;
        let none = |_: &ContainerId| None;
        self.runtime
            .sync_pod(
                pod,
                &status,
                SyncContext {
                    pull_secrets: &[],
                    helper: &self.helper,
                    liveness: &live,
                    startup: &none,
                },
            )
            .await
    }

    async fn sync(&self, pod: &Pod) -> PodSyncResult {
        self.sync_with(pod, None).await
    }

    async fn status(&self, pod: &Pod) -> PodRuntimeStatus {
        let m = &pod.metadata;
        self.runtime
            .get_pod_status(
                m.uid.as_deref().unwrap(),
                m.name.as_deref().unwrap(),
                m.namespace.as_deref().unwrap(),
            )
            .await
            .expect("pod status")
    }

    async fn wait_for(
        &self,
        pod: &Pod,
        what: &str,
        check: impl Fn(&PodRuntimeStatus) -> bool,
    ) -> PodRuntimeStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let s = self.status(pod).await;
            if check(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {s:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn state_of(s: &PodRuntimeStatus, name: &str) -> Option<ContainerState> {
    s.container(name).map(|c| c.state)
}

fn in_subnet(ip: &str, cidr: &str) -> bool {
    let (net, bits) = cidr.split_once('/').expect("a cidr");
    let prefix: Vec<&str> = net
        .split('.')
        .take(bits.parse::<usize>().unwrap() / 8)
        .collect();
    ip.split('.').take(prefix.len()).eq(prefix.iter().copied())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_container_then_app_runs_with_ip_and_liveness_restarts() {
    let env = env().await;
    let mut app = busybox("app", "echo $GREETING > /out/app; exec sleep 3600");
    app["env"] = json!([{"name": "GREETING", "value": "hello"}]);
    let p = pod(
        "web",
        json!({
            "terminationGracePeriodSeconds": 1,
            "initContainers": [busybox("init", "echo init > /out/init; exit 0")],
            "containers": [app],
        }),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let s = env
        .wait_for(&p, "the init container to finish", |s| {
            state_of(s, "init") == Some(ContainerState::Exited)
        })
        .await;
    assert_eq!(
        state_of(&s, "app"),
        None,
        "the app waits for the init container"
    );
    let init = s.container("init").unwrap();
    assert_eq!((init.exit_code, init.reason.as_str()), (0, "Completed"));

    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let s = env
        .wait_for(&p, "the app to run", |s| {
            state_of(s, "app") == Some(ContainerState::Running)
        })
        .await;
    assert_eq!(s.sandboxes.len(), 1);
    assert_eq!(s.sandboxes[0].state, SandboxState::Ready);
    assert_eq!(s.ips.len(), 1, "{s:?}");
    assert!(
        in_subnet(&s.ips[0], &env.containerd.cni_subnet()),
        "{} in {}",
        s.ips[0],
        env.containerd.cni_subnet()
    );
    let app = s.container("app").unwrap().clone();
    let spec_app = &p.spec.as_ref().unwrap().containers[0];
    assert_eq!((app.restart_count, app.hash), (0, hash_container(spec_app)));
    assert!(
        app.started_at > 0 && app.image_ref.starts_with("sha256:"),
        "{app:?}"
    );
    let uid = p.metadata.uid.clone().unwrap();
    let out = env.dir.path().join("out").join(&uid);
    let written = std::fs::read_to_string(out.join("app")).unwrap_or_default();
    assert_eq!(written.trim(), "hello", "env reached the container");
    assert!(Path::new(&app.log_path).exists(), "{}", app.log_path);
    assert!(app.log_path.ends_with("/app/0.log"), "{}", app.log_path);

    // A steady pod: another sync starts nothing.
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    assert_eq!(env.status(&p).await.containers.len(), 2);

    // A failed liveness probe restarts the app (SIGKILL after the 2 s minimum grace).
    assert_eq!(
        env.sync_with(&p, Some(ProbeResult::Failure)).await,
        PodSyncResult::default()
    );
    let s = env
        .wait_for(&p, "the restarted app", |s| {
            s.container("app")
                .is_some_and(|c| c.state == ContainerState::Running && c.restart_count == 1)
        })
        .await;
    let attempts: Vec<_> = s.attempts("app").collect();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[1].id, app.id);
    assert_eq!(attempts[1].state, ContainerState::Exited);
    assert_eq!(attempts[1].exit_code, 137, "sleep ignores SIGTERM: killed");
    assert!(attempts[0].log_path.ends_with("/app/1.log"));

    let reasons = env.event_reasons();
    let app_events: Vec<&str> = reasons
        .iter()
        .filter(|(path, _)| path == "spec.containers{app}")
        .map(|(_, r)| *r)
        .collect();
    assert_eq!(
        app_events,
        [
            "Pulled", "Created", "Started", "Killing", "Pulled", "Created", "Started"
        ]
    );
    assert!(reasons.contains(&("spec.initContainers{init}".to_string(), "Started")));

    let pods = env.runtime.get_pods(false).await.expect("get_pods");
    let running = pods
        .iter()
        .find(|r| r.uid == uid)
        .expect("the pod is listed");
    assert_eq!(running.containers.len(), 1);
    assert_eq!(running.sandboxes.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_policy_leaves_a_failed_container_and_ends_the_pod() {
    let env = env().await;
    let p = pod(
        "fails",
        json!({
            "restartPolicy": "Never",
            "containers": [busybox("c", "printf oops > /dev/termination-log; exit 1")],
        }),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    env.wait_for(&p, "the container to exit", |s| {
        state_of(s, "c") == Some(ContainerState::Exited)
    })
    .await;
    // Nothing to keep and nothing to start: the sync stops the sandbox.
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let s = env.status(&p).await;
    assert_eq!(s.attempts("c").count(), 1, "never restarted: {s:?}");
    let c = s.container("c").unwrap();
    assert_eq!(
        (c.exit_code, c.reason.as_str(), c.message.as_str()),
        (1, "Error", "oops")
    );
    assert_eq!(s.sandboxes[0].state, SandboxState::NotReady);
    // And no sandbox is made again for a finished Never pod.
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    assert_eq!(env.status(&p).await.sandboxes.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_policy_restarts_then_backs_off() {
    let env = env().await;
    let p = pod(
        "crash",
        json!({"containers": [busybox("c", "exit 2")], "restartPolicy": "Always"}),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    env.wait_for(&p, "the first exit", |s| {
        state_of(s, "c") == Some(ContainerState::Exited)
    })
    .await;
    // The first restart is immediate.
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let s = env
        .wait_for(&p, "the restart to exit", |s| {
            s.container("c")
                .is_some_and(|c| c.restart_count == 1 && c.state == ContainerState::Exited)
        })
        .await;
    assert_eq!(s.attempts("c").count(), 2);
    assert_eq!(s.container("c").unwrap().exit_code, 2);
    // The next one waits 10 s.
    let r = env.sync(&p).await;
    let uid = p.metadata.uid.clone().unwrap();
    assert_eq!(r.errors.len(), 1, "{r:?}");
    assert_eq!(r.errors[0].container, "c");
    assert_eq!(r.errors[0].reason, "CrashLoopBackOff");
    assert_eq!(
        r.errors[0].message,
        format!("back-off 10s restarting failed container=c pod=crash_default({uid})")
    );
    assert_eq!(env.status(&p).await.attempts("c").count(), 2);
    assert!(
        env.event_reasons()
            .contains(&("spec.containers{c}".to_string(), "BackOff"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_pod_runs_pre_stop_within_the_grace_and_remove_pod_cleans_up() {
    let env = env().await;
    let mut app = busybox("app", "exec sleep 3600");
    app["lifecycle"] =
        json!({"preStop": {"exec": {"command": ["sh", "-c", "echo bye > /out/prestop"]}}});
    let p = pod(
        "stopme",
        json!({"terminationGracePeriodSeconds": 3, "containers": [app]}),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    env.wait_for(&p, "the app to run", |s| {
        state_of(s, "app") == Some(ContainerState::Running)
    })
    .await;
    let uid = p.metadata.uid.clone().unwrap();
    let running = env
        .runtime
        .get_pods(false)
        .await
        .expect("get_pods")
        .into_iter()
        .find(|r| r.uid == uid)
        .expect("listed");
    let start = Instant::now();
    // As after a kubelet restart with the pod gone from the API: grace and preStop come
    // from what the container's annotations recorded.
    env.runtime
        .kill_pod(None, &running, None)
        .await
        .expect("kill_pod");
    let took = start.elapsed();
    // sleep ignores SIGTERM, so the kill waits out the grace period, then SIGKILLs.
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "took {took:?}"
    );
    let out = env.dir.path().join("out").join(&uid).join("prestop");
    assert_eq!(
        std::fs::read_to_string(out).unwrap_or_default().trim(),
        "bye"
    );
    let s = env.status(&p).await;
    assert_eq!(state_of(&s, "app"), Some(ContainerState::Exited));
    assert_eq!(s.container("app").unwrap().exit_code, 137);
    assert_eq!(s.sandboxes[0].state, SandboxState::NotReady);
    assert!(
        !env.runtime
            .get_pods(false)
            .await
            .unwrap()
            .iter()
            .any(|r| r.uid == uid),
        "nothing of the pod runs"
    );

    env.runtime.remove_pod(&uid).await.expect("remove_pod");
    let s = env.status(&p).await;
    assert!(s.sandboxes.is_empty() && s.containers.is_empty(), "{s:?}");
    assert!(
        !env.runtime
            .get_pods(true)
            .await
            .unwrap()
            .iter()
            .any(|r| r.uid == uid)
    );
    assert!(
        !env.dir
            .path()
            .join("pods")
            .join(format!("default_stopme_{uid}"))
            .exists(),
        "the pod's logs are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_and_config_failures_use_upstream_reasons() {
    let env = env().await;
    let mut never = busybox("never", "true");
    never["image"] = json!("docker.io/library/not-imported:1");
    never["imagePullPolicy"] = json!("Never");
    let mut invalid = busybox("invalid", "true");
    invalid["image"] = json!("Not/Valid");
    let p = pod(
        "bad",
        json!({"containers": [never, invalid, busybox("broken-config", "true"), busybox("ok", "exec sleep 3600")]}),
    );
    let r = env.sync(&p).await;
    let reasons: Vec<(&str, &str)> = r
        .errors
        .iter()
        .map(|e| (e.container.as_str(), e.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("never", "ErrImageNeverPull"),
            ("invalid", "InvalidImageName"),
            ("broken-config", "CreateContainerConfigError"),
        ],
        "{r:?}"
    );
    assert_eq!(
        r.errors[0].message,
        "Container image \"docker.io/library/not-imported:1\" is not present with pull policy of Never"
    );
    assert!(
        r.errors[2]
            .message
            .contains("configmap \"missing\" not found")
    );
    env.wait_for(&p, "the good container to run", |s| {
        state_of(s, "ok") == Some(ContainerState::Running)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_network_pod_keeps_its_sandbox() {
    let env = env().await;
    let p = pod(
        "hostnet",
        json!({"hostNetwork": true, "containers": [busybox("c", "exec sleep 3600")]}),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let s = env
        .wait_for(&p, "the container to run", |s| {
            state_of(s, "c") == Some(ContainerState::Running)
        })
        .await;
    assert_eq!(s.sandboxes.len(), 1);
    assert!(s.sandboxes[0].host_network, "{s:?}");
    assert!(
        s.ips.is_empty(),
        "host network pods get the host's IPs from the kubelet"
    );
    // Nothing changed: the next sync keeps sandbox and container.
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let again = env.status(&p).await;
    assert_eq!(again.sandboxes.len(), 1);
    assert_eq!(again.sandboxes[0].state, SandboxState::Ready);
    assert_eq!(again.attempts("c").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_logs_rotate_and_the_runtime_reopens_them() {
    let env = env().await;
    // The same containerd, with a 1 KiB log limit and two files per container.
    let rotating = RuntimeManager::connect(RuntimeOptions {
        endpoint: env.containerd.endpoint(),
        image_endpoint: String::new(),
        request_timeout: Duration::from_secs(60),
        pod_logs_dir: env.dir.path().join("pods"),
        serialize_image_pulls: true,
        container_log_max_size: 1024,
        container_log_max_files: 2,
    })
    .await
    .expect("connects");
    let p = pod(
        "chatty",
        json!({"containers": [busybox("c", "i=0; while true; do echo line-$i-0123456789abcdef0123456789abcdef; i=$((i+1)); sleep 0.01; done")]}),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let log = PathBuf::from(
        env.wait_for(&p, "a log over 1 KiB", |s| {
            s.container("c")
                .is_some_and(|c| std::fs::metadata(&c.log_path).is_ok_and(|m| m.len() > 1024))
        })
        .await
        .container("c")
        .unwrap()
        .log_path
        .clone(),
    );
    let rotated = || -> Vec<String> {
        std::fs::read_dir(log.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("0.log."))
            .collect()
    };
    for round in 1..=2 {
        rotating.rotate_container_logs().await.expect("rotation");
        assert_eq!(rotated().len(), 1, "round {round}: {:?}", rotated());
        let deadline = Instant::now() + PATIENCE;
        // The container goes on writing to a fresh file at the same path, past the limit again.
        while !std::fs::metadata(&log).is_ok_and(|m| m.len() > 1024) {
            assert!(Instant::now() < deadline, "no new log after rotation");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Rotated names have one-second resolution.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let fresh = std::fs::read_to_string(&log).unwrap();
    assert!(
        fresh.lines().all(|l| l.contains(" stdout F line-")),
        "{fresh}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_pulls_back_off() {
    let env = env().await;
    let mut missing = busybox("missing", "true");
    missing["image"] = json!("registry.invalid/none/not-there:1");
    let p = pod("pull", json!({"containers": [missing]}));
    let r = env.sync(&p).await;
    assert_eq!(r.errors.len(), 1, "{r:?}");
    assert_eq!(r.errors[0].reason, "ErrImagePull", "{r:?}");
    assert!(
        r.errors[0].message.starts_with("rpc error: code = "),
        "{r:?}"
    );
    // The next sync within 10 s does not pull again.
    let r = env.sync(&p).await;
    assert_eq!(
        (r.errors[0].reason.as_str(), r.errors[0].message.as_str()),
        (
            "ImagePullBackOff",
            "Back-off pulling image \"registry.invalid/none/not-there:1\""
        )
    );
    let reasons = env.event_reasons();
    assert!(reasons.contains(&("spec.containers{missing}".to_string(), "Pulling")));
    assert!(reasons.contains(&("spec.containers{missing}".to_string(), "BackOff")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_limit_is_enforced_as_oom_killed() {
    let env = env().await;
    let mut hog = busybox("hog", "exec tail /dev/zero");
    hog["resources"] = json!({"limits": {"memory": "64Mi"}});
    let p = pod(
        "hog",
        json!({"restartPolicy": "Never", "containers": [hog]}),
    );
    assert_eq!(env.sync(&p).await, PodSyncResult::default());
    let s = env
        .wait_for(&p, "the hog to be killed", |s| {
            state_of(s, "hog") == Some(ContainerState::Exited)
        })
        .await;
    let c = s.container("hog").unwrap();
    assert_eq!(
        (c.reason.as_str(), c.exit_code),
        ("OOMKilled", 137),
        "{c:?}"
    );
}
