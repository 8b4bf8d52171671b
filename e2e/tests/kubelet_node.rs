//! The kubelet's Node end to end: our kubelet on a real containerd against our apiserver.
//! It registers its Node (labels, taints, capacity, allocatable, nodeInfo, addresses), turns
//! Ready with containerd's status, renews its Lease, creates the QoS cgroups under its
//! cgroupRoot and a Guaranteed pod's cgroup with its limits (removed with the pod); with `--bootstrap-kubeconfig` it gets its client certificate through a CSR that
//! kube-controller-manager approves and signs; a bad configuration file stops it with exit
//! code 1 and the field named.

use e2e::containerd::Containerd;
use e2e::controller_manager::ControllerManager;
use e2e::kubelet::{Kubelet, admin_client, poll, start_apiserver};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod};
use kube::api::Api;
use std::path::Path;

/// An integer quantity with a binary or no suffix (what the kubelet reports for memory, storage
/// and whole CPUs).
fn bytes(q: &str) -> i128 {
    let (number, scale) = [
        ("Ki", 1i128 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
    ]
    .iter()
    .find_map(|(suffix, scale)| q.strip_suffix(suffix).map(|n| (n, *scale)))
    .unwrap_or((q, 1));
    number
        .parse::<i128>()
        .unwrap_or_else(|_| panic!("quantity {q:?}"))
        * scale
}

fn condition(node: &Node, kind: &str) -> Option<NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .cloned()
}

async fn ready_node(nodes: &Api<Node>, name: &str) -> Result<Node, String> {
    let node = nodes
        .get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("not registered")?;
    match condition(&node, "Ready") {
        Some(c) if c.status == "True" => Ok(node),
        other => Err(format!("Ready: {other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_registers_turns_ready_renews_its_lease_and_has_pod_cgroups() {
    let dir = tempfile::tempdir().unwrap();
    let (api, pki) = start_apiserver(&dir.path().join("cluster"), &[])
        .await
        .unwrap();
    let containerd = Containerd::start(&dir.path().join("containerd")).unwrap();
    let kubelet = Kubelet::start(
        &dir.path().join("kubelet"),
        &api,
        &containerd,
        "node-e2e",
        serde_json::json!({"maxPods": 42, "kubeReserved": {"memory": "64Mi"}}),
        &[
            "--node-labels=tier=e2e,zone=a",
            "--register-with-taints=dedicated=e2e:NoSchedule",
        ],
    )
    .await
    .unwrap();
    let logs = || kubelet.logs();
    let client = admin_client(&api, &pki, dir.path()).await;
    let nodes: Api<Node> = Api::all(client.clone());

    let node = poll("the node Ready", &logs, async || {
        ready_node(&nodes, "node-e2e").await
    })
    .await;
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready.reason.as_deref(), Some("KubeletReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("kubelet is posting ready status")
    );
    for (kind, reason) in [
        ("MemoryPressure", "KubeletHasSufficientMemory"),
        ("DiskPressure", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "KubeletHasSufficientPID"),
    ] {
        let c = condition(&node, kind).unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some(reason))
        );
    }

    let labels = node.metadata.labels.clone().unwrap();
    assert_eq!(labels["kubernetes.io/hostname"], "node-e2e");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert!(labels.contains_key("kubernetes.io/arch"));
    assert_eq!(
        (labels["tier"].as_str(), labels["zone"].as_str()),
        ("e2e", "a")
    );
    let taints = node.spec.clone().unwrap().taints.unwrap_or_default();
    assert!(
        taints.iter().any(|t| t.key == "dedicated"
            && t.value.as_deref() == Some("e2e")
            && t.effect == "NoSchedule"),
        "{taints:?}"
    );

    let status = node.status.clone().unwrap();
    let info = status.node_info.clone().unwrap();
    assert!(
        info.container_runtime_version
            .starts_with("containerd://1.6"),
        "{}",
        info.container_runtime_version
    );
    assert_eq!(info.kubelet_version, "v1.33.0");
    assert_eq!(info.operating_system, "linux");
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(info.boot_id, boot_id.trim());
    assert!(!info.kernel_version.is_empty() && !info.os_image.is_empty());

    let capacity = status.capacity.clone().unwrap();
    let allocatable = status.allocatable.clone().unwrap();
    assert_eq!(capacity["pods"].0, "42");
    assert!(bytes(&capacity["cpu"].0) >= 1, "{:?}", capacity["cpu"]);
    // allocatable = capacity - kubeReserved (64Mi) - the harness's hard eviction (1Mi).
    assert_eq!(
        bytes(&capacity["memory"].0) - bytes(&allocatable["memory"].0),
        65 * 1024 * 1024
    );
    assert!(bytes(&allocatable["ephemeral-storage"].0) < bytes(&capacity["ephemeral-storage"].0));
    let addresses: Vec<(String, String)> = status
        .addresses
        .unwrap()
        .into_iter()
        .map(|a| (a.type_, a.address))
        .collect();
    assert!(
        addresses.contains(&("InternalIP".into(), "127.0.0.1".into())),
        "{addresses:?}"
    );
    assert!(
        addresses.contains(&("Hostname".into(), "node-e2e".into())),
        "{addresses:?}"
    );
    let port = status
        .daemon_endpoints
        .unwrap()
        .kubelet_endpoint
        .unwrap()
        .port;
    assert_eq!(port, i32::from(kubelet.port()));

    // The lease is held by the node and owned by it, and its renewTime moves on.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = poll("the node lease", &logs, async || {
        leases
            .get_opt("node-e2e")
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "no lease".to_string())
    })
    .await;
    let spec = lease.spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("node-e2e"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    let owner = &lease.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "node-e2e")
    );
    assert_eq!(Some(&owner.uid), node.metadata.uid.as_ref());
    let first = spec.renew_time.unwrap();
    poll("a lease renewal", &logs, async || {
        let now = leases
            .get("node-e2e")
            .await
            .map_err(|e| e.to_string())?
            .spec
            .and_then(|s| s.renew_time)
            .ok_or("no renewTime")?;
        if now.0 > first.0 {
            Ok(())
        } else {
            Err(format!("renewTime still {:?}", now.0))
        }
    })
    .await;

    // The QoS hierarchy is under the configured cgroupRoot.
    let root = kubelet.cgroup_root().trim_start_matches('/').to_string();
    for sub in ["cpu", "memory", "pids"] {
        for qos in ["kubepods", "kubepods/burstable", "kubepods/besteffort"] {
            let path = Path::new("/sys/fs/cgroup").join(sub).join(&root).join(qos);
            assert!(path.is_dir(), "{} missing\n{}", path.display(), logs());
        }
    }

    // A Guaranteed pod gets its own cgroup under kubepods with its limits; it goes with the pod.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "limited"},
        "spec": {
            "nodeName": "node-e2e",
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "containers": [{
                "name": "main",
                "image": e2e::containerd::BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"],
                "resources": {"limits": {"cpu": "100m", "memory": "32Mi"}},
            }],
        },
    }))
    .unwrap();
    let uid = pods
        .create(&Default::default(), &pod)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let cgroup = format!("{root}/kubepods/pod{uid}");
    let read = |sub: &str, file: &str| {
        std::fs::read_to_string(
            Path::new("/sys/fs/cgroup")
                .join(sub)
                .join(&cgroup)
                .join(file),
        )
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{sub}/{cgroup}/{file}: {e}"))
    };
    poll("the pod's cgroup limits", &logs, async || {
        let memory = read("memory", "memory.limit_in_bytes")?;
        let quota = read("cpu", "cpu.cfs_quota_us")?;
        if (memory.as_str(), quota.as_str()) == ("33554432", "10000") {
            Ok(())
        } else {
            Err(format!("memory {memory}, quota {quota}"))
        }
    })
    .await;
    pods.delete("limited", &Default::default()).await.unwrap();
    poll("the pod's cgroup removed", &logs, async || {
        let gone = pods
            .get_opt("limited")
            .await
            .map_err(|e| e.to_string())?
            .is_none();
        let dir = Path::new("/sys/fs/cgroup/memory").join(&cgroup);
        if gone && !dir.exists() {
            Ok(())
        } else {
            Err(format!(
                "pod gone: {gone}, {} exists: {}",
                dir.display(),
                dir.exists()
            ))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_gets_a_client_certificate_through_a_csr() {
    let dir = tempfile::tempdir().unwrap();
    let (api, pki) = start_apiserver(&dir.path().join("cluster"), &[])
        .await
        .unwrap();
    let signing_cert = format!("--cluster-signing-cert-file={}", pki.ca_file().display());
    let signing_key = format!("--cluster-signing-key-file={}", pki.ca_key_file().display());
    let _kcm = ControllerManager::start(
        &dir.path().join("kcm"),
        &api,
        &[
            "--controllers=csrapproving,csrsigning",
            &signing_cert,
            &signing_key,
        ],
    )
    .await
    .unwrap();
    // The bootstrap identity: a member of system:bootstrappers, as a bootstrap token is.
    let (cert, key) = pki.issue_client("system:bootstrap:abcdef", &["system:bootstrappers"]);
    let boot = dir.path().join("boot");
    std::fs::create_dir_all(&boot).unwrap();
    let bootstrap_kubeconfig = boot.join("bootstrap.kubeconfig");
    e2e::pki::write_cert_kubeconfig(
        &bootstrap_kubeconfig,
        &api.url(),
        &api.ca_file(),
        &cert,
        &key,
        "bootstrap",
    );
    let kubeconfig = boot.join("kubelet.kubeconfig");
    let cert_dir = boot.join("pki");
    let containerd = Containerd::start(&dir.path().join("containerd")).unwrap();
    let flags = [
        format!("--bootstrap-kubeconfig={}", bootstrap_kubeconfig.display()),
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--cert-dir={}", cert_dir.display()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let kubelet = Kubelet::start(
        &dir.path().join("kubelet"),
        &api,
        &containerd,
        "node-boot",
        serde_json::Value::Null,
        &flags,
    )
    .await
    .unwrap();
    let logs = || kubelet.logs();
    let client = admin_client(&api, &pki, dir.path()).await;

    let current = cert_dir.join("kubelet-client-current.pem");
    let pem = std::fs::read(&current).unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let (_, block) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let issued = block.parse_x509().unwrap();
    let subject = issued.subject().to_string();
    assert!(subject.contains("CN=system:node:node-boot"), "{subject}");
    assert!(subject.contains("O=system:nodes"), "{subject}");
    assert!(issued.validity().is_valid());
    let written = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        written.contains(&current.display().to_string()),
        "{written}"
    );

    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let list = csrs.list(&Default::default()).await.unwrap().items;
    let csr = list
        .iter()
        .find(|c| c.spec.signer_name == "kubernetes.io/kube-apiserver-client-kubelet")
        .expect("the kubelet's CSR");
    assert_eq!(
        csr.spec.username.as_deref(),
        Some("system:bootstrap:abcdef")
    );
    let approved = csr
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Approved" && c.status == "True")
        });
    assert!(approved, "{csr:?}");

    // The node registered with the new identity.
    let nodes: Api<Node> = Api::all(client);
    poll("the bootstrapped node Ready", &logs, async || {
        ready_node(&nodes, "node-boot").await
    })
    .await;
}

fn run_kubelet(dir: &Path, config: &str, flags: &[&str]) -> std::process::Output {
    let path = dir.join("kubelet-config.yaml");
    std::fs::write(&path, config).unwrap();
    std::process::Command::new(e2e::bin("kubelet"))
        .arg(format!("--config={}", path.display()))
        .arg("--hostname-override=bad-node")
        .arg(format!("--root-dir={}", dir.join("root").display()))
        .args(flags)
        .output()
        .unwrap()
}

#[test]
fn a_bad_configuration_stops_the_kubelet_with_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
    let cases: [(String, &[&str], &str); 4] = [
        (
            format!("{header}podLogDir: /tmp\n"),
            &[],
            "unknown field \"podLogDir\"",
        ),
        (
            format!("{header}authentication:\n  x509:\n    clientCA: /x\n"),
            &[],
            "authentication.x509.clientCA",
        ),
        (format!("{header}port: 99999\n"), &[], "port"),
        (header.to_string(), &["--cgroup-driver=systemd"], "cgroupfs"),
    ];
    for (config, flags, want) in cases {
        let out = run_kubelet(dir.path(), &config, flags);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{config}: {stderr}");
        assert!(stderr.contains(want), "{config}: want {want:?} in {stderr}");
        assert!(stderr.contains("Error:"), "{stderr}");
    }
}
