//! Auditing with the real binary: a policy recording secrets at Metadata, configmaps at
//! RequestResponse and nothing else; the log lines carry upstream's event shape, bodies by
//! level, the users (impersonation included), refused requests (401 and 403), watches'
//! stages, the `Audit-ID` header, and the log rotates by size.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::secure::SecureCluster;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    resources: [{group: "", resources: ["secrets"]}]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
  - level: None
"#;

/// Every event in the log and its rotated backups, oldest file first.
fn events(dir: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("audit dir")
        .map(|e| e.expect("entry").path())
        .collect();
    // Backups (audit-<time>.log) sort before the current audit.log.
    files.sort_by_key(|p| (p.file_name() == Some("audit.log".as_ref()), p.clone()));
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("log file");
        for line in text.lines() {
            out.push(serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")));
        }
    }
    out
}

/// Waits for an event matching `pred` (events are written as responses complete).
fn wait_event(dir: &Path, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    // A hang guard, generous for a loaded 2-core machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = events(dir);
        if let Some(ev) = all.iter().find(|e| pred(e)) {
            return ev.clone();
        }
        if Instant::now() > deadline {
            let dump: Vec<String> = all.iter().map(Value::to_string).collect();
            panic!("no audit event {what}; events:\n{}", dump.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is(ev: &Value, verb: &str, resource: &str, name: &str) -> bool {
    ev["verb"] == verb
        && ev["objectRef"]["resource"] == resource
        && ev["objectRef"]["name"].as_str().unwrap_or("") == name
}

/// A GET with `headers`, returning the status and the response headers.
async fn get_with_headers(
    cluster: &SecureCluster,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, hyper::HeaderMap) {
    let stream = e2e::https::tls(
        cluster.server.addr(),
        &cluster.server.ca_file(),
        &[b"http/1.1"],
    )
    .await
    .expect("tls");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let mut req = hyper::Request::builder()
        .uri(path)
        .header("host", "localhost")
        .header("authorization", "Bearer e2e");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = sender
        .send_request(req.body(Full::new(Bytes::new())).expect("request"))
        .await
        .expect("response");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    resp.into_body().collect().await.expect("body");
    (status, headers)
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_log_follows_the_policy() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy");
    let log_dir = tmp.path().join("audit");
    let log = log_dir.join("audit.log");
    let cluster = SecureCluster::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        "--audit-log-maxsize=1",
        "--audit-log-maxbackup=2",
    ])
    .await;
    assert!(log.exists(), "the log is created at start");
    let admin = cluster.admin();

    // Metadata: who, what and the outcome, no bodies; the name of a create is recorded.
    admin.ok(&["create", "secret", "generic", "s1", "--from-literal=k=v"]);
    let ev = wait_event(&log_dir, "create secret", |e| {
        is(e, "create", "secrets", "s1")
    });
    assert_eq!(ev["kind"], "Event");
    assert_eq!(ev["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(ev["level"], "Metadata");
    assert_eq!(ev["stage"], "ResponseComplete");
    assert_eq!(
        ev["requestURI"].as_str().expect("uri").split('?').next(),
        Some("/api/v1/namespaces/default/secrets")
    );
    assert_eq!(
        ev["objectRef"],
        serde_json::json!({"resource":"secrets","namespace":"default","name":"s1","apiVersion":"v1"})
    );
    assert_eq!(ev["user"]["username"], "kubernetes-admin");
    assert!(
        ev["user"]["groups"]
            .as_array()
            .expect("groups")
            .contains(&"system:masters".into()),
        "{ev}"
    );
    assert_eq!(
        ev["responseStatus"],
        serde_json::json!({"metadata":{},"code":201})
    );
    assert!(ev.get("requestObject").is_none(), "{ev}");
    assert!(ev.get("responseObject").is_none(), "{ev}");
    assert!(
        ev["userAgent"].as_str().expect("ua").starts_with("kubectl"),
        "{ev}"
    );
    assert!(
        ev["sourceIPs"]
            .as_array()
            .expect("ips")
            .contains(&"127.0.0.1".into()),
        "{ev}"
    );
    assert_eq!(ev["annotations"]["authorization.k8s.io/decision"], "allow");
    let id = ev["auditID"].as_str().expect("id");
    assert_eq!(id.len(), 36, "a UUID: {id}");
    for ts in ["requestReceivedTimestamp", "stageTimestamp"] {
        let t = ev[ts].as_str().expect("timestamp");
        // 2026-11-21T16:00:00.123456Z: microseconds, UTC.
        assert_eq!(t.len(), 27, "{t}");
        assert!(t.ends_with('Z'), "{t}");
    }
    assert!(
        !events(&log_dir)
            .iter()
            .any(|e| e["stage"] == "RequestReceived"),
        "RequestReceived is omitted by the policy"
    );

    // RequestResponse: both bodies.
    admin.ok(&["create", "configmap", "c1", "--from-literal=a=b"]);
    let ev = wait_event(&log_dir, "create configmap", |e| {
        is(e, "create", "configmaps", "c1")
    });
    assert_eq!(ev["level"], "RequestResponse");
    assert_eq!(ev["requestObject"]["data"]["a"], "b", "{ev}");
    assert_eq!(ev["responseObject"]["metadata"]["name"], "c1", "{ev}");
    assert!(ev["responseObject"]["metadata"]["uid"].is_string(), "{ev}");
    admin.ok(&["get", "configmap", "c1", "-o", "json"]);
    let ev = wait_event(&log_dir, "get configmap", |e| {
        is(e, "get", "configmaps", "c1")
    });
    assert!(
        ev.get("requestObject").is_none(),
        "reads have no request body"
    );
    assert_eq!(ev["responseObject"]["data"]["a"], "b", "{ev}");

    // None: nothing.
    admin.ok(&["get", "pods"]);
    admin.ok(&["create", "namespace", "quiet"]);

    // A 403 is audited, with the Status and authorization's decision.
    let viewer = cluster.token_user("viewer-token");
    viewer.fails(&["get", "secrets"]);
    let ev = wait_event(&log_dir, "forbidden list", |e| {
        e["verb"] == "list" && e["user"]["username"] == "viewer"
    });
    assert_eq!(ev["level"], "Metadata");
    assert_eq!(ev["responseStatus"]["code"], 403);
    assert_eq!(ev["responseStatus"]["status"], "Failure");
    assert_eq!(ev["responseStatus"]["reason"], "Forbidden");
    assert!(
        ev["responseStatus"]["message"]
            .as_str()
            .expect("message")
            .contains("cannot list resource \"secrets\""),
        "{ev}"
    );
    assert_eq!(ev["annotations"]["authorization.k8s.io/decision"], "forbid");
    assert!(ev["annotations"]["authorization.k8s.io/reason"].is_string());

    // Impersonation: the user who asked and the one acted as.
    admin.fails(&["get", "secrets", "--as=viewer"]);
    let ev = wait_event(&log_dir, "impersonated list", |e| {
        e["verb"] == "list" && e["impersonatedUser"]["username"] == "viewer"
    });
    assert_eq!(ev["user"]["username"], "kubernetes-admin");
    assert_eq!(ev["responseStatus"]["code"], 403);

    // A failed authentication: one event when the response starts, no user.
    let (status, _) = cluster
        .server
        .request(
            "GET",
            "/api/v1/namespaces/default/secrets",
            None,
            Bytes::new(),
        )
        .await
        .expect("request");
    assert_eq!(status, 200, "the e2e token is an administrator");
    let (status, _) = e2e::https::get_as(
        cluster.server.addr(),
        &cluster.server.ca_file(),
        Some("no-such-token"),
        "/api/v1/namespaces/default/secrets",
    )
    .await
    .expect("request");
    assert_eq!(status, 401);
    let ev = wait_event(&log_dir, "401", |e| e["responseStatus"]["code"] == 401);
    assert_eq!(ev["stage"], "ResponseStarted");
    assert_eq!(ev["user"], serde_json::json!({}));
    assert_eq!(
        ev["responseStatus"]["message"],
        "Authentication failed, attempted: bearer"
    );

    // The Audit-ID header: the client's is echoed and logged, otherwise a new one.
    let (status, headers) = get_with_headers(
        &cluster,
        "/api/v1/namespaces/default/configmaps/c1",
        &[("audit-id", "e2e-audit-id-1")],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["audit-id"], "e2e-audit-id-1");
    wait_event(&log_dir, "client audit id", |e| {
        e["auditID"] == "e2e-audit-id-1"
    });
    let (status, headers) = get_with_headers(&cluster, "/api/v1/pods", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["audit-id"].len(), 36, "{headers:?}");
    let (_, headers) = get_with_headers(&cluster, "/healthz", &[]).await;
    assert!(headers.contains_key("audit-id"), "every response has one");

    // A watch: ResponseStarted when it starts, ResponseComplete when it ends.
    let mut watch = admin.spawn(&["get", "configmaps", "-w", "--output-watch-events"]);
    watch.wait_for(Duration::from_secs(20), "the watch", |out| {
        out.contains("c1")
    });
    let started = wait_event(&log_dir, "watch started", |e| {
        e["verb"] == "watch" && e["stage"] == "ResponseStarted"
    });
    drop(watch);
    let id = started["auditID"].clone();
    let done = wait_event(&log_dir, "watch complete", |e| {
        e["auditID"] == id && e["stage"] == "ResponseComplete"
    });
    assert_eq!(done["responseStatus"]["code"], 200);

    // Rotation at 1 MB: big configmaps recorded twice (request and response) fill it fast.
    let big = "x".repeat(300 * 1024);
    let manifest_dir = tmp.path().join("manifests");
    std::fs::create_dir_all(&manifest_dir).expect("manifests");
    for i in 0..4 {
        let file = manifest_dir.join(format!("big{i}.json"));
        let cm = serde_json::json!({"apiVersion":"v1","kind":"ConfigMap",
            "metadata":{"name":format!("big{i}")},"data":{"blob":big}});
        std::fs::write(&file, cm.to_string()).expect("manifest");
        admin.ok(&["create", "-f", file.to_str().expect("path")]);
    }
    wait_event(&log_dir, "last big create", |e| {
        is(e, "create", "configmaps", "big3")
    });
    let names: Vec<String> = std::fs::read_dir(&log_dir)
        .expect("audit dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let backups: Vec<&String> = names.iter().filter(|n| n.starts_with("audit-")).collect();
    assert!(!backups.is_empty(), "rotated: {names:?}");
    assert!(backups.len() <= 2, "--audit-log-maxbackup=2: {names:?}");
    for name in &names {
        let size = std::fs::metadata(log_dir.join(name)).expect("file").len();
        assert!(size <= 1024 * 1024, "{name} is {size} bytes");
    }
    // Nothing for the None rules (pods, namespaces) anywhere.
    for ev in events(&log_dir) {
        let resource = ev["objectRef"]["resource"].as_str().unwrap_or("");
        assert!(!["pods", "namespaces"].contains(&resource), "{ev}");
        assert!(
            !ev["requestURI"]
                .as_str()
                .unwrap_or("")
                .starts_with("/healthz"),
            "{ev}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_policy_files_stop_the_start() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
    )
    .expect("policy");
    let out = std::process::Command::new(e2e::bin("kube-apiserver"))
        .args([
            &format!("--audit-policy-file={}", policy.display()),
            "--audit-log-path=-",
            &format!("--data-dir={}", tmp.path().join("data").display()),
            &format!("--cert-dir={}", tmp.path().join("certs").display()),
            "--secure-port=1",
        ])
        .output()
        .expect("running kube-apiserver");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("loading audit policy file")
            && stderr.contains("rules[0].level: Unsupported value: \"Loud\""),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_mode_writes_legacy_lines_and_flushes_at_shutdown() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy");
    let log = tmp.path().join("audit.log");
    let mut cluster = SecureCluster::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        "--audit-log-mode=batch",
        "--audit-log-format=legacy",
    ])
    .await;
    cluster.admin().ok(&["create", "configmap", "batched"]);
    let status = cluster
        .server
        .terminate(Duration::from_secs(20))
        .expect("SIGTERM");
    assert!(status.success(), "{status}");
    let text = std::fs::read_to_string(&log).expect("log");
    let line = text
        .lines()
        .find(|l| l.contains("uri=\"/api/v1/namespaces/default/configmaps?"))
        .unwrap_or_else(|| panic!("no create line in:\n{text}"));
    assert!(line.contains(" AUDIT: id=\""), "{line}");
    assert!(line.contains("stage=\"ResponseComplete\""), "{line}");
    assert!(line.contains("method=\"create\""), "{line}");
    assert!(line.contains("user=\"kubernetes-admin\""), "{line}");
    assert!(
        line.contains("as=\"<self>\" asgroups=\"<lookup>\""),
        "{line}"
    );
    assert!(line.ends_with("response=\"201\""), "{line}");
}
