//! Upstream's debug profiles (`--profile`): what each does to the debug container and the pod
//! in each of the three modes, applied to the pod as JSON.

use serde_json::{Map, Value, json};

/// How the debugging is done; profiles differ per mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ephemeral,
    Copy,
    Node,
}

/// One of upstream's profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Legacy,
    General,
    Baseline,
    Restricted,
    Netadmin,
    Sysadmin,
}

/// The `--keep-*` flags: what a copy keeps of the original.
#[derive(Debug, Clone, Copy, Default)]
pub struct Keep {
    pub labels: bool,
    pub annotations: bool,
    pub liveness: bool,
    pub readiness: bool,
    pub startup: bool,
    pub init_containers: bool,
}

impl Profile {
    pub fn parse(name: &str) -> anyhow::Result<Self> {
        Ok(match name {
            "legacy" => Profile::Legacy,
            "general" => Profile::General,
            "baseline" => Profile::Baseline,
            "restricted" => Profile::Restricted,
            "netadmin" => Profile::Netadmin,
            "sysadmin" => Profile::Sysadmin,
            _ => anyhow::bail!("unknown profile: {name}"),
        })
    }

    /// Applies the profile to `pod` for its container `name`.
    pub fn apply(self, pod: &mut Value, name: &str, mode: Mode, keep: Keep) {
        use Profile::*;
        let copy = mode == Mode::Copy;
        match self {
            Legacy => match mode {
                Mode::Node => {
                    mount_root(pod, name);
                    host_namespaces(pod);
                }
                // The legacy copy always drops the labels, and keeps everything else.
                Mode::Copy => strip_copy(
                    pod,
                    Keep {
                        labels: false,
                        annotations: true,
                        liveness: true,
                        readiness: true,
                        startup: true,
                        init_containers: true,
                    },
                ),
                Mode::Ephemeral => {}
            },
            General => match mode {
                Mode::Node => {
                    mount_root(pod, name);
                    edit(pod, name, |c| {
                        c.remove("securityContext");
                    });
                    host_namespaces(pod);
                }
                Mode::Copy => {
                    strip_copy(pod, keep);
                    add_capability(pod, name, "SYS_PTRACE");
                    share_processes(pod);
                }
                Mode::Ephemeral => add_capability(pod, name, "SYS_PTRACE"),
            },
            Baseline | Restricted => {
                edit(pod, name, |c| {
                    c.remove("securityContext");
                });
                if self == Restricted {
                    edit(pod, name, |c| {
                        let sc = security_context(c);
                        sc.insert("runAsNonRoot".into(), json!(true));
                        let caps = sc
                            .entry("capabilities")
                            .or_insert_with(|| json!({}))
                            .as_object_mut()
                            .expect("capabilities is an object");
                        caps.insert("drop".into(), json!(["ALL"]));
                        caps.remove("add");
                        sc.insert("allowPrivilegeEscalation".into(), json!(false));
                        sc.insert("seccompProfile".into(), json!({"type": "RuntimeDefault"}));
                    });
                }
                if copy {
                    strip_copy(pod, keep);
                    share_processes(pod);
                }
            }
            Netadmin => {
                add_capability(pod, name, "NET_ADMIN");
                add_capability(pod, name, "NET_RAW");
                match mode {
                    Mode::Node => host_namespaces(pod),
                    Mode::Copy => {
                        strip_copy(pod, keep);
                        share_processes(pod);
                    }
                    Mode::Ephemeral => {}
                }
            }
            Sysadmin => {
                edit(pod, name, |c| {
                    security_context(c).insert("privileged".into(), json!(true));
                });
                match mode {
                    Mode::Node => {
                        host_namespaces(pod);
                        mount_root(pod, name);
                    }
                    Mode::Copy => {
                        strip_copy(pod, keep);
                        share_processes(pod);
                    }
                    Mode::Ephemeral => {}
                }
            }
        }
    }
}

/// What a copy drops unless kept.
fn strip_copy(pod: &mut Value, keep: Keep) {
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        if !keep.labels {
            meta.remove("labels");
        }
        if !keep.annotations {
            meta.remove("annotations");
        }
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            for (kept, probe) in [
                (keep.liveness, "livenessProbe"),
                (keep.readiness, "readinessProbe"),
                (keep.startup, "startupProbe"),
            ] {
                if !kept {
                    c.remove(probe);
                }
            }
        }
    }
    if !keep.init_containers {
        spec.remove("initContainers");
    }
}

/// Upstream's `VisitContainers` over every kind (init containers first) stopping at the
/// first container named `name`.
fn edit(pod: &mut Value, name: &str, f: impl FnOnce(&mut Map<String, Value>)) {
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(items) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        if let Some(c) = items
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        {
            f(c);
            return;
        }
    }
}

fn security_context(c: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let sc = c.entry("securityContext").or_insert_with(|| json!({}));
    if !sc.is_object() {
        *sc = json!({});
    }
    sc.as_object_mut().expect("an object")
}

fn add_capability(pod: &mut Value, name: &str, capability: &str) {
    edit(pod, name, |c| {
        let caps = security_context(c)
            .entry("capabilities")
            .or_insert_with(|| json!({}));
        if !caps.is_object() {
            *caps = json!({});
        }
        let add = caps
            .as_object_mut()
            .expect("an object")
            .entry("add")
            .or_insert_with(|| json!([]));
        if let Some(list) = add.as_array_mut() {
            list.push(json!(capability));
        } else {
            *add = json!([capability]);
        }
    });
}

/// The node's root at `/host` in the (regular) container `name`.
fn mount_root(pod: &mut Value, name: &str) {
    let spec = &mut pod["spec"];
    let volume = json!({"name": "host-root", "hostPath": {"path": "/"}});
    match spec.get_mut("volumes").and_then(Value::as_array_mut) {
        Some(list) => list.push(volume),
        None => spec["volumes"] = json!([volume]),
    }
    if let Some(c) = spec
        .get_mut("containers")
        .and_then(Value::as_array_mut)
        .and_then(|l| l.iter_mut().find(|c| c["name"] == name))
    {
        let mount = json!({"name": "host-root", "mountPath": "/host"});
        match c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
            Some(list) => list.push(mount),
            None => c["volumeMounts"] = json!([mount]),
        }
    }
}

fn host_namespaces(pod: &mut Value) {
    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        pod["spec"][key] = json!(true);
    }
}

fn share_processes(pod: &mut Value) {
    let spec = &mut pod["spec"];
    if spec.get("shareProcessNamespace").is_none_or(Value::is_null) {
        spec["shareProcessNamespace"] = json!(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "debugger"}]}})
    }

    #[test]
    fn node_profiles() {
        let mut pod = node_pod();
        Profile::Sysadmin.apply(&mut pod, "debugger", Mode::Node, Keep::default());
        assert_eq!(
            pod["spec"]["containers"][0]["securityContext"],
            json!({"privileged": true})
        );
        assert_eq!(pod["spec"]["hostPID"], json!(true));
        assert_eq!(pod["spec"]["volumes"][0]["hostPath"]["path"], json!("/"));
        let mut pod = node_pod();
        Profile::Restricted.apply(&mut pod, "debugger", Mode::Node, Keep::default());
        let sc = &pod["spec"]["containers"][0]["securityContext"];
        assert_eq!(sc["capabilities"], json!({"drop": ["ALL"]}));
        assert!(pod["spec"].get("hostPID").is_none());
    }
}
