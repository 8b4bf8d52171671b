//! Volumes and env end to end: our kubelet on a real containerd against our apiserver, pods
//! bound to the node by the test. A busybox pod mounting a configMap, a secret, downwardAPI,
//! projected (service account token + configMap), emptyDir (disk and Memory) and a hostPath
//! prints what it sees; the test reads its CRI log file. An updated ConfigMap reaches the
//! running container's file within the resync period; env from configMap/secret/fieldRef/
//! resourceFieldRef and `$(VAR)` expansion reach the process; a missing ConfigMap gives
//! `CreateContainerConfigError`; deleting the pod removes its volumes (tmpfs unmounted).

use e2e::apiserver::{ApiServer, Backend};
use e2e::containerd::{BUSYBOX_IMAGE, Containerd};
use e2e::kubelet::{Kubelet, admin_client, apiserver_flags, poll};
use e2e::pki::Pki;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NODE: &str = "vol-node";
/// The kubelet's syncFrequency here: a pod is resynced (its volumes refreshed) this often.
const SYNC_FREQUENCY_SECS: u64 = 2;

/// The stdout lines of the pod's container `main`, read from its CRI log file.
fn container_lines(pod_logs: &Path, pod: &str) -> Vec<String> {
    let Ok(dirs) = std::fs::read_dir(pod_logs) else {
        return Vec::new();
    };
    let prefix = format!("default_{pod}_");
    let mut out = Vec::new();
    for dir in dirs.flatten() {
        if !dir.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let Ok(files) = std::fs::read_dir(dir.path().join("main")) else {
            continue;
        };
        for file in files.flatten() {
            let text = std::fs::read_to_string(file.path()).unwrap_or_default();
            for line in text.lines() {
                let mut parts = line.splitn(4, ' ');
                let (_, stream, _, msg) = (parts.next(), parts.next(), parts.next(), parts.next());
                if stream == Some("stdout") {
                    out.push(msg.unwrap_or_default().to_string());
                }
            }
        }
    }
    out
}

/// What the container prints: one `key=value` line per fact, then every new greeting.
/// `$(POD_NAME)` is expanded by the kubelet; `$(cat ...)` names no variable and is left for
/// the shell, as upstream.
const SCRIPT: &str = r#"
echo "expanded=$(POD_NAME)"
echo "env_color=$CFG_COLOR"
echo "env_secret=$SECRET_PW"
echo "env_node=$NODE_NAME"
echo "env_mem=$MEM_LIMIT_MI"
echo "env_cpu=$CPU_LIMIT_M"
echo "env_from=$CM_color"
echo "cfg_color=$(cat /etc/cfg/color)"
echo "cfg_link=$(readlink /etc/cfg/color)"
echo "secret=$(cat /etc/sec/password) mode=$(stat -L -c %a /etc/sec/password)"
echo "labels=$(cat /etc/info/labels)"
echo "cpu_file=$(cat /etc/info/cpu_limit)"
echo "token_parts=$(awk -F. '{print NF}' /var/run/secrets/tokens/token)"
echo "proj_hello=$(cat /var/run/secrets/tokens/hello.txt)"
echo data > /scratch/f && echo "scratch=$(cat /scratch/f)"
echo "mem=$(awk '$2 == "/mem" {print $3 " " $4}' /proc/mounts)"
echo "host=$(cat /host/host.txt)"
echo from-pod > /host/pod.txt
if touch /etc/cfg/x 2>/dev/null; then echo "cfg_readonly=no"; else echo "cfg_readonly=yes"; fi
echo "hosts=$(grep -c vols /etc/hosts)"
last=""
while true; do
  v=$(cat /etc/cfg/greeting)
  if [ "$v" != "$last" ]; then echo "greeting=$v"; last="$v"; fi
  sleep 0.2
done
"#;

fn volumes_pod(host_dir: &Path) -> Pod {
    let field = |path: &str| json!({"fieldRef": {"fieldPath": path}});
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vols", "namespace": "default", "labels": {"app": "vols"}},
        "spec": {
            "nodeName": NODE,
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", SCRIPT],
                "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
                "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CM_"}],
                "env": [
                    {"name": "POD_NAME", "valueFrom": field("metadata.name")},
                    {"name": "NODE_NAME", "valueFrom": field("spec.nodeName")},
                    {"name": "CFG_COLOR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "color"}}},
                    {"name": "SECRET_PW", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
                    {"name": "MEM_LIMIT_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "CPU_LIMIT_M", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
                ],
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/etc/cfg"},
                    {"name": "sec", "mountPath": "/etc/sec"},
                    {"name": "info", "mountPath": "/etc/info"},
                    {"name": "tokens", "mountPath": "/var/run/secrets/tokens"},
                    {"name": "scratch", "mountPath": "/scratch"},
                    {"name": "mem", "mountPath": "/mem"},
                    {"name": "host", "mountPath": "/host"},
                ],
            }],
            "volumes": [
                {"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "sec", "secret": {"secretName": "sec"}},
                {"name": "info", "downwardAPI": {"items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "cpu_limit", "resourceFieldRef": {"containerName": "main", "resource": "limits.cpu", "divisor": "1m"}},
                ]}},
                {"name": "tokens", "projected": {"sources": [
                    {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 3600, "path": "token"}},
                    {"configMap": {"name": "cfg", "items": [{"key": "greeting", "path": "hello.txt"}]}},
                ]}},
                {"name": "scratch", "emptyDir": {}},
                {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
                {"name": "host", "hostPath": {"path": host_dir, "type": "Directory"}},
            ],
        },
    }))
    .expect("a valid pod")
}

fn broken_pod() -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "broken", "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"],
                "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}],
            }],
        },
    }))
    .expect("a valid pod")
}

/// Mount points under `dir` in this (the kubelet's) mount namespace.
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(PathBuf::from)
        .filter(|p| p.starts_with(dir))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volumes_and_env_reach_the_container_and_follow_updates() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let pki = Pki::new(&dir.join("pki"));
    let (sa_private, sa_public) = pki.service_account_keys();
    // With service account keys the apiserver checks bearer tokens: the harness's own `e2e`
    // token must then be a known (admin) user.
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "e2e,e2e-admin,e2e-admin,\"system:masters\"\n").unwrap();
    let mut args = apiserver_flags(&pki);
    args.extend([
        format!("--token-auth-file={}", tokens.display()),
        "--disable-admission-plugins=ServiceAccount".to_string(),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
        format!("--service-account-key-file={}", sa_public.display()),
        format!(
            "--service-account-signing-key-file={}",
            sa_private.display()
        ),
    ]);
    let api = ApiServer::start_with(&dir.join("apiserver"), Backend::Embedded, &args)
        .await
        .expect("apiserver");
    let containerd = Containerd::start(&dir.join("containerd")).expect("containerd");
    let kubelet = Kubelet::start(
        &dir.join("kubelet"),
        &api,
        &containerd,
        NODE,
        json!({"syncFrequency": format!("{SYNC_FREQUENCY_SECS}s")}),
        &[],
    )
    .await
    .expect("kubelet");
    let logs = || format!("{}\n{}", kubelet.logs(), containerd.logs());
    let client = admin_client(&api, &pki, dir).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();

    Api::<ServiceAccount>::namespaced(client.clone(), "default")
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap(),
        )
        .await
        .expect("service account");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "cfg"},
        "data": {"greeting": "hello", "color": "blue", "1bad": "skipped"},
    }))
    .unwrap();
    config_maps.create(&pp, &cm).await.expect("configmap");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "sec"},
        "stringData": {"password": "hunter2"},
    }))
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), "default")
        .create(&pp, &secret)
        .await
        .expect("secret");
    let host_dir = dir.join("hostdir");
    std::fs::create_dir_all(&host_dir).unwrap();
    std::fs::write(host_dir.join("host.txt"), "from-host").unwrap();

    let created = pods
        .create(&pp, &volumes_pod(&host_dir))
        .await
        .expect("pod");
    let uid = created.metadata.uid.clone().expect("uid");
    pods.create(&pp, &broken_pod()).await.expect("broken pod");

    let pod_logs = kubelet.pod_logs_dir();
    let expected = [
        "expanded=vols",
        "env_color=blue",
        "env_secret=hunter2",
        &format!("env_node={NODE}"),
        "env_mem=64",
        "env_cpu=500",
        "env_from=blue",
        "cfg_color=blue",
        "cfg_link=..data/color",
        "secret=hunter2 mode=644",
        "labels=app=\"vols\"",
        "cpu_file=500",
        "token_parts=3",
        "proj_hello=hello",
        "scratch=data",
        "host=from-host",
        "cfg_readonly=yes",
        "hosts=1",
        "greeting=hello",
    ];
    let lines = poll("the container's report", &logs, async || {
        let lines = container_lines(&pod_logs, "vols");
        let missing: Vec<&str> = expected
            .iter()
            .copied()
            .filter(|want| !lines.iter().any(|l| l == want))
            .collect();
        if missing.is_empty() {
            Ok(lines)
        } else {
            Err(format!("missing {missing:?} in {lines:#?}"))
        }
    })
    .await;
    let mem = lines
        .iter()
        .find(|l| l.starts_with("mem="))
        .expect("a mem line");
    assert!(mem.starts_with("mem=tmpfs "), "{mem}");
    assert!(mem.contains("size=8192k"), "{mem}");
    assert_eq!(
        std::fs::read_to_string(host_dir.join("pod.txt")).unwrap(),
        "from-pod\n",
        "the container wrote through the hostPath"
    );

    // The update reaches the running container's file on a resync.
    let patch = json!({"data": {"greeting": "updated"}});
    config_maps
        .patch("cfg", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("configmap update");
    let updated_at = Instant::now();
    poll("the updated greeting", &logs, async || {
        let lines = container_lines(&pod_logs, "vols");
        if lines.iter().any(|l| l == "greeting=updated") {
            Ok(())
        } else {
            Err(format!("{lines:#?}"))
        }
    })
    .await;
    let took = updated_at.elapsed();
    eprintln!("configmap update visible in the container after {took:?}");
    // Upstream's bound: syncFrequency plus the object cache's TTL; we read objects directly,
    // so a resync or two (plus the container's 0.2 s poll) must do.
    assert!(
        took < Duration::from_secs(3 * SYNC_FREQUENCY_SECS + 5),
        "took {took:?} with syncFrequency {SYNC_FREQUENCY_SECS}s"
    );

    let (reason, message) = poll("CreateContainerConfigError", &logs, async || {
        let pod = pods.get("broken").await.map_err(|e| e.to_string())?;
        let waiting = pod
            .status
            .and_then(|s| s.container_statuses)
            .and_then(|c| c.into_iter().next())
            .and_then(|c| c.state)
            .and_then(|s| s.waiting)
            .ok_or("no waiting state yet")?;
        match waiting.reason.as_deref() {
            Some("CreateContainerConfigError") => Ok((
                waiting.reason.unwrap_or_default(),
                waiting.message.unwrap_or_default(),
            )),
            other => Err(format!("waiting reason {other:?}")),
        }
    })
    .await;
    assert_eq!(reason, "CreateContainerConfigError");
    assert_eq!(message, "configmap \"nope\" not found");

    // Deleting the pod tears its volumes down: the tmpfs is unmounted, the directory gone.
    let pod_dir = kubelet.root_dir().join("pods").join(&uid);
    assert!(
        !mounts_under(&pod_dir).is_empty(),
        "the Memory emptyDir is mounted"
    );
    pods.delete("vols", &DeleteParams::default())
        .await
        .expect("delete");
    poll("the pod's volumes torn down", &logs, async || {
        let mounts = mounts_under(&pod_dir);
        if mounts.is_empty() && !pod_dir.exists() {
            Ok(())
        } else {
            Err(format!(
                "mounts {mounts:?}, dir exists: {}",
                pod_dir.exists()
            ))
        }
    })
    .await;
    assert!(
        host_dir.join("host.txt").exists(),
        "hostPath contents untouched"
    );
}
