//! Tests of the probe kinds against local listeners and of the status the manager derives.

use super::probes::{self, expand_static, http_get, resolve_port, tcp_probe};
use super::*;
use k8s_openapi::api::core::v1::{
    ContainerPort, ContainerState, ContainerStateRunning, ContainerStateTerminated, EnvVar,
    HTTPGetAction, TCPSocketAction,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every connection with the response `respond` builds from the request line's path.
async fn http_server(respond: fn(&str, u16) -> String) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                if path == "/slow" {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                }
                let _ = s.write_all(respond(&path, port).as_bytes()).await;
            });
        }
    });
    port
}

fn resp(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn routes(path: &str, port: u16) -> String {
    match path {
        "/ok" => resp("200 OK", "", "fine"),
        "/missing" => resp("404 Not Found", "", ""),
        "/error" => resp("500 Internal Server Error", "", ""),
        "/moved" => resp("302 Found", "Location: /ok\r\n", ""),
        "/moved-bad" => resp("301 Moved", "Location: /error\r\n", ""),
        "/elsewhere" => resp("302 Found", "Location: http://localhost:1/ok\r\n", ""),
        "/loop" => resp(
            "302 Found",
            &format!("Location: http://127.0.0.1:{port}/loop\r\n"),
            "",
        ),
        "/slow" => resp("200 OK", "", ""),
        _ => resp("418 I'm a teapot", "", ""),
    }
}

#[tokio::test]
async fn http_probes_judge_status_codes_and_redirects() {
    let port = http_server(routes).await;
    let t = Duration::from_secs(1);
    // (path, success, output fragment)
    let cases = [
        ("/ok", true, "fine"),
        ("/missing", false, "statuscode: 404"),
        ("/error", false, "statuscode: 500"),
        ("/moved", true, "fine"),
        ("/moved-bad", false, "statuscode: 500"),
        ("/elsewhere", true, "Probe terminated redirects"),
        ("/loop", false, "stopped after 10 redirects"),
        ("/slow", false, "deadline exceeded"),
    ];
    for (path, success, fragment) in cases {
        let v = http_get(&format!("http://127.0.0.1:{port}{path}"), &[], t).await;
        assert_eq!(v.success, success, "{path}: {v:?}");
        assert!(v.output.contains(fragment), "{path}: {v:?}");
        // Only an unfollowed redirect is upstream's probe.Warning (a ProbeWarning event).
        assert_eq!(v.warning, path == "/elsewhere", "{path}: {v:?}");
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = l.local_addr().unwrap().port();
    drop(l);
    let v = http_get(&format!("http://127.0.0.1:{closed}/"), &[], t).await;
    assert!(!v.success, "{v:?}");
}

#[tokio::test]
async fn tcp_probes_connect_within_the_timeout() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let open = l.local_addr().unwrap().port();
    assert!(
        tcp_probe("127.0.0.1", open, Duration::from_secs(1))
            .await
            .success
    );
    drop(l);
    assert!(
        !tcp_probe("127.0.0.1", open, Duration::from_secs(1))
            .await
            .success
    );
}

fn container() -> Container {
    Container {
        name: "c".into(),
        ports: Some(vec![ContainerPort {
            name: Some("web".into()),
            container_port: 8080,
            ..Default::default()
        }]),
        env: Some(vec![EnvVar {
            name: "F".into(),
            value: Some("/tmp/x".into()),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

#[test]
fn ports_urls_and_commands_resolve_as_upstream() {
    let c = container();
    assert_eq!(resolve_port(&IntOrString::Int(80), &c).unwrap(), 80);
    assert_eq!(
        resolve_port(&IntOrString::String("web".into()), &c).unwrap(),
        8080
    );
    assert_eq!(
        resolve_port(&IntOrString::String("81".into()), &c).unwrap(),
        81
    );
    assert!(resolve_port(&IntOrString::String("nope".into()), &c).is_err());
    assert!(resolve_port(&IntOrString::Int(0), &c).is_err());
    let status = PodStatus {
        pod_ip: Some("10.1.0.5".into()),
        ..Default::default()
    };
    let action = HTTPGetAction {
        port: IntOrString::String("web".into()),
        path: Some("healthz".into()),
        ..Default::default()
    };
    assert_eq!(
        probes::http_url(&action, &status, &c).unwrap(),
        "http://10.1.0.5:8080/healthz"
    );
    let action = HTTPGetAction {
        port: IntOrString::Int(443),
        host: Some("::1".into()),
        scheme: Some("HTTPS".into()),
        ..Default::default()
    };
    assert_eq!(
        probes::http_url(&action, &status, &c).unwrap(),
        "https://[::1]:443/"
    );
    assert!(probes::http_url(&action_no_host(), &PodStatus::default(), &c).is_err());
    assert_eq!(
        expand_static("cat $(F) $(G) $$(F)", &c),
        "cat /tmp/x $(G) $(F)"
    );
}

fn action_no_host() -> HTTPGetAction {
    HTTPGetAction {
        port: IntOrString::Int(80),
        ..Default::default()
    }
}

fn running(name: &str, id: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        container_id: Some(format!("containerd://{id}")),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_with(containers: Vec<Container>, init: Vec<Container>) -> Pod {
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            uid: Some("u1".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers,
            init_containers: Some(init),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn status_follows_probes_and_their_absence() {
    let m = ProbeManager::default();
    let tcp = |port| Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(port),
            ..Default::default()
        }),
        period_seconds: Some(3600),
        ..Default::default()
    };
    let plain = Container {
        name: "plain".into(),
        ..Default::default()
    };
    let gated = Container {
        name: "gated".into(),
        startup_probe: Some(tcp(1)),
        ..Default::default()
    };
    let probed = Container {
        name: "probed".into(),
        readiness_probe: Some(tcp(1)),
        ..Default::default()
    };
    let init = Container {
        name: "init".into(),
        ..Default::default()
    };
    let pod = pod_with(vec![plain, gated, probed], vec![init]);
    m.add_pod(&pod);
    assert!(m.has_worker("u1", "gated", ProbeKind::Startup));
    assert!(m.has_worker("u1", "probed", ProbeKind::Readiness));
    let mut exited = running("init", "i");
    exited.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 0,
            ..Default::default()
        }),
        ..Default::default()
    });
    let mut status = PodStatus {
        container_statuses: Some(vec![
            running("plain", "a"),
            running("gated", "b"),
            running("probed", "c"),
        ]),
        init_container_statuses: Some(vec![exited]),
        ..Default::default()
    };
    m.update_pod_status(&pod, &mut status);
    let cs = status.container_statuses.as_ref().unwrap();
    let flags: Vec<_> = cs
        .iter()
        .map(|c| (c.name.as_str(), c.started, c.ready))
        .collect();
    assert_eq!(
        flags,
        [
            ("plain", Some(true), true),
            ("gated", Some(false), false),
            ("probed", Some(true), false)
        ]
    );
    assert!(status.init_container_statuses.as_ref().unwrap()[0].ready);

    m.remove_pod(&pod);
    assert!(!m.has_worker("u1", "probed", ProbeKind::Readiness));
    let mut status = PodStatus {
        container_statuses: Some(vec![running("probed", "c")]),
        ..Default::default()
    };
    m.update_pod_status(&pod, &mut status);
    assert!(status.container_statuses.as_ref().unwrap()[0].ready);

    m.add_pod(&pod);
    m.cleanup(&HashSet::from(["other".to_string()]));
    assert!(!m.has_worker("u1", "gated", ProbeKind::Startup));
}

/// A pod whose `main` container runs with the given id, probed over TCP on `port` at 127.0.0.1.
fn tcp_pod(kind: ProbeKind, port: u16, failure_threshold: i32) -> Pod {
    let probe = Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(i32::from(port)),
            ..Default::default()
        }),
        period_seconds: Some(1),
        failure_threshold: Some(failure_threshold),
        ..Default::default()
    };
    let mut c = Container {
        name: "main".into(),
        ..Default::default()
    };
    match kind {
        ProbeKind::Liveness => c.liveness_probe = Some(probe),
        ProbeKind::Readiness => c.readiness_probe = Some(probe),
        ProbeKind::Startup => c.startup_probe = Some(probe),
    }
    pod_with(vec![c], vec![])
}

fn running_status(id: &str, started: bool) -> PodStatus {
    let mut c = running("main", id);
    c.started = Some(started);
    PodStatus {
        pod_ip: Some("127.0.0.1".into()),
        container_statuses: Some(vec![c]),
        ..Default::default()
    }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<ProbeUpdate>) -> ProbeUpdate {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a probe update in time")
        .expect("open")
}

#[tokio::test]
async fn readiness_workers_follow_the_endpoint_and_the_container() {
    let status = Arc::new(StatusManager::default());
    let m = ProbeManager::build(None, status.clone());
    let mut rx = m.subscribe();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let pod = tcp_pod(ProbeKind::Readiness, port, 2);
    status.set_pod_status(&pod, running_status("a", true));
    m.add_pod(&pod);
    let a = ContainerId::parse("containerd://a").unwrap();
    // The initial verdict of readiness is failure, then the open port makes it ready.
    assert_eq!(
        next(&mut rx).await,
        ("u1".to_string(), ProbeKind::Readiness, ProbeResult::Failure)
    );
    assert_eq!(next(&mut rx).await.2, ProbeResult::Success);
    assert_eq!(m.readiness(&a), Some(ProbeResult::Success));
    // Closed: failure after two consecutive failed probes.
    drop(l);
    assert_eq!(next(&mut rx).await.2, ProbeResult::Failure);
    // A new container starts over from the initial verdict; its old results are dropped.
    status.set_pod_status(&pod, running_status("b", true));
    let b = ContainerId::parse("containerd://b").unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while m.readiness(&b).is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the worker follows the new container");
    assert_eq!(m.readiness(&a), None);
    m.remove_pod(&pod);
}

#[tokio::test]
async fn liveness_failures_hold_until_a_new_container_and_wait_for_startup() {
    let status = Arc::new(StatusManager::default());
    let m = ProbeManager::build(None, status.clone());
    let mut rx = m.subscribe();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let pod = tcp_pod(ProbeKind::Liveness, port, 1);
    // Not started yet (a startup probe would gate it): liveness keeps its initial success.
    status.set_pod_status(&pod, running_status("a", false));
    m.add_pod(&pod);
    assert_eq!(next(&mut rx).await.2, ProbeResult::Success);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        m.liveness(&ContainerId::parse("containerd://a").unwrap()),
        Some(ProbeResult::Success)
    );
    // Started: the closed port fails it at once (threshold 1).
    status.set_pod_status(&pod, running_status("a", true));
    assert_eq!(next(&mut rx).await.2, ProbeResult::Failure);
    // The restarted container begins with success again.
    status.set_pod_status(&pod, running_status("b", true));
    assert_eq!(next(&mut rx).await.2, ProbeResult::Success);
    m.remove_pod(&pod);
}
