//! The kubelet's environment proved with raw CRI calls (no kubelet): a containerd per test
//! started by `e2e::containerd`, the test images imported, CNI networking from the instance's
//! own bridge and subnet, host networking, CRI log files, and the cleanup on drop.
//!
//! # The CRI call sequence that works here (containerd 1.6.20, cgroup v1, cgroupfs)
//! 1. `RunPodSandbox{config}`: `metadata{name, uid, namespace, attempt}`, `hostname` (EMPTY
//!    for hostNetwork), `log_directory` (absolute, created by the caller), `linux.cgroup_parent`
//!    as a cgroupfs path (`/kt-x/kubepods/besteffort/pod<uid>`: runc creates the missing
//!    parents in every hierarchy), `linux.security_context.namespace_options.network` = `POD`
//!    (CNI) or `NODE` (host network, no CNI call).
//! 2. `PodSandboxStatus`: `network.ip` is the CNI address (empty for host network).
//! 3. `CreateContainer{pod_sandbox_id, config, sandbox_config}` with the SAME sandbox config:
//!    `config.log_path` is relative to the sandbox's `log_directory` (`<name>/<attempt>.log`);
//!    the image by the name it was imported under. Then `StartContainer`.
//! 4. The log file is written as `<RFC3339Nano> stdout|stderr F|P <line>`.
//! 5. `StopContainer{timeout}` (SIGTERM, SIGKILL after the timeout), `RemoveContainer`,
//!    `StopPodSandbox` (CNI DEL, netns removed), `RemovePodSandbox`. runc removes each
//!    container's cgroup; the pod-level parents are the caller's to remove.

#[path = "kubelet_env/support.rs"]
mod support;

use e2e::containerd::Containerd;
use k8s_cri::v1::*;
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cri_runs_networked_and_host_network_pods_with_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let cgroups = CgroupRoot::new();
    let started = Instant::now();
    let containerd = Containerd::start(&tmp.path().join("containerd")).expect("containerd");
    eprintln!("containerd start + image import: {:?}", started.elapsed());
    let mut cri = Cri::new(containerd.cri_channel().await.expect("CRI channel"));

    let version = cri
        .version(VersionRequest {
            version: "v1".into(),
        })
        .await
        .expect("Version")
        .into_inner();
    assert_eq!(version.runtime_name, "containerd");
    assert_eq!(version.runtime_api_version, "v1");

    // A pod on the CNI bridge gets an address in this instance's subnet.
    let logs = tmp.path().join("pod-logs");
    let pod = run_sandbox(&mut cri, &logs, &cgroups.0, "web", false).await;
    let ip = sandbox_ip(&mut cri, &pod).await;
    assert!(
        in_subnet(&ip, &containerd.cni_subnet()),
        "{ip} not in {}",
        containerd.cni_subnet()
    );
    let hello = run_busybox(&mut cri, &pod, "hello", "echo hello; sleep 3600").await;
    wait_for_log_line(&pod, "hello", "hello").await;
    let pid = container_pid(&mut cri, &hello).await;
    // The container's cgroup is <parent>/<id> in each v1 hierarchy (cgroupfs driver).
    let parent = pod.config.linux.as_ref().unwrap().cgroup_parent.clone();
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let want = format!("{parent}/{hello}");
    assert!(
        cgroup
            .lines()
            .any(|l| l.ends_with(&format!(":memory:{want}"))),
        "{want} not in {cgroup}"
    );
    // Its eth0 has the sandbox's address, seen from inside.
    let addrs = run_busybox(
        &mut cri,
        &pod,
        "addrs",
        "ip -4 addr show eth0 | grep -o 'inet [0-9./]*'; sleep 3600",
    )
    .await;
    wait_for_log_line(&pod, "addrs", &format!("inet {ip}/24")).await;

    // A host-network pod: no CNI, the host's network namespace.
    let host_pod = run_sandbox(&mut cri, &logs, &cgroups.0, "host", true).await;
    assert_eq!(sandbox_ip(&mut cri, &host_pod).await, "");
    let on_host = run_busybox(&mut cri, &host_pod, "c", "echo on-host; sleep 3600").await;
    wait_for_log_line(&host_pod, "c", "on-host").await;
    let host_pid = container_pid(&mut cri, &on_host).await;
    assert_eq!(
        std::fs::read_link(format!("/proc/{host_pid}/ns/net")).unwrap(),
        std::fs::read_link("/proc/self/ns/net").unwrap(),
        "a hostNetwork container shares the host's network namespace"
    );

    // Stop and remove: nothing of them is left in CRI, nor mounted.
    stop_and_remove(&mut cri, &pod, &[hello.clone(), addrs]).await;
    stop_and_remove(&mut cri, &host_pod, &[on_host]).await;
    let left = cri
        .list_pod_sandbox(ListPodSandboxRequest { filter: None })
        .await
        .unwrap()
        .into_inner()
        .items;
    assert!(left.is_empty(), "sandboxes left: {left:?}");
    let left = cri
        .list_containers(ListContainersRequest { filter: None })
        .await
        .unwrap()
        .into_inner()
        .containers;
    assert!(left.is_empty(), "containers left: {left:?}");
    let netns: Vec<_> = std::fs::read_dir(containerd.state_dir().join("netns"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(netns.is_empty(), "network namespaces left: {netns:?}");
    assert!(
        !Path::new(&format!("/sys/fs/cgroup/memory{parent}/{hello}")).exists(),
        "runc removes the container's cgroup"
    );
    assert!(is_zombie_or_gone(pid), "the container's process has ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_run_at_once_and_drop_cleans_up_what_was_left_running() {
    let tmp = tempfile::tempdir().unwrap();
    let cgroups = CgroupRoot::new();
    let (a_dir, b_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Containerd::start(&a_dir));
        let b = s.spawn(|| Containerd::start(&b_dir));
        (a.join().unwrap(), b.join().unwrap())
    });
    let (a, b) = (a.expect("containerd a"), b.expect("containerd b"));
    assert_ne!(a.cni_subnet(), b.cni_subnet());
    assert_ne!(a.bridge(), b.bridge());
    assert_ne!(a.endpoint(), b.endpoint());

    let mut cri_a = Cri::new(a.cri_channel().await.unwrap());
    let mut cri_b = Cri::new(b.cri_channel().await.unwrap());
    let logs = tmp.path().join("pod-logs");
    let pod_a = run_sandbox(&mut cri_a, &logs, &cgroups.0, "pa", false).await;
    let pod_b = run_sandbox(&mut cri_b, &logs, &cgroups.0, "pb", false).await;
    let ip_a = sandbox_ip(&mut cri_a, &pod_a).await;
    let ip_b = sandbox_ip(&mut cri_b, &pod_b).await;
    assert!(in_subnet(&ip_a, &a.cni_subnet()), "{ip_a}");
    assert!(in_subnet(&ip_b, &b.cni_subnet()), "{ip_b}");
    let c_a = run_busybox(&mut cri_a, &pod_a, "c", "echo a; sleep 3600").await;
    wait_for_log_line(&pod_a, "c", "a").await;
    let pid_a = container_pid(&mut cri_a, &c_a).await;

    // Dropping `a` with its pod still running leaves nothing of it: no process, no mount, no
    // bridge; `b` is untouched.
    let (a_bridge, a_socket) = (a.bridge(), a.socket_path());
    let shim_socket = {
        use sha2::Digest as _;
        let key = format!("{}/k8s.io/{}", a_socket.display(), pod_a.id);
        let hash: String = sha2::Sha256::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Path::new("/run/containerd/s").join(hash)
    };
    assert!(
        shim_socket.exists(),
        "the pod's shim listens on {shim_socket:?}"
    );
    drop(cri_a);
    drop(a);
    assert!(!shim_socket.exists(), "{shim_socket:?} is left");
    poll("a's container to end", async || {
        is_zombie_or_gone(pid_a)
            .then_some(())
            .ok_or_else(|| "running".to_string())
    })
    .await;
    assert!(
        mounts_under(&a_dir).is_empty(),
        "{:?}",
        mounts_under(&a_dir)
    );
    assert!(!Path::new("/sys/class/net").join(&a_bridge).exists());
    let shims: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&a_socket.display().to_string()))
        .collect();
    assert!(shims.is_empty(), "processes of a left: {shims:?}");
    assert_eq!(sandbox_ip(&mut cri_b, &pod_b).await, ip_b);
    assert!(Path::new("/sys/class/net").join(b.bridge()).exists());
    stop_and_remove(&mut cri_b, &pod_b, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_harness_starts_kills_restarts_and_stops_a_kubelet() {
    use e2e::kubelet::{Kubelet, http_get, start_apiserver};
    let tmp = tempfile::tempdir().unwrap();
    // As a real cluster: the node is authorized by the Node authorizer and NodeRestriction.
    let secure = [
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
    ];
    let (api, _pki) = start_apiserver(&tmp.path().join("api"), &secure)
        .await
        .expect("apiserver");
    let containerd = Containerd::start(&tmp.path().join("containerd")).expect("containerd");
    let mut kubelet = Kubelet::start(
        &tmp.path().join("kubelet"),
        &api,
        &containerd,
        "env-node",
        serde_json::json!({"syncFrequency": "5s"}),
        &[],
    )
    .await
    .expect("kubelet");

    // The merged configuration is what the kubelet was given.
    let config: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(kubelet.config_path()).unwrap()).unwrap();
    assert_eq!(config["syncFrequency"], "5s");
    assert_eq!(
        config["containerRuntimeEndpoint"],
        containerd.endpoint().as_str()
    );
    assert_eq!(config["cgroupRoot"], kubelet.cgroup_root());

    // Its kubeconfig authenticates as the node, by a certificate the apiserver's CA signed.
    assert!(kubelet.certs().node_identity);
    let kubectl =
        e2e::kubectl::Kubectl::upstream_with_kubeconfig(tmp.path(), &kubelet.certs().kubeconfig);
    let who = kubectl.ok(&["auth", "whoami", "-o", "json"]);
    let who: serde_json::Value = serde_json::from_str(&who).expect("whoami json");
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:node:env-node"
    );
    assert!(
        who["status"]["userInfo"]["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g == "system:nodes")),
        "{who}"
    );

    // The kubelet itself gets through with those credentials: it registers its Node, which
    // the Node authorizer lets only system:node:env-node read.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let out = kubectl.run(&["get", "node", "env-node", "-o", "name"]);
        if out.success {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the node never registered: {}\n{}",
            out.stderr,
            kubelet.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Its API port serves a certificate for 127.0.0.1 from the same CA.
    let addr = ([127, 0, 0, 1], kubelet.port()).into();
    e2e::https::get(addr, &kubelet.certs().ca_file, "/healthz")
        .await
        .expect("TLS to the kubelet API with the CA's trust");

    // kill -9, restart with the same configuration, then a clean stop.
    kubelet.kill();
    assert!(http_get(kubelet.healthz_port(), "/healthz").await.is_err());
    kubelet.restart().await.expect("restart");
    assert_eq!(
        http_get(kubelet.healthz_port(), "/healthz")
            .await
            .unwrap()
            .0,
        200
    );
    let status = kubelet.stop().expect("stop");
    assert!(status.success(), "{status}\n{}", kubelet.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_after_containerd_crashed_kills_shims_and_containers() {
    let tmp = tempfile::tempdir().unwrap();
    let cgroups = CgroupRoot::new();
    let dir = tmp.path().join("containerd");
    let mut containerd = Containerd::start(&dir).expect("containerd");
    let mut cri = Cri::new(containerd.cri_channel().await.unwrap());
    let pod = run_sandbox(
        &mut cri,
        &tmp.path().join("logs"),
        &cgroups.0,
        "crash",
        false,
    )
    .await;
    let id = run_busybox(&mut cri, &pod, "c", "echo up; sleep 3600").await;
    wait_for_log_line(&pod, "c", "up").await;
    let pid = container_pid(&mut cri, &id).await;
    drop(cri);

    // A restart picks the running pod back up.
    containerd.kill();
    containerd.restart().expect("restart");
    let mut cri = Cri::new(containerd.cri_channel().await.unwrap());
    assert_eq!(container_pid(&mut cri, &id).await, pid);
    drop(cri);

    // With containerd gone for good, drop cannot ask CRI: it kills what is left itself.
    containerd.kill();
    assert!(!is_zombie_or_gone(pid), "the container outlives containerd");
    let bridge = containerd.bridge();
    drop(containerd);
    poll("the container to end", async || {
        is_zombie_or_gone(pid)
            .then_some(())
            .ok_or_else(|| "running".to_string())
    })
    .await;
    assert!(mounts_under(&dir).is_empty(), "{:?}", mounts_under(&dir));
    assert!(!Path::new("/sys/class/net").join(&bridge).exists());
    let socket = dir.join("containerd.sock").display().to_string();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&socket))
        .collect();
    assert!(left.is_empty(), "processes left: {left:?}");
}
