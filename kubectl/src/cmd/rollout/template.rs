//! A pod template as upstream's `DescribePodTemplate` writes it for `rollout history
//! --revision=N`: raw tab-separated lines (no tabwriter), two spaces per level.

use serde_json::{Map, Value};
use std::fmt::Write;

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn sorted_map(v: Option<&Value>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// `title:\tk=v\n\tk2=v2\n`, or `<none>`.
fn labels(out: &mut String, title: &str, map: Option<&Value>) {
    let _ = write!(out, "{title}:\t");
    let entries = sorted_map(map);
    if entries.is_empty() {
        out.push_str("<none>\n");
    }
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        let _ = writeln!(out, "{k}={v}");
    }
}

fn annotations(out: &mut String, map: Option<&Value>) {
    const MAX: usize = 140;
    let entries: Vec<(String, String)> = sorted_map(map)
        .into_iter()
        .filter(|(k, _)| k != "kubectl.kubernetes.io/last-applied-configuration")
        .collect();
    out.push_str("  Annotations:\t");
    if entries.is_empty() {
        out.push_str("<none>\n");
    }
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        let v = v.strip_suffix('\n').unwrap_or(v);
        if v.len() + k.len() + 2 > MAX || v.contains('\n') {
            let _ = writeln!(out, "{k}:");
            for line in v.split('\n') {
                let short: String = if line.len() > MAX - 2 {
                    format!("{}...", &line[..line.floor_char_boundary(MAX - 2)])
                } else {
                    line.to_owned()
                };
                let _ = writeln!(out, "\t  {short}");
            }
        } else {
            let _ = writeln!(out, "{k}: {v}");
        }
    }
}

fn ports(c: &Value, field: &str) -> String {
    arr(c, "ports")
        .iter()
        .map(|p| {
            let n = p.get(field).and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            format!("{n}/{proto}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn container(out: &mut String, c: &Value) {
    let _ = writeln!(out, "   {}:", s(c, "name"));
    let _ = writeln!(out, "    Image:\t{}", s(c, "image"));
    for (field, one, many) in [
        ("containerPort", "Port", "Ports"),
        ("hostPort", "Host Port", "Host Ports"),
    ] {
        let text = ports(c, field);
        if text.contains(',') {
            let _ = writeln!(out, "    {many}:\t{text}");
        } else if text.is_empty() {
            let _ = writeln!(out, "    {one}:\t<none>");
        } else {
            let _ = writeln!(out, "    {one}:\t{text}");
        }
    }
    if let Some(policy) = c.get("restartPolicy").and_then(Value::as_str) {
        let _ = writeln!(out, "    Restart Policy:\t{policy}");
    }
    for (key, title) in [("command", "Command"), ("args", "Args")] {
        let items = arr(c, key);
        if !items.is_empty() {
            let _ = writeln!(out, "    {title}:");
            for item in items {
                for line in item.as_str().unwrap_or("").split('\n') {
                    let _ = writeln!(out, "      {line}");
                }
            }
        }
    }
    for (key, title) in [("limits", "Limits"), ("requests", "Requests")] {
        let entries = sorted_map(c.pointer(&format!("/resources/{key}")));
        if !entries.is_empty() {
            let _ = writeln!(out, "    {title}:");
        }
        for (k, v) in entries {
            let _ = writeln!(out, "      {k}:\t{v}");
        }
    }
    let env = arr(c, "env");
    let _ = writeln!(
        out,
        "    Environment:{}",
        if env.is_empty() { "\t<none>" } else { "" }
    );
    for e in env {
        env_line(out, e);
    }
    let mut mounts: Vec<&Value> = arr(c, "volumeMounts").iter().collect();
    mounts.sort_by_key(|m| s(m, "mountPath").to_owned());
    let _ = writeln!(
        out,
        "    Mounts:{}",
        if mounts.is_empty() { "\t<none>" } else { "" }
    );
    for m in mounts {
        let mut flags = vec![if m.get("readOnly") == Some(&Value::Bool(true)) {
            "ro".to_owned()
        } else {
            "rw".to_owned()
        }];
        if !s(m, "subPath").is_empty() {
            flags.push(format!("path={:?}", s(m, "subPath")));
        }
        let _ = writeln!(
            out,
            "      {} from {} ({})",
            s(m, "mountPath"),
            s(m, "name"),
            flags.join(",")
        );
    }
}

fn env_line(out: &mut String, e: &Value) {
    let name = s(e, "name");
    let Some(from) = e.get("valueFrom") else {
        for (i, line) in s(e, "value").split('\n').enumerate() {
            if i == 0 {
                let _ = writeln!(out, "      {name}:\t{line}");
            } else {
                let _ = writeln!(out, "      \t{line}");
            }
        }
        return;
    };
    let optional = |r: &Value| r.get("optional") == Some(&Value::Bool(true));
    if let Some(r) = from.get("secretKeyRef") {
        let _ = writeln!(
            out,
            "      {name}:\t<set to the key '{}' in secret '{}'>\tOptional: {}",
            s(r, "key"),
            s(r, "name"),
            optional(r)
        );
    } else if let Some(r) = from.get("configMapKeyRef") {
        let _ = writeln!(
            out,
            "      {name}:\t<set to the key '{}' of config map '{}'>\tOptional: {}",
            s(r, "key"),
            s(r, "name"),
            optional(r)
        );
    } else if let Some(r) = from.get("fieldRef") {
        let _ = writeln!(
            out,
            "      {name}:\t (v1:{})",
            s(r, "fieldPath").trim_start_matches("v1:")
        );
    } else if let Some(r) = from.get("resourceFieldRef") {
        let _ = writeln!(out, "      {name}:\t{}", s(r, "resource"));
    }
}

fn volumes(out: &mut String, spec: &Value) {
    let list = arr(spec, "volumes");
    if list.is_empty() {
        out.push_str("  Volumes:\t<none>\n");
        return;
    }
    out.push_str("  Volumes:\n");
    for v in list {
        let _ = writeln!(out, "   {}:", s(v, "name"));
        let optional = |r: &Value| r.get("optional") == Some(&Value::Bool(true));
        if let Some(e) = v.get("emptyDir") {
            let limit = e
                .get("sizeLimit")
                .and_then(Value::as_str)
                .unwrap_or("<unset>");
            let _ = write!(
                out,
                "    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n    Medium:\t{}\n    SizeLimit:\t{limit}\n",
                s(e, "medium")
            );
        } else if let Some(c) = v.get("configMap") {
            let _ = write!(
                out,
                "    Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\t{}\n    Optional:\t{}\n",
                s(c, "name"),
                optional(c)
            );
        } else if let Some(c) = v.get("secret") {
            let _ = write!(
                out,
                "    Type:\tSecret (a volume populated by a Secret)\n    SecretName:\t{}\n    Optional:\t{}\n",
                s(c, "secretName"),
                optional(c)
            );
        } else if let Some(h) = v.get("hostPath") {
            let kind = h.get("type").and_then(Value::as_str).unwrap_or("<none>");
            let _ = write!(
                out,
                "    Type:\tHostPath (bare host directory volume)\n    Path:\t{}\n    HostPathType:\t{kind}\n",
                s(h, "path")
            );
        }
    }
}

fn tolerations(out: &mut String, spec: &Value) {
    out.push_str("  Tolerations:\t");
    let list = arr(spec, "tolerations");
    if list.is_empty() {
        out.push_str("<none>\n");
    }
    for (i, t) in list.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        out.push_str(s(t, "key"));
        if !s(t, "value").is_empty() {
            let _ = write!(out, "={}", s(t, "value"));
        }
        if !s(t, "effect").is_empty() {
            let _ = write!(out, ":{}", s(t, "effect"));
        }
        if s(t, "operator") == "Exists" && s(t, "value").is_empty() {
            let sep = if s(t, "key").is_empty() && s(t, "effect").is_empty() {
                ""
            } else {
                " "
            };
            let _ = write!(out, "{sep}op=Exists");
        }
        if let Some(secs) = t.get("tolerationSeconds").and_then(Value::as_i64) {
            let _ = write!(out, " for {secs}s");
        }
        out.push('\n');
    }
}

/// The description of `template` (a `PodTemplateSpec`).
pub fn describe(template: &Value) -> String {
    let mut out = String::from("Pod Template:\n");
    let empty = Value::Object(Map::new());
    let meta = template.get("metadata").unwrap_or(&empty);
    let spec = template.get("spec").unwrap_or(&empty);
    labels(&mut out, "  Labels", meta.get("labels"));
    if meta
        .get("annotations")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        annotations(&mut out, meta.get("annotations"));
    }
    if !s(spec, "serviceAccountName").is_empty() {
        let _ = writeln!(out, "  Service Account:\t{}", s(spec, "serviceAccountName"));
    }
    let init = arr(spec, "initContainers");
    if !init.is_empty() {
        out.push_str("  Init Containers:\n");
        init.iter().for_each(|c| container(&mut out, c));
    }
    let containers = arr(spec, "containers");
    if containers.is_empty() {
        out.push_str("  Containers: <none>\n");
    } else {
        out.push_str("  Containers:\n");
    }
    containers.iter().for_each(|c| container(&mut out, c));
    volumes(&mut out, spec);
    if !s(spec, "priorityClassName").is_empty() {
        let _ = writeln!(
            out,
            "  Priority Class Name:\t{}",
            s(spec, "priorityClassName")
        );
    }
    labels(&mut out, "  Node-Selectors", spec.get("nodeSelector"));
    tolerations(&mut out, spec);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_template() {
        let t = json!({"metadata": {"labels": {"pod-template-hash": "766486c5b6", "app": "web"}},
                       "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}});
        assert_eq!(
            describe(&t),
            "Pod Template:\n  Labels:\tapp=web\n\tpod-template-hash=766486c5b6\n  Containers:\n   nginx:\n    Image:\tnginx:1.27\n    Port:\t<none>\n    Host Port:\t<none>\n    Environment:\t<none>\n    Mounts:\t<none>\n  Volumes:\t<none>\n  Node-Selectors:\t<none>\n  Tolerations:\t<none>\n"
        );
    }

    #[test]
    fn rich_template() {
        let t = json!({"metadata": {"labels": {"app": "web"}, "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}},
                       "spec": {"serviceAccountName": "sa", "containers": [{"name": "c", "image": "i",
                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "resources": {"limits": {"cpu": "1"}},
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]}],
                         "tolerations": [{"operator": "Exists"}]}});
        let text = describe(&t);
        for want in [
            "  Annotations:\tkubectl.kubernetes.io/restartedAt: 2026-01-01T00:00:00Z\n",
            "  Service Account:\tsa\n",
            "    Port:\t80/TCP\n    Host Port:\t0/TCP\n",
            "    Limits:\n      cpu:\t1\n",
            "    Environment:\n      A:\t1\n      B:\t<set to the key 'k' of config map 'cm'>\tOptional: false\n",
            "  Tolerations:\top=Exists\n",
        ] {
            assert!(text.contains(want), "{want:?} in\n{text}");
        }
    }
}
