//! The kubelet API with real processes: our apiserver (Node,RBAC, kubelet client flags), a
//! containerd per test and our kubelet running busybox pods. The real kubectl reaches the
//! kubelet through the apiserver (`logs` with `-f`, `--previous`, `--tail`, `--since`,
//! `--timestamps`; `exec` with and without stdin; `attach`; `port-forward`; `cp`), and the
//! kubelet API is called directly with client certificates and tokens (authentication,
//! SubjectAccessReview authorization, `/pods`, `/healthz`, `/stats/summary`,
//! `/metrics/resource`, the read-only port).

use e2e::containerd::BUSYBOX_IMAGE;
use e2e::kubectl::Kubectl;
use e2e::node_fixture::Node;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A hang guard for polls, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);
const NODE: &str = "srv-node";

/// Static token users of the apiserver: the e2e helpers' admin and a user RBAC grants only
/// `nodes/stats`.
const TOKENS: &str = "e2e,e2e-admin,1000,\"system:masters\"\nstats-token,stats-reader,1001\n";

struct Cluster {
    node: Node,
    k: Kubectl,
    dir: PathBuf,
}

async fn cluster(dir: &Path) -> Cluster {
    let node = Node::start(dir, NODE, TOKENS).await;
    let k = Kubectl::upstream(&dir.join("kubectl"), &node.api.url(), &node.api.ca_file());
    let c = Cluster {
        node,
        k,
        dir: dir.to_path_buf(),
    };
    c.wait(&format!("node {NODE} registered"), || {
        let out = c.k.run(&["get", "node", NODE, "-o", "name"]);
        out.success.then_some(()).ok_or(out.stderr)
    });
    c
}

impl Cluster {
    fn wait<T>(&self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match check() {
                Ok(v) => return v,
                Err(last) if Instant::now() > deadline => panic!(
                    "timed out waiting for {what}: {last}\n----- kubelet log -----\n{}",
                    tail(&self.node.kubelet.logs(), 60)
                ),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Creates a busybox pod bound to the node running `script`, and waits until it runs.
    fn run_pod(&self, name: &str, script: &str, extra: &str) {
        let manifest = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {NODE}\n  \
             terminationGracePeriodSeconds: 1\n{extra}  containers:\n  - name: main\n    \
             image: {BUSYBOX_IMAGE}\n    imagePullPolicy: Never\n    command: [\"sh\", \"-c\", {script:?}]\n"
        );
        let path = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&path, manifest).unwrap();
        self.k.ok(&["apply", "-f", path.to_str().unwrap()]);
        self.wait_running(name, 0);
    }

    /// Waits until the pod's container runs with at least `restarts` restarts.
    fn wait_running(&self, name: &str, restarts: u32) {
        self.wait(&format!("pod {name} running"), || {
            let out = self.k.run(&[
                "get",
                "pod",
                name,
                "-o",
                "jsonpath={.status.containerStatuses[0].state.running.startedAt} {.status.containerStatuses[0].restartCount}",
            ]);
            let text = out.stdout.trim().to_string();
            match text.split_once(' ') {
                Some((started, n))
                    if !started.is_empty() && n.parse::<u32>().unwrap_or(0) >= restarts =>
                {
                    Ok(())
                }
                _ => Err(format!("{text:?} {}", out.stderr)),
            }
        });
    }

    fn logs(&self, args: &[&str]) -> String {
        let mut all = vec!["logs"];
        all.extend_from_slice(args);
        self.k.ok(&all)
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_logs_exec_attach_port_forward_and_cp_reach_the_kubelet() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cluster(tmp.path()).await;

    // Logs: whole, --tail, --timestamps, --since, --since-time.
    c.run_pod(
        "talker",
        "echo one; echo two; echo three; exec sleep 3600",
        "",
    );
    c.wait("talker's three lines", || {
        let out = c.k.run(&["logs", "talker"]);
        (out.stdout == "one\ntwo\nthree\n")
            .then_some(())
            .ok_or(out.stdout + &out.stderr)
    });
    assert_eq!(c.logs(&["talker", "--tail=1"]), "three\n");
    assert_eq!(
        c.logs(&["talker", "--tail=2", "-c", "main"]),
        "two\nthree\n"
    );
    let stamped = c.logs(&["talker", "--timestamps"]);
    let lines: Vec<&str> = stamped.lines().collect();
    assert_eq!(lines.len(), 3, "{stamped}");
    for (line, word) in lines.iter().zip(["one", "two", "three"]) {
        let (ts, text) = line.split_once(' ').expect("a timestamp prefix");
        assert!(ts.parse::<jiff::Timestamp>().is_ok(), "{line}");
        assert_eq!(text, word);
    }
    assert_eq!(c.logs(&["talker", "--since=1h"]), "one\ntwo\nthree\n");
    let future = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1)).to_string();
    assert_eq!(c.logs(&["talker", &format!("--since-time={future}")]), "");
    assert_eq!(c.logs(&["talker", "--limit-bytes=5"]), "one\nt");

    // exec, with stdin, and `cp` (tar through exec) both ways.
    assert_eq!(
        c.k.ok(&["exec", "talker", "--", "sh", "-c", "echo hi"]),
        "hi\n"
    );
    let out =
        c.k.run_with_stdin(&["exec", "-i", "talker", "--", "cat"], "from stdin\n");
    assert!(out.success, "{}", out.stderr);
    assert_eq!(out.stdout, "from stdin\n");
    let failed = c.k.run(&["exec", "talker", "--", "sh", "-c", "exit 3"]);
    assert!(!failed.success);
    assert!(failed.stderr.contains("exit code 3"), "{}", failed.stderr);
    let local = tmp.path().join("in.txt");
    std::fs::write(&local, "copied content\n").unwrap();
    c.k.ok(&["cp", local.to_str().unwrap(), "talker:/tmp/in.txt"]);
    assert_eq!(
        c.k.ok(&["exec", "talker", "--", "cat", "/tmp/in.txt"]),
        "copied content\n"
    );
    let back = tmp.path().join("out.txt");
    c.k.ok(&["cp", "talker:/tmp/in.txt", back.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "copied content\n");

    // logs -f: lines written after the start stream through; attach sees them too.
    c.run_pod(
        "ticker",
        "echo start; while true; do if [ -f /tmp/go ]; then echo go; rm /tmp/go; fi; sleep 0.2; done",
        "",
    );
    let mut follow = c.k.spawn(&["logs", "-f", "ticker"]);
    follow.wait_for(PATIENCE, "the first line", |o| o.contains("start\n"));
    let attach = c.k.spawn(&["attach", "ticker"]);
    // Nothing tells when attach's stream is up, and a line written before it is lost to it:
    // touch until attach saw one rather than once after a guessed delay.
    let deadline = Instant::now() + PATIENCE;
    while !attach.stdout().contains("go\n") {
        assert!(
            Instant::now() < deadline,
            "attach never saw a line: {:?} {:?}",
            attach.stdout(),
            attach.stderr()
        );
        c.k.ok(&["exec", "ticker", "--", "touch", "/tmp/go"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    follow.wait_for(PATIENCE, "a line written while following", |o| {
        o.contains("start\ngo\n")
    });
    drop(attach);
    drop(follow);

    // --previous: the first run's log after the container restarted.
    c.run_pod(
        "restarter",
        "echo run $(cat /proc/sys/kernel/random/uuid); trap 'exit 3' TERM; sleep 3600 & wait",
        "",
    );
    // Running says the container started, not that its first line reached the log yet.
    let first = c.wait("the first run's log", || {
        let out = c.k.run(&["logs", "restarter"]);
        (out.success && out.stdout.starts_with("run ") && out.stdout.ends_with('\n'))
            .then(|| out.stdout.clone())
            .ok_or(out.stdout + &out.stderr)
    });
    // The exec may be cut off by the container it stops (exit 137): the restart count below
    // is what proves the signal landed.
    c.k.run(&["exec", "restarter", "--", "kill", "1"]);
    c.wait_running("restarter", 1);
    c.wait("the second run's log", || {
        let out = c.k.run(&["logs", "restarter"]);
        (out.success && out.stdout.starts_with("run ") && out.stdout != first)
            .then_some(())
            .ok_or(out.stdout + &out.stderr)
    });
    assert_eq!(c.logs(&["restarter", "--previous"]), first);
    let none = c.k.fails(&["logs", "talker", "--previous"]);
    assert!(none.contains("previous terminated container"), "{none}");

    // port-forward to busybox httpd, then an HTTP GET through the forwarded port.
    c.run_pod(
        "web",
        "mkdir -p /www && echo hello-through-port-forward > /www/index.html && exec httpd -f -p 8080 -h /www",
        "",
    );
    let port = e2e::free_port();
    let mut forward =
        c.k.spawn(&["port-forward", "pod/web", &format!("{port}:8080")]);
    forward.wait_for(PATIENCE, "the forwarding line", |o| {
        o.contains("Forwarding from")
    });
    let body = http_get_loopback(port, "/index.html").await;
    assert!(body.contains("hello-through-port-forward"), "{body}");
    drop(forward);
    drop(c);
}

/// GET over plain HTTP/1.0 to 127.0.0.1:`port` (retried until the forwarder answers).
async fn http_get_loopback(port: u16, path: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let attempt = async {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
                .await?;
            let mut out = String::new();
            s.read_to_string(&mut out).await?;
            anyhow::Ok(out)
        };
        match tokio::time::timeout(Duration::from_secs(10), attempt).await {
            Ok(Ok(out)) if out.starts_with("HTTP/1.") => return out,
            other if Instant::now() > deadline => panic!("GET through port-forward: {other:?}"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One HTTPS request to the kubelet API, verifying its serving certificate with `ca`,
/// presenting the client certificate `identity` and/or the bearer `token`.
async fn kubelet_get(
    port: u16,
    ca: &Path,
    identity: Option<&(PathBuf, PathBuf)>,
    token: Option<&str>,
    path: &str,
) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_file(key).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .expect("TLS handshake with the kubelet");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{auth}\r\n").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response from {path}: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kubelet_api_authenticates_and_authorizes_as_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let c = cluster(tmp.path()).await;
    c.run_pod("stats-pod", "exec sleep 3600", "");
    let ca = c.node.kubelet.certs().ca_file.clone();
    let port = c.node.kubelet.port();
    let pki = &c.node.pki;
    let admin = pki.issue_client("kubelet-api-admin", &["system:masters"]);
    let nobody = pki.issue_client("nobody", &[]);

    let (status, body) = kubelet_get(port, &ca, Some(&admin), None, "/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, body) = kubelet_get(port, &ca, Some(&admin), None, "/pods").await;
    assert_eq!(status, 200, "{body}");
    let pods: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(pods["kind"], "PodList");
    let names: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"stats-pod"), "{names:?}");

    // The summary reports the node and the pod's container with CPU and memory.
    let deadline = Instant::now() + PATIENCE;
    let summary = loop {
        let (status, body) = kubelet_get(port, &ca, Some(&admin), None, "/stats/summary").await;
        let s: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let ready = s["pods"].as_array().is_some_and(|pods| {
            pods.iter().any(|p| {
                p["podRef"]["name"] == "stats-pod"
                    && p["containers"][0]["name"] == "main"
                    && p["containers"][0]["memory"]["workingSetBytes"]
                        .as_u64()
                        .is_some()
            })
        });
        if ready {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "no summary with the pod's container: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(summary["node"]["nodeName"], NODE);
    assert!(
        summary["node"]["cpu"]["usageCoreNanoSeconds"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        summary["node"]["memory"]["workingSetBytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(summary["node"]["fs"]["capacityBytes"].as_u64().unwrap() > 0);
    let (status, metrics) = kubelet_get(port, &ca, Some(&admin), None, "/metrics/resource").await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("container_memory_working_set_bytes{container=\"main\",namespace=\"default\",pod=\"stats-pod\"}"),
        "{metrics}"
    );

    // No credentials: 401. A user RBAC knows nothing of: 403 naming what was checked.
    let (status, body) = kubelet_get(port, &ca, None, None, "/pods").await;
    assert_eq!((status, body.as_str()), (401, "Unauthorized\n"));
    let (status, body) = kubelet_get(port, &ca, Some(&nobody), None, "/pods").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body,
        "Forbidden (user=nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
    );
    let (status, _) = kubelet_get(port, &ca, None, Some("not-a-token"), "/pods").await;
    assert_eq!(status, 401);

    // A token user (TokenReview) granted only nodes/stats: the summary yes, the pods no.
    let role = tmp.path().join("stats-role.yaml");
    std::fs::write(
        &role,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: node-stats\n\
         rules:\n- apiGroups: [\"\"]\n  resources: [\"nodes/stats\"]\n  verbs: [\"get\"]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: node-stats\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: node-stats\n\
         subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: stats-reader\n",
    )
    .unwrap();
    c.k.ok(&["apply", "-f", role.to_str().unwrap()]);
    let (status, body) = kubelet_get(port, &ca, None, Some("stats-token"), "/stats/summary").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = kubelet_get(port, &ca, None, Some("stats-token"), "/pods").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("user=stats-reader"), "{body}");

    // The read-only port: plain HTTP, no credentials.
    let ro = c.node.kubelet.read_only_port();
    let (status, body) = e2e::kubelet::http_get(ro, "/pods").await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("stats-pod"), "{body}");
    let (status, _) = e2e::kubelet::http_get(ro, "/containerLogs/default/stats-pod/main")
        .await
        .unwrap();
    assert_eq!(
        status, 404,
        "debugging endpoints are not on the read-only port"
    );
    let _ = &c.node.api;
}
