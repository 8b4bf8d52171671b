//! The proxying subresources with the real kubectl against our apiserver and a fake kubelet
//! run by the test (HTTPS with a certificate from the test CA, demanding the apiserver's
//! `--kubelet-client-certificate`): `kubectl logs` (with `--tail`, `-c`, `-f` streaming), the
//! multi-container error, an exec upgrade whose bytes echo through the 101, and
//! `nodes/<n>/proxy/healthz`.

use bytes::Bytes;
use e2e::apiserver::{ApiServer, Backend};
use e2e::kubectl::Kubectl;
use e2e::pki::Pki;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;

type FakeBody = BoxBody<Bytes, Infallible>;

/// What the fake kubelet saw: each request's path and query, and whether every connection
/// presented a client certificate.
#[derive(Default)]
struct Seen {
    requests: Vec<String>,
    anonymous_connections: usize,
}

fn text(status: StatusCode, body: &str) -> Response<FakeBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response
}

/// Answers one kubelet request: logs (a follow stream waits for `release` before its last
/// line), `/healthz`, and exec upgrades that echo bytes.
async fn kubelet(
    mut req: Request<Incoming>,
    seen: Arc<Mutex<Seen>>,
    release: Arc<Notify>,
) -> Result<Response<FakeBody>, Infallible> {
    let uri = req.uri().to_string();
    seen.lock().unwrap().requests.push(uri.clone());
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    if path == "/healthz" {
        return Ok(text(StatusCode::OK, "ok"));
    }
    if let Some(rest) = path.strip_prefix("/containerLogs/") {
        if query.contains("follow=true") {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
            tokio::spawn(async move {
                let _ = tx.send(Ok(Frame::data(Bytes::from("first\n")))).await;
                release.notified().await;
                let _ = tx.send(Ok(Frame::data(Bytes::from("last\n")))).await;
            });
            let stream = tokio_stream_from(rx);
            return Ok(Response::new(StreamBody::new(stream).boxed()));
        }
        return Ok(text(
            StatusCode::OK,
            &format!("log of {rest}\nquery {query}\n"),
        ));
    }
    if path.starts_with("/attach/") {
        // A WebSocket handshake (kubectl 1.33's default): the key, protocol and version
        // must arrive; the accept value is not checked by the test's client.
        let headers = req.headers();
        let protocol = headers.get("sec-websocket-protocol").cloned();
        let has_key = headers.contains_key("sec-websocket-key");
        let (Some(protocol), true) = (protocol, has_key) else {
            return Ok(text(StatusCode::BAD_REQUEST, "not a websocket handshake"));
        };
        let upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            if let Ok(upgraded) = upgrade.await {
                let mut io = TokioIo::new(upgraded);
                let _ = io.write_all(b"attached").await;
            }
        });
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = response.headers_mut();
        headers.insert("connection", "Upgrade".parse().unwrap());
        headers.insert("upgrade", "websocket".parse().unwrap());
        headers.insert("sec-websocket-protocol", protocol);
        headers.insert("sec-websocket-accept", "fake".parse().unwrap());
        return Ok(response);
    }
    if path.starts_with("/exec/") {
        let protocol = req
            .headers()
            .get("x-stream-protocol-version")
            .cloned()
            .unwrap_or_else(|| "v4.channel.k8s.io".parse().unwrap());
        let upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            if let Ok(upgraded) = upgrade.await {
                let mut io = TokioIo::new(upgraded);
                let mut buf = [0u8; 1024];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        });
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = response.headers_mut();
        headers.insert("connection", "Upgrade".parse().unwrap());
        headers.insert("upgrade", "SPDY/3.1".parse().unwrap());
        headers.insert("x-stream-protocol-version", protocol);
        return Ok(response);
    }
    Ok(text(StatusCode::NOT_FOUND, "404 page not found"))
}

/// An mpsc receiver as a stream of frames.
fn tokio_stream_from(
    rx: tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, Infallible>>,
) -> impl futures::Stream<Item = Result<Frame<Bytes>, Infallible>> {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) })
}

/// Runs the fake kubelet on a loopback port until the test's runtime ends.
async fn fake_kubelet(pki: &Pki, seen: Arc<Mutex<Seen>>, release: Arc<Notify>) -> u16 {
    let (chain, key) = pki.serving_identity(&["127.0.0.1"]);
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(pki.ca_file()).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Client certificates are optional here so that a missing one is counted, not refused.
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            let release = release.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if tls.get_ref().1.peer_certificates().is_none() {
                    seen.lock().unwrap().anonymous_connections += 1;
                }
                let service = hyper::service::service_fn(move |req| {
                    kubelet(req, seen.clone(), release.clone())
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    port
}

fn manifests(port: u16) -> String {
    format!(
        r#"apiVersion: v1
kind: Node
metadata:
  name: node-1
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  nodeName: node-1
  containers:
  - name: app
    image: busybox
---
apiVersion: v1
kind: Pod
metadata:
  name: multi
  namespace: default
spec:
  nodeName: node-1
  containers:
  - name: a
    image: busybox
  - name: b
    image: busybox
---
apiVersion: v1
kind: Pod
metadata:
  name: pending
  namespace: default
spec:
  containers:
  - name: app
    image: busybox
---
apiVersion: v1
kind: Node
metadata:
  name: node-2
---
apiVersion: v1
kind: Pod
metadata:
  name: lost
  namespace: default
spec:
  nodeName: node-2
  containers:
  - name: app
    image: busybox
# kubelet port {port}
"#
    )
}

/// Sends a raw HTTP/1.1 upgrade for `path` through the apiserver; returns the response head
/// and, after a 101, what came back for `ping`.
async fn upgrade_through(server: &ApiServer, path: &str) -> (String, Vec<u8>) {
    let mut tls = e2e::https::tls(server.addr(), &server.ca_file(), &[b"http/1.1"])
        .await
        .unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer e2e\r\n\
         Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
         X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n",
        server.addr()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), tls.read(&mut byte))
            .await
            .expect("response head in time")
            .unwrap();
        assert!(n > 0, "connection closed in the head: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    if !head.starts_with("HTTP/1.1 101") {
        return (head, Vec::new());
    }
    tls.write_all(b"ping").await.unwrap();
    let mut echoed = vec![0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), tls.read_exact(&mut echoed))
        .await
        .expect("echo in time")
        .unwrap();
    (head, echoed)
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_exec_and_node_proxy_reach_the_kubelet() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("kubelet-pki"));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let release = Arc::new(Notify::new());
    let port = fake_kubelet(&pki, seen.clone(), release.clone()).await;
    let (client_cert, client_key) = pki.issue_client("kube-apiserver-kubelet-client", &[]);
    let server = ApiServer::start_with(
        &dir.path().join("server"),
        Backend::Embedded,
        &[
            "--disable-admission-plugins=ServiceAccount".to_string(),
            format!("--kubelet-client-certificate={}", client_cert.display()),
            format!("--kubelet-client-key={}", client_key.display()),
            format!(
                "--kubelet-certificate-authority={}",
                pki.ca_file().display()
            ),
            "--kubelet-preferred-address-types=InternalIP,Hostname".to_string(),
        ],
    )
    .await
    .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let manifest = dir.path().join("objects.yaml");
    std::fs::write(&manifest, manifests(port)).unwrap();
    k.ok(&["create", "-f", manifest.to_str().unwrap()]);
    let status = format!(
        r#"{{"status":{{"addresses":[{{"type":"InternalIP","address":"127.0.0.1"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":{port}}}}}}}}}"#
    );
    k.ok(&[
        "patch",
        "node",
        "node-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ]);

    // Logs: the container is the pod's only one; --tail and -c reach the kubelet's query.
    let out = k.ok(&["logs", "web"]);
    assert_eq!(out, "log of default/web/app\nquery \n", "{}", server.logs());
    let out = k.ok(&["logs", "web", "-c", "app", "--tail=1", "--timestamps"]);
    assert_eq!(
        out,
        "log of default/web/app\nquery tailLines=1&timestamps=true\n"
    );
    // A container the pod does not have, and a pod with several and none named (kubectl
    // itself picks a default container, so the raw request shows the apiserver's answer).
    let err = k.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?container=nope",
    ]);
    assert!(
        err.contains("container nope is not valid for pod web"),
        "{err}"
    );
    let err = k.fails(&["get", "--raw", "/api/v1/namespaces/default/pods/multi/log"]);
    assert!(
        err.contains("a container name must be specified for pod multi, choose one of: [a b]"),
        "{err}"
    );
    let out = k.ok(&["logs", "multi", "-c", "b"]);
    assert_eq!(out, "log of default/multi/b\nquery \n");
    // An unscheduled pod has no logs yet: an empty answer, as upstream.
    let out = k.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/pending/log",
    ]);
    assert_eq!(out, "");
    let err = k.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?tailLines=-1",
    ]);
    assert!(err.contains("must be greater than or equal to 0"), "{err}");

    // Following streams: the first line arrives while the kubelet holds the stream open.
    let mut follow = k.spawn(&["logs", "-f", "web"]);
    // Hang guards: starting the real kubectl alone can take seconds on a loaded machine.
    follow.wait_for(Duration::from_secs(60), "the first line", |out| {
        out.contains("first\n")
    });
    assert!(!follow.stdout().contains("last"));
    release.notify_one();
    follow.wait_for(Duration::from_secs(60), "the last line", |out| {
        out == "first\nlast\n"
    });

    // Exec: the upgrade is answered by the kubelet's 101 and bytes echo through both hops.
    let (head, echoed) = upgrade_through(
        &server,
        "/api/v1/namespaces/default/pods/web/exec?command=sh&stdin=true&stdout=true",
    )
    .await;
    assert!(
        head.starts_with("HTTP/1.1 101"),
        "{head}\n{}",
        server.logs()
    );
    assert!(
        head.to_ascii_lowercase().contains("upgrade: spdy/3.1"),
        "{head}"
    );
    assert_eq!(echoed, b"ping");
    let exec_request = seen
        .lock()
        .unwrap()
        .requests
        .iter()
        .find(|r| r.starts_with("/exec/"))
        .cloned()
        .unwrap();
    assert_eq!(
        exec_request,
        "/exec/default/web/app?command=sh&input=1&output=1"
    );
    // Without streams the request is refused before any kubelet is asked.
    let (head, _) = upgrade_through(
        &server,
        "/api/v1/namespaces/default/pods/web/exec?command=sh",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    // An unscheduled pod cannot be exec'd into.
    let err = k.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/pending/exec?command=true&stdout=true",
    ]);
    assert!(
        err.contains("pod pending does not have a host assigned"),
        "{err}"
    );

    // Attach over WebSocket (a GET): the handshake headers reach the kubelet and its 101
    // comes back with the chosen subprotocol.
    let mut tls = e2e::https::tls(server.addr(), &server.ca_file(), &[b"http/1.1"])
        .await
        .unwrap();
    let request = format!(
        "GET /api/v1/namespaces/default/pods/web/attach?stdout=true&stderr=true HTTP/1.1\r\n\
         Host: {}\r\nAuthorization: Bearer e2e\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
        server.addr()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !received.ends_with(b"attached") {
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout_at(deadline, tls.read(&mut buf))
            .await
            .expect("attach answer in time")
            .unwrap();
        assert!(
            n > 0,
            "closed early: {}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&buf[..n]);
    }
    let received = String::from_utf8_lossy(&received).to_ascii_lowercase();
    assert!(received.starts_with("http/1.1 101"), "{received}");
    assert!(
        received.contains("sec-websocket-protocol: v5.channel.k8s.io"),
        "{received}"
    );
    drop(tls);
    assert!(
        seen.lock()
            .unwrap()
            .requests
            .iter()
            .any(|r| r == "/attach/default/web/app?error=1&output=1")
    );

    // A node without an address of the preferred types, then one whose kubelet is gone:
    // upstream's 500 for logs, 503 for the proxy.
    let err = k.fails(&["logs", "lost"]);
    assert!(
        err.contains("no preferred addresses found; known addresses: []"),
        "{err}"
    );
    let dead = e2e::free_port();
    let status = format!(
        r#"{{"status":{{"addresses":[{{"type":"Hostname","address":"127.0.0.1"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":{dead}}}}}}}}}"#
    );
    k.ok(&[
        "patch",
        "node",
        "node-2",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ]);
    let err = k.fails(&["logs", "lost"]);
    assert!(
        err.contains(&format!(
            "Get \"https://127.0.0.1:{dead}/containerLogs/default/lost/app\": dial tcp"
        )),
        "{err}"
    );
    let err = k.fails(&["get", "--raw", "/api/v1/nodes/node-2/proxy/healthz"]);
    assert!(err.contains("ServiceUnavailable"), "{err}");
    assert!(err.contains("error trying to reach service"), "{err}");

    // nodes/proxy reaches the kubelet with the client certificate.
    let out = k.ok(&["get", "--raw", "/api/v1/nodes/node-1/proxy/healthz"]);
    assert_eq!(out, "ok");
    let err = k.fails(&["get", "--raw", "/api/v1/nodes/node-1:1/proxy/healthz"]);
    assert!(err.contains("address not allowed"), "{err}");
    let seen = seen.lock().unwrap();
    assert!(seen.requests.iter().any(|r| r == "/healthz"));
    assert_eq!(
        seen.anonymous_connections, 0,
        "every kubelet connection presents --kubelet-client-certificate"
    );
}

/// A non-loopback address of this host (upstream refuses to proxy to loopback pod IPs), found
/// by routing a UDP socket (no packet is sent).
fn host_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.255.255.255:1").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A plain HTTP backend answering `<method> <path?query> <body>` for every request.
async fn echo_backend(ip: std::net::IpAddr) -> u16 {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    let line = format!("{} {}", req.method(), req.uri());
                    let auth = req.headers().contains_key("authorization");
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let answer = format!("{line} {} auth={auth}", String::from_utf8_lossy(&body));
                    Ok::<_, Infallible>(text(StatusCode::OK, &answer))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_and_service_proxy_reach_the_backend() {
    let Some(ip) = host_address() else {
        eprintln!("no non-loopback address on this host: pods/proxy cannot be exercised");
        return;
    };
    let port = echo_backend(ip).await;
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::start(&dir.path().join("server"), Backend::Embedded)
        .await
        .unwrap();
    let k = Kubectl::for_apiserver(dir.path(), &server);
    let manifest = dir.path().join("objects.yaml");
    std::fs::write(
        &manifest,
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: backend
  namespace: default
spec:
  nodeName: node-1
  containers:
  - name: app
    image: busybox
    ports:
    - containerPort: {port}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  ports:
  - name: http
    port: 80
    targetPort: {port}
---
apiVersion: v1
kind: Endpoints
metadata:
  name: web
  namespace: default
subsets:
- addresses:
  - ip: "{ip}"
    targetRef:
      kind: Pod
      name: backend
      namespace: default
  ports:
  - name: http
    port: {port}
---
apiVersion: v1
kind: Service
metadata:
  name: empty
  namespace: default
spec:
  ports:
  - port: 80
"#
        ),
    )
    .unwrap();
    k.ok(&["create", "-f", manifest.to_str().unwrap()]);
    let status = format!(r#"{{"status":{{"podIP":"{ip}","podIPs":[{{"ip":"{ip}"}}]}}}}"#);
    k.ok(&[
        "patch",
        "pod",
        "backend",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ]);

    // pods/proxy: the first container port when none is named; the path and query follow,
    // and the caller's credentials do not.
    let out = k.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/backend/proxy/some/path?x=1",
    ]);
    assert_eq!(out, "GET /some/path?x=1  auth=false", "{}", server.logs());
    let out = k.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/default/pods/backend:{port}/proxy/"),
    ]);
    assert_eq!(out, "GET /  auth=false");
    // services/proxy by port name and by port number, any method with its body.
    let out = k.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:http/proxy/hello",
    ]);
    assert_eq!(out, "GET /hello  auth=false");
    let body = dir.path().join("body.json");
    std::fs::write(&body, "{\"a\":1}").unwrap();
    let out = k.ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/services/web:80/proxy/post",
        "-f",
        body.to_str().unwrap(),
    ]);
    assert_eq!(out, "POST /post {\"a\":1} auth=false");
    let err = k.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:81/proxy/",
    ]);
    assert!(
        err.contains("no service port 81 found for service \"web\""),
        "{err}"
    );
    let err = k.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/empty/proxy/",
    ]);
    // As upstream, a service without an Endpoints object is the Endpoints' 404.
    assert!(err.contains("endpoints \"empty\" not found"), "{err}");
    let err = k.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/ftp:web:80/proxy/",
    ]);
    assert!(err.contains("invalid service request"), "{err}");
}
