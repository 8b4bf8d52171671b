//! The Pod Security Standards checks (upstream's `pod-security-admission/policy`, newest
//! version of each check as of 1.33), over a pod's `metadata` and `spec` as JSON.
//!
//! Reasons and details are upstream's word for word: clients and tests match on them.

use super::levels::Level;
use api_types::validation::go_quote;
use serde_json::Value;
use std::collections::BTreeSet;

/// One failed check: a short reason (`host namespaces`) and what exactly is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub reason: String,
    pub detail: String,
}

impl Violation {
    fn new(reason: impl Into<String>, detail: impl Into<String>) -> Self {
        Violation {
            reason: reason.into(),
            detail: detail.into(),
        }
    }
}

/// Upstream's detailed aggregate: `reason (detail), reason (detail)`.
pub fn forbidden_detail(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| {
            if v.detail.is_empty() {
                v.reason.clone()
            } else {
                format!("{} ({})", v.reason, v.detail)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Upstream's short aggregate, reasons only: `reason, reason`.
pub fn forbidden_reasons(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| v.reason.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

type CheckFn = fn(&Value, &Value) -> Option<Violation>;

struct Check {
    level: Level,
    /// A baseline check a stricter restricted check replaces at the restricted level.
    overridden_by_restricted: bool,
    run: CheckFn,
}

const fn check(level: Level, overridden_by_restricted: bool, run: CheckFn) -> Check {
    Check {
        level,
        overridden_by_restricted,
        run,
    }
}

/// In upstream's registration order (its check files in name order), which is the order of
/// the reasons in a refusal: baseline checks first, then restricted ones.
const CHECKS: &[Check] = &[
    check(Level::Restricted, false, allow_privilege_escalation),
    check(Level::Baseline, false, app_armor_profile),
    check(Level::Baseline, true, capabilities_baseline),
    check(Level::Restricted, false, capabilities_restricted),
    check(Level::Baseline, false, host_namespaces),
    check(Level::Baseline, true, host_path_volumes),
    check(Level::Baseline, false, host_ports),
    check(Level::Baseline, false, privileged),
    check(Level::Baseline, false, proc_mount),
    check(Level::Restricted, false, restricted_volumes),
    check(Level::Restricted, false, run_as_non_root),
    check(Level::Restricted, false, run_as_user),
    check(Level::Baseline, false, se_linux_options),
    check(Level::Baseline, true, seccomp_profile_baseline),
    check(Level::Restricted, false, seccomp_profile_restricted),
    check(Level::Baseline, false, sysctls),
    check(Level::Baseline, false, windows_host_process),
];

/// The violations of `level` by a pod (or pod template) with these `metadata` and `spec`.
pub fn evaluate(level: Level, pod_meta: &Value, pod_spec: &Value) -> Vec<Violation> {
    let baseline = CHECKS.iter().filter(|c| {
        c.level == Level::Baseline && !(level == Level::Restricted && c.overridden_by_restricted)
    });
    let restricted = CHECKS.iter().filter(|c| c.level == Level::Restricted);
    match level {
        Level::Privileged => Vec::new(),
        Level::Baseline => baseline
            .filter_map(|c| (c.run)(pod_meta, pod_spec))
            .collect(),
        Level::Restricted => baseline
            .chain(restricted)
            .filter_map(|c| (c.run)(pod_meta, pod_spec))
            .collect(),
    }
}

// Helpers. Absent and null fields are the same thing here, as a nil pointer is upstream.

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    field(v, key).and_then(Value::as_str).unwrap_or_default()
}

fn bool_field(v: &Value, key: &str) -> Option<bool> {
    field(v, key).and_then(Value::as_bool)
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn pod_security_context(spec: &Value) -> Option<&Value> {
    field(spec, "securityContext")
}

fn security_context(container: &Value) -> Option<&Value> {
    field(container, "securityContext")
}

/// Init containers, containers, then ephemeral containers, as upstream visits them.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(|key| {
            spec.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
}

fn name(container: &Value) -> String {
    str_field(container, "name").to_string()
}

fn is_windows(spec: &Value) -> bool {
    field(spec, "os").is_some_and(|os| str_field(os, "name") == "windows")
}

fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// `"a", "b"`: upstream quotes these plainly, without escaping.
fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items
        .into_iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect();
    items.join(", ")
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase(names: &[String]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// Who sets what `violates` finds in a security context: `pod` and/or `container(s) "a", ...`
/// (the pod's context first, then each container's in upstream's order).
fn setters(spec: &Value, mut violates: impl FnMut(&Value) -> bool) -> Vec<String> {
    let mut setters = Vec::new();
    if pod_security_context(spec).is_some_and(&mut violates) {
        setters.push("pod".to_string());
    }
    let bad: Vec<String> = containers(spec)
        .filter(|c| security_context(c).is_some_and(&mut violates))
        .map(name)
        .collect();
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    setters
}

// Baseline checks.

const APP_ARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// AppArmor may not be disabled: the profile type (pod or container) must be RuntimeDefault or
/// Localhost, the deprecated annotations `runtime/default` or `localhost/*`.
fn app_armor_profile(meta: &Value, spec: &Value) -> Option<Violation> {
    let allowed_type = |p: &Value| matches!(str_field(p, "type"), "RuntimeDefault" | "Localhost");
    let mut bad_types = BTreeSet::new();
    let mut setters = setters(spec, |sc| match field(sc, "appArmorProfile") {
        Some(p) if !allowed_type(p) => {
            bad_types.insert(str_field(p, "type").to_string());
            true
        }
        _ => false,
    });
    let mut annotations: Vec<String> = field(meta, "annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or_default();
            let allowed = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (k.starts_with(APP_ARMOR_ANNOTATION_PREFIX) && !allowed)
                .then(|| format!("{k}={}", go_quote(v)))
        })
        .collect();
    annotations.sort();
    let mut values: Vec<String> = bad_types.into_iter().collect();
    if !annotations.is_empty() {
        setters.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    if setters.is_empty() {
        return None;
    }
    Some(Violation::new(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    ))
}

/// The capabilities a container runtime grants by default: adding others is forbidden.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn capabilities_baseline(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut non_default = BTreeSet::new();
    for c in containers(spec) {
        let Some(caps) = security_context(c).and_then(|sc| field(sc, "capabilities")) else {
            continue;
        };
        let mut valid = true;
        for cap in strings(field(caps, "add")) {
            if !BASELINE_CAPABILITIES.contains(&cap) {
                valid = false;
                non_default.insert(cap);
            }
        }
        if !valid {
            bad_containers.push(name(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    Some(Violation::new(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&non_default)
        ),
    ))
}

fn host_namespaces(_meta: &Value, spec: &Value) -> Option<Violation> {
    // Upstream names them in this fixed order, each as `<field>=true`.
    let shared: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|key| bool_field(spec, key) == Some(true))
        .map(|key| format!("{key}=true"))
        .collect();
    if shared.is_empty() {
        return None;
    }
    Some(Violation::new("host namespaces", shared.join(", ")))
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec.get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn host_path_volumes(_meta: &Value, spec: &Value) -> Option<Violation> {
    let bad: Vec<String> = volumes(spec)
        .filter(|v| field(v, "hostPath").is_some())
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    Some(Violation::new(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad)
        ),
    ))
}

fn host_ports(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    // Upstream sorts the ports as strings: "8080" before "90".
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for port in c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let host_port = field(port, "hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host_port != 0 {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(name(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    Some(Violation::new(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.into_iter().collect::<Vec<_>>().join(", ")
        ),
    ))
}

fn privileged(_meta: &Value, spec: &Value) -> Option<Violation> {
    let bad: Vec<String> = containers(spec)
        .filter(|c| security_context(c).and_then(|sc| bool_field(sc, "privileged")) == Some(true))
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    Some(Violation::new(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    ))
}

fn proc_mount(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut types = BTreeSet::new();
    for c in containers(spec) {
        if let Some(t) = security_context(c)
            .and_then(|sc| field(sc, "procMount"))
            .and_then(Value::as_str)
            && t != "Default"
        {
            bad_containers.push(name(c));
            types.insert(t);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    Some(Violation::new(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(&types)
        ),
    ))
}

/// The SELinux types a container may run as (1.31 added `container_engine_t`).
const SE_LINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

fn se_linux_options(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut bad_types = BTreeSet::new();
    let mut set_user = false;
    let mut set_role = false;
    let mut valid = |opts: &Value| {
        let mut ok = true;
        let t = str_field(opts, "type");
        if !SE_LINUX_TYPES.contains(&t) {
            ok = false;
            bad_types.insert(t.to_string());
        }
        if !str_field(opts, "user").is_empty() {
            ok = false;
            set_user = true;
        }
        if !str_field(opts, "role").is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let setters = setters(spec, |sc| {
        field(sc, "seLinuxOptions").is_some_and(|o| !valid(o))
    });
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        data.push(format!(
            "{} {}",
            pluralize("type", "types", bad_types.len()),
            join_quote(&bad_types)
        ));
    }
    if set_user {
        data.push("user may not be set".to_string());
    }
    if set_role {
        data.push("role may not be set".to_string());
    }
    Some(Violation::new(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    ))
}

fn valid_seccomp(profile: &Value) -> bool {
    matches!(str_field(profile, "type"), "RuntimeDefault" | "Localhost")
}

/// The pod and containers that set a seccomp profile other than RuntimeDefault or Localhost
/// (`setters` as upstream words them), the bad types, and the containers that set none.
struct Seccomp {
    setters: Vec<String>,
    bad_types: BTreeSet<String>,
    pod_valid: bool,
    unset_containers: Vec<String>,
}

fn seccomp(spec: &Value) -> Seccomp {
    let mut s = Seccomp {
        setters: Vec::new(),
        bad_types: BTreeSet::new(),
        pod_valid: false,
        unset_containers: Vec::new(),
    };
    if let Some(p) = pod_security_context(spec).and_then(|sc| field(sc, "seccompProfile")) {
        if valid_seccomp(p) {
            s.pod_valid = true;
        } else {
            s.setters.push("pod".to_string());
            s.bad_types.insert(str_field(p, "type").to_string());
        }
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        match security_context(c).and_then(|sc| field(sc, "seccompProfile")) {
            Some(p) if !valid_seccomp(p) => {
                bad_containers.push(name(c));
                s.bad_types.insert(str_field(p, "type").to_string());
            }
            Some(_) => {}
            None => s.unset_containers.push(name(c)),
        }
    }
    if !bad_containers.is_empty() {
        s.setters.push(containers_phrase(&bad_containers));
    }
    s
}

fn seccomp_setters_violation(s: &Seccomp) -> Violation {
    Violation::new(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            s.setters.join(" and "),
            join_quote(&s.bad_types)
        ),
    )
}

fn seccomp_profile_baseline(_meta: &Value, spec: &Value) -> Option<Violation> {
    let s = seccomp(spec);
    (!s.setters.is_empty()).then(|| seccomp_setters_violation(&s))
}

/// Sysctls namespaced to the pod and isolated from other pods on the node (the 1.32 set).
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

fn sysctls(_meta: &Value, spec: &Value) -> Option<Violation> {
    let forbidden: Vec<&str> = pod_security_context(spec)
        .and_then(|sc| field(sc, "sysctls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| str_field(s, "name"))
        .filter(|n| !SAFE_SYSCTLS.contains(n))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    Some(Violation::new("forbidden sysctls", forbidden.join(", ")))
}

fn windows_host_process(_meta: &Value, spec: &Value) -> Option<Violation> {
    let host_process = |sc: &Value| {
        field(sc, "windowsOptions").and_then(|w| bool_field(w, "hostProcess")) == Some(true)
    };
    let setters = setters(spec, host_process);
    if setters.is_empty() {
        return None;
    }
    Some(Violation::new(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    ))
}

// Restricted checks.

/// Linux only: Windows pods (`spec.os.name: windows`) are exempt, as upstream since 1.25.
fn allow_privilege_escalation(_meta: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    let bad: Vec<String> = containers(spec)
        .filter(|c| {
            security_context(c).and_then(|sc| bool_field(sc, "allowPrivilegeEscalation"))
                != Some(false)
        })
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    Some(Violation::new(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    ))
}

/// Linux only (Windows pods are exempt): drop ALL, add nothing but NET_BIND_SERVICE.
fn capabilities_restricted(_meta: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden = BTreeSet::new();
    for c in containers(spec) {
        let Some(caps) = security_context(c).and_then(|sc| field(sc, "capabilities")) else {
            missing_drop_all.push(name(c));
            continue;
        };
        if !strings(field(caps, "drop")).any(|cap| cap == "ALL") {
            missing_drop_all.push(name(c));
        }
        let mut added_forbidden = false;
        for cap in strings(field(caps, "add")) {
            if cap != "NET_BIND_SERVICE" {
                added_forbidden = true;
                forbidden.insert(cap);
            }
        }
        if added_forbidden {
            adding_forbidden.push(name(c));
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    Some(Violation::new(
        "unrestricted capabilities",
        details.join("; "),
    ))
}

/// The volume sources a restricted pod may use.
const ALLOWED_VOLUME_SOURCES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The other sources, named as upstream names them in its detail (first match wins).
const RESTRICTED_VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

fn restricted_volumes(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for v in volumes(spec) {
        if ALLOWED_VOLUME_SOURCES
            .iter()
            .any(|source| field(v, source).is_some())
        {
            continue;
        }
        bad.push(name(v));
        let source = RESTRICTED_VOLUME_SOURCES
            .iter()
            .find(|source| field(v, source).is_some());
        types.insert(source.copied().unwrap_or("unknown"));
    }
    if bad.is_empty() {
        return None;
    }
    Some(Violation::new(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
    ))
}

fn run_as_non_root(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut pod_non_root = false;
    match pod_security_context(spec).and_then(|sc| bool_field(sc, "runAsNonRoot")) {
        Some(false) => setters.push("pod".to_string()),
        Some(true) => pod_non_root = true,
        None => {}
    }
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        match security_context(c).and_then(|sc| bool_field(sc, "runAsNonRoot")) {
            Some(false) => explicit.push(name(c)),
            Some(true) => {}
            None if !pod_non_root => implicit.push(name(c)),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers_phrase(&explicit));
    }
    if !setters.is_empty() {
        return Some(Violation::new(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        ));
    }
    if implicit.is_empty() {
        return None;
    }
    Some(Violation::new(
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_phrase(&implicit)
        ),
    ))
}

fn run_as_user(_meta: &Value, spec: &Value) -> Option<Violation> {
    let root = |sc: &Value| field(sc, "runAsUser").and_then(Value::as_i64) == Some(0);
    let setters = setters(spec, root);
    if setters.is_empty() {
        return None;
    }
    Some(Violation::new(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    ))
}

/// Linux only (Windows pods are exempt): every container must run under RuntimeDefault or
/// Localhost, set on the pod or on the container.
fn seccomp_profile_restricted(_meta: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    let s = seccomp(spec);
    if !s.setters.is_empty() {
        return Some(seccomp_setters_violation(&s));
    }
    if s.pod_valid || s.unset_containers.is_empty() {
        return None;
    }
    Some(Violation::new(
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_phrase(&s.unset_containers)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn restricted_pod() -> Value {
        json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "c",
                "image": "busybox",
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                },
            }],
            "volumes": [
                {"name": "cm", "configMap": {"name": "x"}},
                {"name": "tmp", "emptyDir": {}},
                {"name": "tok", "projected": {"sources": []}},
            ],
        })
    }

    fn only(level: Level, meta: Value, spec: Value) -> Violation {
        let mut v = evaluate(level, &meta, &spec);
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    fn assert_only(level: Level, spec: Value, reason: &str, detail: &str) {
        let v = only(level, json!({}), spec);
        assert_eq!((v.reason.as_str(), v.detail.as_str()), (reason, detail));
    }

    #[test]
    fn privileged_allows_anything() {
        let spec = json!({"hostNetwork": true, "containers": [{"name": "c",
            "securityContext": {"privileged": true}}]});
        assert!(evaluate(Level::Privileged, &json!({}), &spec).is_empty());
    }

    #[test]
    fn bare_pod_gets_upstreams_restricted_message() {
        let spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        let v = evaluate(Level::Restricted, &json!({}), &spec);
        assert_eq!(
            forbidden_detail(&v),
            r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
        );
        assert_eq!(
            forbidden_reasons(&v),
            "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
        );
        assert!(evaluate(Level::Baseline, &json!({}), &spec).is_empty());
    }

    #[test]
    fn privileged_pod_at_restricted_lists_baseline_reasons_first() {
        let spec = json!({
            "hostNetwork": true,
            "hostPID": true,
            "initContainers": [{"name": "init", "securityContext": {"privileged": true}}],
            "containers": [
                {"name": "a", "securityContext": {"privileged": true, "runAsUser": 0}},
                {"name": "b", "ports": [{"containerPort": 80, "hostPort": 90},
                                        {"containerPort": 81, "hostPort": 8080}]},
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        });
        let v = evaluate(Level::Restricted, &json!({}), &spec);
        assert_eq!(
            forbidden_detail(&v),
            concat!(
                r#"host namespaces (hostNetwork=true, hostPID=true), "#,
                r#"hostPort (container "b" uses hostPorts 8080, 90), "#,
                r#"privileged (containers "init", "a" must not set securityContext.privileged=true), "#,
                r#"allowPrivilegeEscalation != false (containers "init", "a", "b" must set securityContext.allowPrivilegeEscalation=false), "#,
                r#"unrestricted capabilities (containers "init", "a", "b" must set securityContext.capabilities.drop=["ALL"]), "#,
                r#"restricted volume types (volume "host" uses restricted volume type "hostPath"), "#,
                r#"runAsNonRoot != true (pod or containers "init", "a", "b" must set securityContext.runAsNonRoot=true), "#,
                r#"runAsUser=0 (container "a" must not set runAsUser=0), "#,
                r#"seccompProfile (pod or containers "init", "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
            )
        );
        // Baseline reports the hostPath volume itself (restricted folds it into volume types).
        let v = evaluate(Level::Baseline, &json!({}), &spec);
        assert_eq!(
            forbidden_reasons(&v),
            "host namespaces, hostPath volumes, hostPort, privileged"
        );
        assert_eq!(v[1].detail, r#"volume "host""#);
    }

    #[test]
    fn compliant_restricted_pod_passes() {
        assert!(evaluate(Level::Restricted, &json!({}), &restricted_pod()).is_empty());
        let mut spec = restricted_pod();
        spec["securityContext"] = json!({});
        spec["containers"][0]["securityContext"]["runAsNonRoot"] = json!(true);
        spec["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Localhost"});
        assert!(evaluate(Level::Restricted, &json!({}), &spec).is_empty());
    }

    #[test]
    fn baseline_allows_what_only_restricted_refuses() {
        let spec = json!({
            "securityContext": {"runAsUser": 0},
            "containers": [{"name": "c", "securityContext": {
                "allowPrivilegeEscalation": true,
                "runAsNonRoot": false,
                "capabilities": {"add": ["CHOWN", "KILL"]},
            }}],
            "volumes": [{"name": "nfs", "nfs": {"server": "s", "path": "/"}}],
        });
        assert!(evaluate(Level::Baseline, &json!({}), &spec).is_empty());
        let v = evaluate(Level::Restricted, &json!({}), &spec);
        assert_eq!(
            forbidden_reasons(&v),
            "allowPrivilegeEscalation != false, unrestricted capabilities, restricted volume types, runAsNonRoot != true, runAsUser=0, seccompProfile"
        );
        assert_eq!(
            v[1].detail,
            r#"container "c" must set securityContext.capabilities.drop=["ALL"]; container "c" must not include "CHOWN", "KILL" in securityContext.capabilities.add"#
        );
        assert_eq!(
            v[3].detail,
            r#"container "c" must not set securityContext.runAsNonRoot=false"#
        );
        assert_eq!(v[4].detail, r#"pod must not set runAsUser=0"#);
    }

    #[test]
    fn capabilities() {
        let spec = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["NET_RAW", "CHOWN", "SYS_ADMIN"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["NET_RAW"]}}},
            {"name": "c", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}},
        ]});
        assert_only(
            Level::Baseline,
            spec,
            "non-default capabilities",
            r#"containers "a", "b" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add"#,
        );
    }

    #[test]
    fn windows_host_process() {
        let spec = json!({
            "securityContext": {"windowsOptions": {"hostProcess": true}},
            "containers": [{"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                           {"name": "b", "securityContext": {"windowsOptions": {"hostProcess": false}}}],
        });
        assert_only(
            Level::Baseline,
            spec,
            "hostProcess",
            r#"pod and container "a" must not set securityContext.windowsOptions.hostProcess=true"#,
        );
    }

    #[test]
    fn host_namespaces_in_upstream_order() {
        let spec =
            json!({"hostIPC": true, "hostNetwork": true, "hostPID": false, "containers": []});
        assert_only(
            Level::Baseline,
            spec,
            "host namespaces",
            "hostNetwork=true, hostIPC=true",
        );
    }

    #[test]
    fn host_port_singular() {
        let spec = json!({"containers": [{"name": "a", "ports": [{"hostPort": 80}, {"containerPort": 1}]}]});
        assert_only(
            Level::Baseline,
            spec,
            "hostPort",
            r#"container "a" uses hostPort 80"#,
        );
    }

    #[test]
    fn app_armor() {
        let meta = json!({"annotations": {
            "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/f": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/c": "localhost/foo",
            "container.apparmor.security.beta.kubernetes.io/a": "",
            "unrelated": "unconfined",
        }});
        let spec = json!({
            "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
            "containers": [{"name": "x", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}],
        });
        let v = only(Level::Baseline, meta, spec);
        assert_eq!(v.reason, "forbidden AppArmor profiles");
        assert_eq!(
            v.detail,
            r#"pod and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/f="unconfined"""#
        );
        let spec = json!({"containers": [{"name": "x", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]});
        assert_only(
            Level::Baseline,
            spec,
            "forbidden AppArmor profile",
            r#"container "x" must not set AppArmor profile type to "Unconfined""#,
        );
    }

    #[test]
    fn proc_mount() {
        let spec = json!({"containers": [
            {"name": "a", "securityContext": {"procMount": "Unmasked"}},
            {"name": "b", "securityContext": {"procMount": "Default"}},
        ]});
        assert_only(
            Level::Baseline,
            spec,
            "procMount",
            r#"container "a" must not set securityContext.procMount to "Unmasked""#,
        );
    }

    #[test]
    fn se_linux() {
        let spec = json!({
            "securityContext": {"seLinuxOptions": {"type": "foo", "user": "u", "level": "s0:c1"}},
            "containers": [
                {"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}},
                {"name": "b", "securityContext": {"seLinuxOptions": {"type": "bar", "role": "r"}}},
            ],
        });
        assert_only(
            Level::Baseline,
            spec,
            "seLinuxOptions",
            r#"pod and container "b" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
        );
        let spec = json!({"containers": [{"name": "a", "securityContext": {"seLinuxOptions": {"user": "u"}}}]});
        assert_only(
            Level::Baseline,
            spec,
            "seLinuxOptions",
            r#"container "a" set forbidden securityContext.seLinuxOptions: user may not be set"#,
        );
    }

    #[test]
    fn seccomp_unconfined() {
        let spec = json!({
            "securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                           {"name": "b", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}],
        });
        assert_only(
            Level::Baseline,
            spec.clone(),
            "seccompProfile",
            r#"pod and container "a" must not set securityContext.seccompProfile.type to "Unconfined""#,
        );
        // At restricted the stricter check replaces the baseline one: reported once.
        let v = evaluate(Level::Restricted, &json!({}), &spec);
        assert_eq!(v.iter().filter(|v| v.reason == "seccompProfile").count(), 1);
    }

    #[test]
    fn sysctls() {
        let spec = json!({"securityContext": {"sysctls": [
            {"name": "kernel.shm_rmid_forced", "value": "1"},
            {"name": "net.ipv4.tcp_wmem", "value": "4096"},
            {"name": "kernel.msgmax", "value": "1"},
            {"name": "net.core.somaxconn", "value": "1"},
        ]}, "containers": []});
        assert_only(
            Level::Baseline,
            spec,
            "forbidden sysctls",
            "kernel.msgmax, net.core.somaxconn",
        );
    }

    #[test]
    fn restricted_volume_types() {
        let mut spec = restricted_pod();
        spec["volumes"] = json!([
            {"name": "a", "nfs": {}},
            {"name": "ok", "csi": {"driver": "d"}},
            {"name": "b", "gitRepo": {}},
            {"name": "c", "nfs": {}},
            {"name": "d"},
        ]);
        assert_only(
            Level::Restricted,
            spec,
            "restricted volume types",
            r#"volumes "a", "b", "c", "d" use restricted volume types "gitRepo", "nfs", "unknown""#,
        );
    }

    #[test]
    fn ephemeral_containers_are_checked() {
        let mut spec = restricted_pod();
        spec["ephemeralContainers"] = json!([{"name": "debug", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "runAsUser": 0}}]);
        assert_only(
            Level::Restricted,
            spec,
            "runAsUser=0",
            r#"container "debug" must not set runAsUser=0"#,
        );
    }

    #[test]
    fn windows_pods_skip_linux_only_checks() {
        let spec = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "c"}]});
        assert!(evaluate(Level::Restricted, &json!({}), &spec).is_empty());
        let spec = json!({"os": {"name": "windows"}, "containers": [{"name": "c"}]});
        assert_only(
            Level::Restricted,
            spec,
            "runAsNonRoot != true",
            r#"pod or container "c" must set securityContext.runAsNonRoot=true"#,
        );
    }

    #[test]
    fn run_as_non_root_explicit_false_wins() {
        let mut spec = restricted_pod();
        spec["securityContext"]["runAsNonRoot"] = json!(false);
        spec["containers"].as_array_mut().unwrap().push(
            json!({"name": "d", "securityContext": {"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": false}}),
        );
        assert_only(
            Level::Restricted,
            spec,
            "runAsNonRoot != true",
            r#"pod and container "d" must not set securityContext.runAsNonRoot=false"#,
        );
    }
}
