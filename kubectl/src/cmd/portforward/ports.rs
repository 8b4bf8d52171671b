//! Port arguments of `kubectl port-forward`: `[LOCAL:]REMOTE`, named pod ports, and a
//! service's port turned into the pod port it targets, as upstream translates them.

use serde_json::Value;

/// One forwarding: `local` 0 means "pick a free port".
#[derive(Debug, Clone, PartialEq)]
pub struct PortPair {
    pub local: u16,
    pub remote: u16,
}

/// Splits `[LOCAL:]REMOTE` (REMOTE possibly a name; LOCAL empty or absent for the same/free).
fn split(spec: &str) -> (Option<&str>, &str) {
    match spec.split_once(':') {
        Some((l, r)) => (Some(l), r),
        None => (None, spec),
    }
}

fn number(text: &str, spec: &str) -> anyhow::Result<u16> {
    match text.parse::<u16>() {
        Ok(n) => Ok(n),
        Err(_) => anyhow::bail!("Error parsing local port '{text}': from spec '{spec}'"),
    }
}

fn container_port_by_name(pod: &Value, name: &str) -> Option<u16> {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("ports").and_then(Value::as_array))
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|p| p.get("containerPort")?.as_u64())
        .and_then(|p| u16::try_from(p).ok())
}

/// Ports for a pod target: named remote ports resolved against the pod's containers.
pub fn for_pod(specs: &[String], pod: &Value) -> anyhow::Result<Vec<PortPair>> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or("");
    specs
        .iter()
        .map(|spec| {
            let (local, remote) = split(spec);
            let remote_port = match remote.parse::<u16>() {
                Ok(n) => n,
                Err(_) => container_port_by_name(pod, remote).ok_or_else(|| {
                    anyhow::anyhow!("Pod '{pod_name}' does not have a named port '{remote}'")
                })?,
            };
            pair(spec, local, remote, remote_port)
        })
        .collect()
}

/// Ports for a service target: each service port (number or name) becomes the pod port its
/// `targetPort` names.
pub fn for_service(specs: &[String], svc: &Value, pod: &Value) -> anyhow::Result<Vec<PortPair>> {
    let svc_name = svc["metadata"]["name"].as_str().unwrap_or("");
    let ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
    specs
        .iter()
        .map(|spec| {
            let (local, remote) = split(spec);
            let found = match remote.parse::<i64>() {
                Ok(n) => ports.iter().find(|p| p["port"].as_i64() == Some(n)),
                Err(_) => ports.iter().find(|p| p["name"].as_str() == Some(remote)),
            };
            let Some(port) = found else {
                return Err(match remote.parse::<i64>() {
                    Ok(_) => {
                        anyhow::anyhow!("Service {svc_name} does not have a service port {remote}")
                    }
                    Err(_) => anyhow::anyhow!(
                        "Service '{svc_name}' does not have a named port '{remote}'"
                    ),
                });
            };
            let service_port = port["port"].as_u64().unwrap_or(0);
            let target = match &port["targetPort"] {
                Value::Number(n) => n.as_u64().unwrap_or(0),
                Value::String(name) if !name.is_empty() => container_port_by_name(pod, name)
                    .map(u64::from)
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "Pod '{}' does not have a named port '{name}'",
                            pod["metadata"]["name"].as_str().unwrap_or("")
                        )
                    })?,
                _ => service_port,
            };
            let target = if target == 0 { service_port } else { target };
            let target = u16::try_from(target)?;
            // Without an explicit local port upstream listens on the service's port.
            let local = local.or(Some(remote).filter(|_| remote.parse::<u16>().is_ok()));
            pair(spec, local, remote, target)
        })
        .collect()
}

fn pair(
    spec: &str,
    local: Option<&str>,
    remote: &str,
    remote_port: u16,
) -> anyhow::Result<PortPair> {
    let local = match local {
        Some("") => 0,
        Some(l) => number(l, spec)?,
        None => number(remote, spec)?,
    };
    Ok(PortPair {
        local,
        remote: remote_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Port specs and the pairs (or the error) they make.
    type Case<'a> = (&'a [&'a str], Result<Vec<PortPair>, &'a str>);

    fn pairs(list: &[(u16, u16)]) -> Vec<PortPair> {
        list.iter()
            .map(|(l, r)| PortPair {
                local: *l,
                remote: *r,
            })
            .collect()
    }

    #[test]
    fn pod_ports() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [
            {"name": "main", "ports": [{"name": "http", "containerPort": 8080}]}]}});
        let specs = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cases: &[Case] = &[
            (&["8080"], Ok(pairs(&[(8080, 8080)]))),
            (&["9000:8080", ":80"], Ok(pairs(&[(9000, 8080), (0, 80)]))),
            (&["9000:http"], Ok(pairs(&[(9000, 8080)]))),
            (&["ftp"], Err("Pod 'web' does not have a named port 'ftp'")),
            (
                &["x:80"],
                Err("Error parsing local port 'x': from spec 'x:80'"),
            ),
        ];
        for (s, want) in cases {
            let got = for_pod(&specs(s), &pod).map_err(|e| e.to_string());
            assert_eq!(got, want.clone().map_err(str::to_owned), "{s:?}");
        }
    }

    #[test]
    fn service_ports_become_target_ports() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [
            {"name": "main", "ports": [{"name": "http", "containerPort": 8080}]}]}});
        let svc = json!({"metadata": {"name": "web"}, "spec": {"ports": [
            {"name": "web", "port": 80, "targetPort": 8080},
            {"name": "named", "port": 81, "targetPort": "http"},
            {"port": 82}]}});
        let specs = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cases: &[Case] = &[
            (&["80"], Ok(pairs(&[(80, 8080)]))),
            (&["9000:80"], Ok(pairs(&[(9000, 8080)]))),
            (&["9000:81", "82"], Ok(pairs(&[(9000, 8080), (82, 82)]))),
            (&["9000:web"], Ok(pairs(&[(9000, 8080)]))),
            (&["83"], Err("Service web does not have a service port 83")),
        ];
        for (s, want) in cases {
            let got = for_service(&specs(s), &svc, &pod).map_err(|e| e.to_string());
            assert_eq!(got, want.clone().map_err(str::to_owned), "{s:?}");
        }
    }
}
