//! The real kubectl 1.33 (`/usr/bin/kubectl`) against the real apiserver binary: its typed
//! clients (`create namespace|configmap|secret|deployment`, `expose`, `run`) send protobuf
//! bodies, and the objects must come back with what was sent.

use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KUBECTL: &str = "/usr/bin/kubectl";

/// The apiserver process; killed (by its own id) when the test ends, passing or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .map_err(|e| format!("run kubectl: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn must(kubeconfig: &Path, args: &[&str]) -> String {
    kubectl(kubeconfig, args).unwrap_or_else(|e| panic!("{e}"))
}

fn get(kubeconfig: &Path, args: &[&str]) -> Value {
    let mut all = vec!["-n", "p", "get", "-o", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&must(kubeconfig, &all)).expect("kubectl get -o json")
}

fn start(dir: &Path) -> (Server, PathBuf) {
    let port = free_port();
    let log = std::fs::File::create(dir.join("apiserver.log")).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_kube-apiserver"))
        .arg(format!("--secure-port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--cert-dir={}", dir.join("certs").display()))
        .arg(format!("--data-dir={}", dir.join("data").display()))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start kube-apiserver");
    let server = Server(child);
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  \
             user:\n    token: x\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: \
             u\ncurrent-context: c\n"
        ),
    )
    .expect("write kubeconfig");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if kubectl(&kubeconfig, &["get", "--raw", "/readyz"]).is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "apiserver not ready after 60s; log: {}",
            std::fs::read_to_string(dir.join("apiserver.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, kubeconfig)
}

#[test]
fn kubectl_typed_creates_send_protobuf_and_round_trip() {
    assert!(
        Path::new(KUBECTL).exists(),
        "this test needs the real kubectl 1.33 at {KUBECTL}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, kc) = start(dir.path());
    let kc = kc.as_path();

    // The body really is protobuf: kubectl logs its request headers at -v=8.
    let verbose = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kc)
        .args(["create", "namespace", "p", "-v=8"])
        .output()
        .expect("kubectl create namespace");
    let log = String::from_utf8_lossy(&verbose.stderr);
    assert!(verbose.status.success(), "{log}");
    assert!(
        log.contains("Content-Type: application/vnd.kubernetes.protobuf")
            || log.contains("Content-Type=application/vnd.kubernetes.protobuf")
            || log.contains("\"Content-Type: application/vnd.kubernetes.protobuf\""),
        "kubectl did not send protobuf: {log}"
    );

    // No controller manager creates the namespace's default service account here, and
    // ServiceAccount admission refuses pods without it (as upstream).
    must(kc, &["-n", "p", "create", "serviceaccount", "default"]);
    must(
        kc,
        &["-n", "p", "create", "configmap", "c", "--from-literal=a=b"],
    );
    must(
        kc,
        &[
            "-n",
            "p",
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=x=y",
        ],
    );
    must(
        kc,
        &[
            "-n",
            "p",
            "create",
            "deployment",
            "d",
            "--image=busybox:1.36",
            "--replicas=2",
        ],
    );
    must(kc, &["-n", "p", "expose", "deployment", "d", "--port=80"]);
    must(kc, &["-n", "p", "run", "pod1", "--image=busybox:1.36"]);
    must(
        kc,
        &[
            "-n",
            "p",
            "create",
            "deployment",
            "zero",
            "--image=busybox:1.36",
            "--replicas=0",
        ],
    );

    let ns: Value =
        serde_json::from_str(&must(kc, &["get", "namespace", "p", "-o", "json"])).expect("ns");
    assert_eq!(ns["metadata"]["name"], "p");
    assert_eq!(ns["status"]["phase"], "Active");

    let cm = get(kc, &["configmap", "c"]);
    assert_eq!(cm["data"], serde_json::json!({"a": "b"}));
    assert!(cm.get("binaryData").is_none(), "{cm}");

    let secret = get(kc, &["secret", "s"]);
    assert_eq!(secret["data"]["x"], "eQ==", "base64 of y");
    assert_eq!(secret["type"], "Opaque");

    let deploy = get(kc, &["deployment", "d"]);
    let spec = &deploy["spec"];
    assert_eq!(spec["replicas"], 2);
    assert_eq!(spec["selector"]["matchLabels"]["app"], "d");
    assert_eq!(spec["template"]["metadata"]["labels"]["app"], "d");
    let container = &spec["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "busybox");
    assert_eq!(container["image"], "busybox:1.36");
    assert_eq!(container["resources"], serde_json::json!({}));
    // Zero values kubectl never set (Go writes them in protobuf) are not in the object.
    for absent in ["stdin", "tty", "stdinOnce", "workingDir"] {
        assert!(container.get(absent).is_none(), "{absent}: {container}");
    }
    assert!(spec.get("minReadySeconds").is_none(), "{spec}");
    assert!(spec.get("paused").is_none(), "{spec}");
    assert!(
        deploy["metadata"]["creationTimestamp"].is_string(),
        "{deploy}"
    );

    // `replicas` is a pointer: an explicit 0 survives protobuf (it is not defaulted to 1).
    assert_eq!(get(kc, &["deployment", "zero"])["spec"]["replicas"], 0);

    let svc = get(kc, &["service", "d"]);
    let port = &svc["spec"]["ports"][0];
    assert_eq!(port["port"], 80);
    assert_eq!(port["targetPort"], 80, "IntOrString as a number: {port}");
    assert!(port.get("nodePort").is_none(), "{port}");
    assert_eq!(svc["spec"]["selector"]["app"], "d");

    let pod = get(kc, &["pod", "pod1"]);
    assert_eq!(pod["metadata"]["labels"]["run"], "pod1");
    assert_eq!(pod["spec"]["containers"][0]["image"], "busybox:1.36");
    assert_eq!(pod["spec"]["containers"][0]["name"], "pod1");
    assert!(pod["spec"].get("hostNetwork").is_none(), "{pod}");
}
