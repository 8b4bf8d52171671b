//! Lifecycle hooks (postStart, preStop): exec through CRI `ExecSync`, httpGet against the pod,
//! and sleep, with upstream's failure messages.

use super::RuntimeManager;
use crate::container::ContainerId;
use k8s_openapi::api::core::v1::{ContainerPort, HTTPGetAction, LifecycleHandler};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Who the hook runs for, for its messages and its HTTP target.
pub struct HookTarget<'a> {
    pub container: &'a str,
    /// `name_namespace(uid)`, as upstream's `format.Pod`.
    pub pod: &'a str,
    pub pod_ip: Option<&'a str>,
    pub ports: &'a [ContainerPort],
}

fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// The port of an httpGet action: a number or the name of one of the container's ports.
pub fn resolve_port(port: &IntOrString, ports: &[ContainerPort]) -> Result<u16, String> {
    let n = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => match s.parse::<i32>() {
            Ok(n) => n,
            Err(_) => ports
                .iter()
                .find(|p| p.name.as_deref() == Some(s.as_str()))
                .map(|p| p.container_port)
                .ok_or_else(|| format!("couldn't find port: {s:?}"))?,
        },
    };
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("invalid port {n}"))
}

/// One HTTP/1.1 GET; any answer is a success (upstream checks only that the request went
/// through, not the status code).
async fn http_get(action: &HTTPGetAction, target: &HookTarget<'_>) -> Result<(), String> {
    if action.scheme.as_deref() == Some("HTTPS") {
        return Err("HTTPS lifecycle hooks are not supported".into());
    }
    let host = action
        .host
        .clone()
        .filter(|h| !h.is_empty())
        .or_else(|| target.pod_ip.map(str::to_string))
        .unwrap_or_else(|| "127.0.0.1".into());
    let port = resolve_port(&action.port, target.ports)?;
    let path = action.path.clone().unwrap_or_default();
    let path = if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    };
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kube-lifecycle/1.33\r\nConnection: close\r\n"
    );
    for h in action.http_headers.iter().flatten() {
        req.push_str(&format!("{}: {}\r\n", h.name, h.value));
    }
    req.push_str("\r\n");
    let mut stream = tokio::net::TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("Get \"http://{addr}{path}\": {e}"))?;
    stream
        .write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut head = [0u8; 16];
    let n = stream.read(&mut head).await.map_err(|e| e.to_string())?;
    if !head[..n].starts_with(b"HTTP/") {
        return Err(format!(
            "Get \"http://{addr}{path}\": malformed HTTP response"
        ));
    }
    Ok(())
}

impl RuntimeManager {
    /// Runs a hook to completion; the error is the message upstream records.
    pub(super) async fn run_hook(
        &self,
        id: &ContainerId,
        handler: &LifecycleHandler,
        target: &HookTarget<'_>,
    ) -> Result<(), String> {
        if let Some(exec) = &handler.exec {
            let cmd = exec.command.clone().unwrap_or_default();
            let result = self
                .client
                .exec_sync(&id.id, cmd.clone(), Duration::ZERO)
                .await;
            let (err, output) = match result {
                Ok(r) if r.exit_code == 0 => return Ok(()),
                Ok(r) => {
                    let mut out = r.stdout.clone();
                    out.extend_from_slice(&r.stderr);
                    let out = String::from_utf8_lossy(&out).into_owned();
                    (
                        format!(
                            "command '{}' exited with {}: {}",
                            cmd.join(" "),
                            r.exit_code,
                            out
                        ),
                        out,
                    )
                }
                Err(e) => (e.message().to_string(), String::new()),
            };
            return Err(format!(
                "Exec lifecycle hook ({}) for Container {:?} in Pod {:?} failed - error: {err}, message: {output:?}",
                go_list(&cmd),
                target.container,
                target.pod
            ));
        }
        if let Some(action) = &handler.http_get {
            let bound = self.client.timeout();
            let result = match tokio::time::timeout(bound, http_get(action, target)).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {bound:?}")),
            };
            return result.map_err(|err| {
                format!(
                    "HTTP lifecycle hook ({}) for Container {:?} in Pod {:?} failed - error: {err}",
                    action.path.as_deref().unwrap_or_default(),
                    target.container,
                    target.pod
                )
            });
        }
        if let Some(sleep) = &handler.sleep {
            tokio::time::sleep(Duration::from_secs(sleep.seconds.max(0) as u64)).await;
            return Ok(());
        }
        Err(format!(
            "Cannot run handler: invalid handler for Container {:?} in Pod {:?}",
            target.container, target.pod
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_ports_resolve_by_number_or_name() {
        let ports = vec![ContainerPort {
            name: Some("http".into()),
            container_port: 8080,
            ..Default::default()
        }];
        let cases = [
            (IntOrString::Int(80), Ok(80)),
            (IntOrString::String("81".into()), Ok(81)),
            (IntOrString::String("http".into()), Ok(8080)),
            (IntOrString::String("nope".into()), Err(())),
            (IntOrString::Int(0), Err(())),
            (IntOrString::Int(70000), Err(())),
        ];
        for (port, want) in cases {
            assert_eq!(
                resolve_port(&port, &ports).map_err(|_| ()),
                want,
                "{port:?}"
            );
        }
    }

    #[tokio::test]
    async fn http_hooks_need_an_answer_not_a_status() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).await.unwrap();
            s.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        let action = HTTPGetAction {
            path: Some("/hook".into()),
            port: IntOrString::Int(i32::from(port)),
            http_headers: Some(vec![k8s_openapi::api::core::v1::HTTPHeader {
                name: "X-Test".into(),
                value: "1".into(),
            }]),
            ..Default::default()
        };
        let target = HookTarget {
            container: "c",
            pod: "p_ns(u)",
            pod_ip: Some("127.0.0.1"),
            ports: &[],
        };
        http_get(&action, &target).await.unwrap();
        let request = server.await.unwrap();
        assert!(request.starts_with("GET /hook HTTP/1.1\r\n"), "{request}");
        assert!(request.contains("X-Test: 1\r\n"));
        // Nothing listens on the port any more.
        assert!(http_get(&action, &target).await.is_err());
    }
}
