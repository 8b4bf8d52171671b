//! Containers as upstream's `describeContainers` lays them out (for pods, with their
//! statuses, and for pod templates, without), and probes as `DescribeProbe` words them.

use super::quantity;
use super::writer::{PrefixWriter, arr, boolean, int, obj, rfc1123z, s, scalar};
use serde_json::Value;

/// `describeContainers`: the `label:` line, then each container. `pod` resolves `fieldRef`
/// environment values (templates have none).
pub fn describe(
    w: &mut PrefixWriter,
    label: &str,
    containers: &[Value],
    statuses: &[Value],
    pod: Option<&Value>,
    space: &str,
) {
    let none = if containers.is_empty() { " <none>" } else { "" };
    w.write(0, &format!("{space}{label}:{none}\n"));
    for c in containers {
        let name = s(c, "/name");
        let status = statuses.iter().find(|st| s(st, "/name") == name);
        basic_info(w, c, status, space);
        command(w, c);
        if let Some(status) = status {
            state(w, "State", status.get("state"));
            if status.pointer("/lastState/terminated").is_some() {
                state(w, "Last State", status.get("lastState"));
            }
            let ready = if boolean(status, "/ready") {
                "True"
            } else {
                "False"
            };
            w.write(2, &format!("Ready:\t{ready}\n"));
            w.write(
                2,
                &format!("Restart Count:\t{}\n", int(status, "/restartCount")),
            );
        }
        resources(w, c.get("resources"), 2);
        for (field, title) in [
            ("livenessProbe", "Liveness"),
            ("readinessProbe", "Readiness"),
            ("startupProbe", "Startup"),
        ] {
            if let Some(probe) = c.get(field).filter(|p| p.is_object()) {
                w.write(2, &format!("{title}:\t{}\n", describe_probe(probe)));
            }
        }
        env_from(w, c);
        env(w, c, pod);
        mounts(w, c);
    }
}

fn basic_info(w: &mut PrefixWriter, c: &Value, status: Option<&Value>, space: &str) {
    let indent = if space.is_empty() { "" } else { " " };
    w.write(1, &format!("{indent}{}:\n", s(c, "/name")));
    if let Some(st) = status {
        w.write(2, &format!("Container ID:\t{}\n", s(st, "/containerID")));
    }
    w.write(2, &format!("Image:\t{}\n", s(c, "/image")));
    if let Some(st) = status {
        w.write(2, &format!("Image ID:\t{}\n", s(st, "/imageID")));
    }
    let ports = arr(c, "/ports");
    let join = |field: &str| {
        ports
            .iter()
            .map(|p| format!("{}/{}", int(p, field), s(p, "/protocol")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (field, one, many) in [
        ("/containerPort", "Port", "Ports"),
        ("/hostPort", "Host Port", "Host Ports"),
    ] {
        let text = join(field);
        if text.contains(',') {
            w.write(2, &format!("{many}:\t{text}\n"));
        } else {
            let text = if text.is_empty() { "<none>" } else { &text };
            w.write(2, &format!("{one}:\t{text}\n"));
        }
    }
    let profile = s(c, "/securityContext/seccompProfile/type");
    if !profile.is_empty() {
        w.write(2, &format!("SeccompProfile:\t{profile}\n"));
        if profile == "Localhost" {
            w.write(
                3,
                &format!(
                    "LocalhostProfile:\t{}\n",
                    s(c, "/securityContext/seccompProfile/localhostProfile")
                ),
            );
        }
    }
}

fn command(w: &mut PrefixWriter, c: &Value) {
    for (field, title) in [("/command", "Command"), ("/args", "Args")] {
        let items = arr(c, field);
        if items.is_empty() {
            continue;
        }
        w.write(2, &format!("{title}:\n"));
        for item in items {
            for line in scalar(Some(item)).split('\n') {
                w.write(3, &format!("{line}\n"));
            }
        }
    }
}

/// `describeStatus`.
fn state(w: &mut PrefixWriter, name: &str, state: Option<&Value>) {
    let state = state.cloned().unwrap_or(Value::Null);
    if let Some(running) = state.get("running").filter(|v| v.is_object()) {
        w.write(2, &format!("{name}:\tRunning\n"));
        w.write(
            3,
            &format!("Started:\t{}\n", rfc1123z(s(running, "/startedAt"))),
        );
    } else if let Some(waiting) = state.get("waiting").filter(|v| v.is_object()) {
        w.write(2, &format!("{name}:\tWaiting\n"));
        let reason = s(waiting, "/reason");
        if !reason.is_empty() {
            w.write(3, &format!("Reason:\t{reason}\n"));
        }
    } else if let Some(t) = state.get("terminated").filter(|v| v.is_object()) {
        w.write(2, &format!("{name}:\tTerminated\n"));
        for (field, title) in [("/reason", "Reason"), ("/message", "Message")] {
            let text = s(t, field);
            if !text.is_empty() {
                w.write(3, &format!("{title}:\t{text}\n"));
            }
        }
        w.write(3, &format!("Exit Code:\t{}\n", int(t, "/exitCode")));
        let signal = int(t, "/signal");
        if signal > 0 {
            w.write(3, &format!("Signal:\t{signal}\n"));
        }
        w.write(3, &format!("Started:\t{}\n", rfc1123z(s(t, "/startedAt"))));
        w.write(
            3,
            &format!("Finished:\t{}\n", rfc1123z(s(t, "/finishedAt"))),
        );
    } else {
        w.write(2, &format!("{name}:\tWaiting\n"));
    }
}

/// `describeResources`: limits then requests, each sorted by name.
pub fn resources(w: &mut PrefixWriter, resources: Option<&Value>, level: usize) {
    let Some(resources) = resources else {
        return;
    };
    for (field, title) in [("/limits", "Limits"), ("/requests", "Requests")] {
        let Some(list) = obj(resources, field).filter(|m| !m.is_empty()) else {
            continue;
        };
        w.write(level, &format!("{title}:\n"));
        let mut names: Vec<&String> = list.keys().collect();
        names.sort();
        for name in names {
            w.write(level + 1, &format!("{name}:\t{}\n", scalar(list.get(name))));
        }
    }
}

/// `DescribeProbe`.
pub fn describe_probe(p: &Value) -> String {
    let attrs = format!(
        "delay={}s timeout={}s period={}s #success={} #failure={}",
        int(p, "/initialDelaySeconds"),
        int(p, "/timeoutSeconds"),
        int(p, "/periodSeconds"),
        int(p, "/successThreshold"),
        int(p, "/failureThreshold")
    );
    if let Some(exec) = p.get("exec").filter(|v| v.is_object()) {
        let cmd: Vec<String> = arr(exec, "/command")
            .iter()
            .map(|v| scalar(Some(v)))
            .collect();
        return format!("exec [{}] {attrs}", cmd.join(" "));
    }
    if let Some(http) = p.get("httpGet").filter(|v| v.is_object()) {
        let scheme = s(http, "/scheme").to_lowercase();
        let host = s(http, "/host");
        let port = scalar(http.get("port"));
        let host = if port.is_empty() {
            host.to_owned()
        } else if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let url = if scheme.is_empty() {
            format!("//{host}{}", s(http, "/path"))
        } else {
            format!("{scheme}://{host}{}", s(http, "/path"))
        };
        return format!("http-get {url} {attrs}");
    }
    if let Some(tcp) = p.get("tcpSocket").filter(|v| v.is_object()) {
        return format!(
            "tcp-socket {}:{} {attrs}",
            s(tcp, "/host"),
            scalar(tcp.get("port"))
        );
    }
    if let Some(grpc) = p.get("grpc").filter(|v| v.is_object()) {
        return format!(
            "grpc <pod>:{} {} {attrs}",
            int(grpc, "/port"),
            s(grpc, "/service")
        );
    }
    format!("unknown {attrs}")
}

fn env_from(w: &mut PrefixWriter, c: &Value) {
    let list = arr(c, "/envFrom");
    if list.is_empty() {
        return;
    }
    w.write(2, "Environment Variables from:\n");
    for e in list {
        let (from, r) = if let Some(r) = e.get("configMapRef").filter(|v| v.is_object()) {
            ("ConfigMap", r)
        } else if let Some(r) = e.get("secretRef").filter(|v| v.is_object()) {
            ("Secret", r)
        } else {
            ("", &Value::Null)
        };
        let optional = boolean(r, "/optional");
        let prefix = s(e, "/prefix");
        let name = s(r, "/name");
        if prefix.is_empty() {
            w.write(3, &format!("{name}\t{from}\tOptional: {optional}\n"));
        } else {
            w.write(
                3,
                &format!("{name}\t{from} with prefix '{prefix}'\tOptional: {optional}\n"),
            );
        }
    }
}

fn env(w: &mut PrefixWriter, c: &Value, pod: Option<&Value>) {
    let list = arr(c, "/env");
    let none = if list.is_empty() { "\t<none>" } else { "" };
    w.write(2, &format!("Environment:{none}\n"));
    for e in list {
        let name = s(e, "/name");
        let Some(from) = e.get("valueFrom").filter(|v| v.is_object()) else {
            for (i, line) in s(e, "/value").split('\n').enumerate() {
                if i == 0 {
                    w.write(3, &format!("{name}:\t{line}\n"));
                } else {
                    w.write(3, &format!("\t{line}\n"));
                }
            }
            continue;
        };
        if let Some(f) = from.get("fieldRef").filter(|v| v.is_object()) {
            let path = s(f, "/fieldPath");
            let value = pod.map(|p| field_value(p, path)).unwrap_or_default();
            w.write(
                3,
                &format!("{name}:\t{value} ({}:{path})\n", s(f, "/apiVersion")),
            );
        } else if let Some(r) = from.get("resourceFieldRef").filter(|v| v.is_object()) {
            let resource = s(r, "/resource");
            let mut value = quantity::container_resource_value(c, r);
            if value == "0" && (resource == "limits.cpu" || resource == "limits.memory") {
                value = "node allocatable".to_owned();
            }
            w.write(3, &format!("{name}:\t{value} ({resource})\n"));
        } else if let Some(k) = from.get("secretKeyRef").filter(|v| v.is_object()) {
            w.write(
                3,
                &format!(
                    "{name}:\t<set to the key '{}' in secret '{}'>\tOptional: {}\n",
                    s(k, "/key"),
                    s(k, "/name"),
                    boolean(k, "/optional")
                ),
            );
        } else if let Some(k) = from.get("configMapKeyRef").filter(|v| v.is_object()) {
            w.write(
                3,
                &format!(
                    "{name}:\t<set to the key '{}' of config map '{}'>\tOptional: {}\n",
                    s(k, "/key"),
                    s(k, "/name"),
                    boolean(k, "/optional")
                ),
            );
        }
    }
}

/// kubectl's `fieldpath.ExtractFieldPathAsString`: only metadata paths resolve.
fn field_value(pod: &Value, path: &str) -> String {
    let map_entry = |field: &str, rest: &str| -> Option<String> {
        let key = rest.strip_prefix("['")?.strip_suffix("']")?;
        Some(scalar(pod.pointer(&format!(
            "/metadata/{field}/{}",
            key.replace('~', "~0").replace('/', "~1")
        ))))
    };
    if let Some(rest) = path.strip_prefix("metadata.annotations") {
        if rest.is_empty() {
            return format_map(obj(pod, "/metadata/annotations"));
        }
        return map_entry("annotations", rest).unwrap_or_default();
    }
    if let Some(rest) = path.strip_prefix("metadata.labels") {
        if rest.is_empty() {
            return format_map(obj(pod, "/metadata/labels"));
        }
        return map_entry("labels", rest).unwrap_or_default();
    }
    match path {
        "metadata.name" => s(pod, "/metadata/name").to_owned(),
        "metadata.namespace" => s(pod, "/metadata/namespace").to_owned(),
        "metadata.uid" => s(pod, "/metadata/uid").to_owned(),
        _ => String::new(),
    }
}

/// `k="v"` lines, sorted, as the downward API formats a whole map.
fn format_map(map: Option<&serde_json::Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={:?}", scalar(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    pairs.join("\n")
}

fn mounts(w: &mut PrefixWriter, c: &Value) {
    let list = arr(c, "/volumeMounts");
    let none = if list.is_empty() { "\t<none>" } else { "" };
    w.write(2, &format!("Mounts:{none}\n"));
    let mut sorted: Vec<&Value> = list.iter().collect();
    sorted.sort_by(|a, b| s(a, "/mountPath").cmp(s(b, "/mountPath")));
    for m in sorted {
        let mut flags = vec![if boolean(m, "/readOnly") { "ro" } else { "rw" }.to_owned()];
        let sub = s(m, "/subPath");
        if !sub.is_empty() {
            flags.push(format!("path={sub:?}"));
        }
        w.write(
            3,
            &format!(
                "{} from {} ({})\n",
                s(m, "/mountPath"),
                s(m, "/name"),
                flags.join(",")
            ),
        );
    }
    let devices = arr(c, "/volumeDevices");
    if !devices.is_empty() {
        w.write(2, &format!("Devices:{none}\n"));
        let mut sorted: Vec<&Value> = devices.iter().collect();
        sorted.sort_by(|a, b| s(a, "/devicePath").cmp(s(b, "/devicePath")));
        for d in sorted {
            w.write(
                3,
                &format!("{} from {}\n", s(d, "/devicePath"), s(d, "/name")),
            );
        }
    }
}
