//! The server end to end over a real socket, with a stub host and runtime: routing,
//! authentication, logs (with follow), `/run`, and the exec proxy to a fake streaming server.

use super::*;
use crate::container::{
    ContainerId, ContainerState, PodRuntimeStatus, RuntimeContainerStatus, RuntimePod, SandboxState,
};
use crate::kuberuntime::ExecResult;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct StubRuntime {
    state: Mutex<ContainerState>,
    log_path: PathBuf,
    streaming: Mutex<String>,
}

#[async_trait::async_trait]
impl crate::pleg::PodLister for StubRuntime {
    async fn get_pods(&self, _all: bool) -> anyhow::Result<Vec<RuntimePod>> {
        Ok(vec![RuntimePod {
            uid: "uid-1".into(),
            name: "p".into(),
            namespace: "ns".into(),
            sandboxes: vec![("sb".into(), SandboxState::Ready)],
            containers: vec![(id(), "c".into(), *self.state.lock())],
        }])
    }
    async fn get_pod_status(&self, _: &str, _: &str, _: &str) -> anyhow::Result<PodRuntimeStatus> {
        Ok(PodRuntimeStatus {
            uid: "uid-1".into(),
            name: "p".into(),
            namespace: "ns".into(),
            containers: vec![RuntimeContainerStatus {
                id: id(),
                name: "c".into(),
                state: *self.state.lock(),
                created_at: 0,
                started_at: 0,
                finished_at: 0,
                exit_code: 0,
                image: String::new(),
                image_ref: String::new(),
                hash: 0,
                restart_count: 0,
                reason: String::new(),
                message: String::new(),
                log_path: self.log_path.display().to_string(),
            }],
            ..Default::default()
        })
    }
}

#[async_trait::async_trait]
impl RuntimeApi for StubRuntime {
    async fn exec_sync(
        &self,
        _: &ContainerId,
        cmd: &[String],
        _: Duration,
    ) -> anyhow::Result<ExecResult> {
        Ok(ExecResult {
            stdout: cmd.join("|").into_bytes(),
            stderr: Vec::new(),
            exit_code: 0,
        })
    }
    async fn get_exec(
        &self,
        _: &ContainerId,
        cmd: &[String],
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String> {
        let flags = flags([stdin, stdout, stderr, tty]);
        let cmd = cmd.join("-");
        Ok(format!("{}/exec/{cmd}/{flags}", self.streaming.lock()))
    }
    async fn get_attach(
        &self,
        _: &ContainerId,
        stdin: bool,
        stdout: bool,
        stderr: bool,
        tty: bool,
    ) -> anyhow::Result<String> {
        let flags = flags([stdin, stdout, stderr, tty]);
        Ok(format!("{}/attach/{flags}", self.streaming.lock()))
    }
    async fn get_port_forward(&self, sandbox: &str, _: &[i32]) -> anyhow::Result<String> {
        Ok(format!("{}/portforward/{sandbox}", self.streaming.lock()))
    }
}

/// The stdin, stdout, stderr and tty asked of the runtime, as `0`s and `1`s in the URL the
/// fake streaming server echoes.
fn flags(f: [bool; 4]) -> String {
    f.iter().map(|&b| if b { '1' } else { '0' }).collect()
}

fn id() -> ContainerId {
    ContainerId::parse("containerd://abc").unwrap()
}

struct StubHost {
    runtime: Arc<StubRuntime>,
    dir: PathBuf,
}

impl HostInterface for StubHost {
    fn node_name(&self) -> String {
        "n1".into()
    }
    fn pods(&self) -> Vec<Arc<Pod>> {
        vec![Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("uid-1".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    // A terminal, which attach must ask the runtime for whatever the client
                    // asked.
                    tty: Some(true),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        })]
    }
    fn runtime(&self) -> Arc<dyn RuntimeApi> {
        self.runtime.clone()
    }
    fn pod_logs_dir(&self) -> PathBuf {
        self.dir.clone()
    }
    fn root_dir(&self) -> PathBuf {
        self.dir.clone()
    }
}

struct Fixture {
    addr: std::net::SocketAddr,
    runtime: Arc<StubRuntime>,
    log: PathBuf,
    _dir: tempfile::TempDir,
    _shutdown: tokio_util::sync::DropGuard,
}

async fn start(auth: AuthConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("0.log");
    std::fs::write(
        &log,
        "2024-01-01T00:00:01Z stdout F one\n2024-01-01T00:00:02Z stderr P tw\n2024-01-01T00:00:02Z stderr F o\n",
    )
    .unwrap();
    let runtime = Arc::new(StubRuntime {
        state: Mutex::new(ContainerState::Running),
        log_path: log.clone(),
        streaming: Mutex::new(String::new()),
    });
    let host = Arc::new(StubHost {
        runtime: runtime.clone(),
        dir: dir.path().to_path_buf(),
    });
    let server = KubeletServer::new(
        host,
        DebugHandlers::default(),
        ServerAuth::new(auth, None).unwrap(),
    );
    let shutdown = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = serve(listener, None, server.service(), shutdown.clone()).unwrap();
    Fixture {
        addr: running.local_addr,
        runtime,
        log,
        _dir: dir,
        _shutdown: shutdown.drop_guard(),
    }
}

fn open() -> AuthConfig {
    AuthConfig {
        anonymous: true,
        webhook_authentication: false,
        authorization: AuthorizationMode::AlwaysAllow,
        ..Default::default()
    }
}

async fn request(addr: std::net::SocketAddr, method: Method, path: &str) -> Response<Incoming> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "kubelet")
        .body(Empty::<Bytes>::new())
        .unwrap();
    sender.send_request(req).await.unwrap()
}

async fn text(addr: std::net::SocketAddr, method: Method, path: &str) -> (u16, String) {
    let response = request(addr, method, path).await;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn endpoints_answer_as_upstream() {
    let f = start(open()).await;
    let cases: &[(Method, &str, u16, &str)] = &[
        (Method::GET, "/healthz", 200, "ok"),
        (Method::GET, "/healthz/ping", 200, "ok"),
        (Method::GET, "/pods", 200, "\"kind\":\"PodList\""),
        (Method::GET, "/pods/", 200, "\"uid\":\"uid-1\""),
        (Method::GET, "/runningpods/", 200, "\"name\":\"c\""),
        (Method::GET, "/spec/", 200, "num_cores"),
        (Method::GET, "/configz", 200, "{"),
        (Method::GET, "/containerLogs/ns/p/c", 200, "one\ntwo\n"),
        (
            Method::GET,
            "/containerLogs/ns/p/c?tailLines=1",
            200,
            "two\n",
        ),
        (Method::GET, "/containerLogs/ns/p/c?limitBytes=2", 200, "on"),
        (
            Method::GET,
            "/containerLogs/ns/p/c?timestamps=true&tailLines=1",
            200,
            "2024-01-01T00:00:02.000000000Z two\n",
        ),
        (
            Method::GET,
            "/containerLogs/ns/p/c?sinceTime=2024-01-01T00:00:02Z",
            200,
            "two\n",
        ),
        (
            Method::GET,
            "/containerLogs/ns/p/c?tailLines=-1",
            400,
            "tailLines",
        ),
        (
            Method::GET,
            "/containerLogs/ns/nope/c",
            404,
            "pod \"nope\" does not exist",
        ),
        (
            Method::GET,
            "/containerLogs/ns/p/x",
            404,
            "container \"x\" not found in pod \"p\"",
        ),
        (
            Method::GET,
            "/containerLogs/ns/p/c?previous=true",
            400,
            "previous terminated container",
        ),
        (Method::POST, "/run/ns/p/c?cmd=echo+hi", 200, "echo|hi"),
        (
            Method::GET,
            "/run/ns/p/c?cmd=echo",
            404,
            "404 page not found",
        ),
        (Method::POST, "/exec/ns/p/c", 400, "at least 1 of stdin"),
        (
            Method::POST,
            "/exec/ns/other/c?output=1&command=x",
            404,
            "pod does not exist",
        ),
        (Method::GET, "/stats/summary", 200, "\"nodeName\":\"n1\""),
        (
            Method::GET,
            "/metrics/resource",
            200,
            "resource_scrape_error 0",
        ),
        (Method::GET, "/metrics", 200, ""),
        (Method::GET, "/nope", 404, "404 page not found"),
    ];
    for (method, path, status, needle) in cases {
        let (got, body) = text(f.addr, method.clone(), path).await;
        assert_eq!(got, *status, "{method} {path}: {body}");
        if *status == 200 && path.starts_with("/containerLogs") {
            assert_eq!(body, *needle, "{path}");
        } else {
            assert!(body.contains(needle), "{method} {path}: {body}");
        }
    }
}

/// Reads frames into `seen` until it contains `want`.
async fn until(body: &mut Incoming, seen: &mut String, want: &str) {
    while !seen.contains(want) {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .unwrap_or_else(|_| panic!("waiting for {want:?}, got {seen:?}"))
            .expect("the stream goes on")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

#[tokio::test]
async fn follow_streams_new_lines_and_ends_when_the_container_stops() {
    let f = start(open()).await;
    let response = request(f.addr, Method::GET, "/containerLogs/ns/p/c?follow=true").await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut seen = String::new();
    until(&mut body, &mut seen, "one\ntwo\n").await;
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&f.log)
        .unwrap();
    use std::io::Write;
    writeln!(log, "2024-01-01T00:00:03Z stdout F three").unwrap();
    until(&mut body, &mut seen, "one\ntwo\nthree\n").await;
    // Rotation: the file is replaced; the follower continues with the new one.
    std::fs::rename(&f.log, f.log.with_extension("log.1")).unwrap();
    std::fs::write(&f.log, "2024-01-01T00:00:04Z stdout F four\n").unwrap();
    until(&mut body, &mut seen, "one\ntwo\nthree\nfour\n").await;
    *f.runtime.state.lock() = ContainerState::Exited;
    let rest = tokio::time::timeout(Duration::from_secs(5), body.collect())
        .await
        .expect("the stream ends once the container has stopped")
        .unwrap();
    assert!(rest.to_bytes().is_empty());
}

#[tokio::test]
async fn unauthenticated_requests_get_401() {
    let f = start(AuthConfig {
        anonymous: false,
        webhook_authentication: false,
        authorization: AuthorizationMode::AlwaysAllow,
        ..Default::default()
    })
    .await;
    assert_eq!(
        text(f.addr, Method::GET, "/pods").await,
        (401, "Unauthorized\n".into())
    );
}

/// A streaming server answering any upgrade with 101 and then echoing, after sending the
/// request line it saw.
async fn fake_streaming_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if conn.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let line = head.lines().next().unwrap_or_default().to_string();
                let proto = head
                    .lines()
                    .find(|l| {
                        l.to_ascii_lowercase()
                            .starts_with("x-stream-protocol-version")
                    })
                    .and_then(|l| l.split(':').nth(1))
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                let reply = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: {proto}\r\n\r\n{line}\n"
                );
                conn.write_all(reply.as_bytes()).await.unwrap();
                let (mut r, mut w) = conn.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn exec_and_port_forward_are_proxied_to_the_streaming_server() {
    let f = start(open()).await;
    *f.runtime.streaming.lock() = fake_streaming_server().await;
    for (path, want_line) in [
        (
            "/exec/ns/p/c?command=ls&command=-l&output=1",
            "POST /exec/ls--l/0100 HTTP/1.1",
        ),
        // With a terminal stderr is not asked for (the runtime refuses both).
        (
            "/exec/ns/p/c?command=sh&output=1&error=1&tty=1",
            "POST /exec/sh/0101 HTTP/1.1",
        ),
        // The container's terminal, not the client's choice.
        (
            "/attach/ns/p/c?output=1&input=1",
            "POST /attach/1101 HTTP/1.1",
        ),
        (
            "/attach/ns/p/c?output=1&error=1",
            "POST /attach/0111 HTTP/1.1",
        ),
        ("/portForward/ns/p", "POST /portforward/sb HTTP/1.1"),
    ] {
        let mut tcp = tokio::net::TcpStream::connect(f.addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: kubelet\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n"
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !String::from_utf8_lossy(&got).contains(want_line) {
            let n = tokio::time::timeout_at(deadline, tcp.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("{path}: got {:?}", String::from_utf8_lossy(&got)))
                .unwrap();
            assert!(
                n > 0,
                "{path}: closed after {:?}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        let head = String::from_utf8_lossy(&got).to_string();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("x-stream-protocol-version: v4.channel.k8s.io"),
            "{head}"
        );
        // Bytes flow both ways through the spliced connection.
        tcp.write_all(b"ping").await.unwrap();
        let mut echo = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(5), tcp.read_exact(&mut echo))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&echo, b"ping");
    }
}
