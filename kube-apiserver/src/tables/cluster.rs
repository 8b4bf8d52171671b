//! Cluster plumbing: leases, storageclasses, priorityclasses, poddisruptionbudgets,
//! horizontalpodautoscalers, RBAC roles and bindings, CRDs.

use jiff::Timestamp;
use serde_json::Value;

use super::columns::{AGE, Column, DEFAULT, NAME, col, wide};
use super::core::created_at;
use super::format::{age, int, int_or_string, list, text};
use super::{Printer, Row, RowFn};

const LEASE: &[Column] = &[
    NAME,
    col("Holder", "string", "The holder of the lease."),
    AGE,
];

const STORAGE_CLASS: &[Column] = &[
    NAME,
    col(
        "Provisioner",
        "string",
        "Indicates the type of the provisioner.",
    ),
    col(
        "ReclaimPolicy",
        "string",
        "Indicates the reclaimPolicy for PVs dynamically provisioned by this class.",
    ),
    col(
        "VolumeBindingMode",
        "string",
        "Indicates how PersistentVolumeClaims should be provisioned and bound.",
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        "Shows whether the storage class allow volume expand.",
    ),
    AGE,
];

const PRIORITY_CLASS: &[Column] = &[
    NAME,
    col(
        "Value",
        "integer",
        "The integer value of this priority class.",
    ),
    col(
        "Global-Default",
        "boolean",
        "Whether this priority class is the default for pods without one.",
    ),
    col(
        "PreemptionPolicy",
        "string",
        "The policy for preempting pods with lower priority.",
    ),
    AGE,
];

const PDB: &[Column] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available after an eviction.",
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable after an eviction.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Number of pod disruptions that are currently allowed.",
    ),
    AGE,
];

const HPA: &[Column] = &[
    NAME,
    col("Reference", "string", "The scale target of the autoscaler."),
    col(
        "Targets",
        "string",
        "The current and target values of the metrics.",
    ),
    col(
        "MinPods",
        "string",
        "The lower limit for the number of pods.",
    ),
    col(
        "MaxPods",
        "string",
        "The upper limit for the number of pods.",
    ),
    col(
        "Replicas",
        "string",
        "Current number of replicas of pods managed by this autoscaler.",
    ),
    AGE,
];

const BINDING: &[Column] = &[
    NAME,
    col("Role", "string", "The role the binding grants."),
    AGE,
    wide("Users", "string", "Users in the binding."),
    wide("Groups", "string", "Groups in the binding."),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the binding.",
    ),
];

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    let (columns, row): (&'static [Column], RowFn) = match (group, resource) {
        ("coordination.k8s.io", "leases") => (LEASE, lease),
        ("storage.k8s.io", "storageclasses") => (STORAGE_CLASS, storage_class),
        ("scheduling.k8s.io", "priorityclasses") => (PRIORITY_CLASS, priority_class),
        ("policy", "poddisruptionbudgets") => (PDB, pdb),
        ("autoscaling", "horizontalpodautoscalers") => (HPA, hpa),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles")
        | ("apiextensions.k8s.io", "customresourcedefinitions") => (DEFAULT, created_at),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => (BINDING, binding),
        _ => return None,
    };
    Some(Printer { columns, row })
}

fn name(obj: &Value) -> Value {
    text(obj, "/metadata/name").into()
}

fn lease(lease: &Value, now: Timestamp) -> Row {
    vec![
        name(lease),
        text(lease, "/spec/holderIdentity").into(),
        age(lease, now),
    ]
    .into()
}

fn storage_class(sc: &Value, now: Timestamp) -> Row {
    let is_default = |key: &str| {
        sc.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            == Some("true")
    };
    let mut shown = text(sc, "/metadata/name").to_string();
    if is_default("storageclass.kubernetes.io/is-default-class")
        || is_default("storageclass.beta.kubernetes.io/is-default-class")
    {
        shown.push_str(" (default)");
    }
    let or_default = |pointer: &str, default: &'static str| match text(sc, pointer) {
        "" => default.to_string(),
        v => v.to_string(),
    };
    vec![
        shown.into(),
        text(sc, "/provisioner").into(),
        or_default("/reclaimPolicy", "Delete").into(),
        or_default("/volumeBindingMode", "Immediate").into(),
        sc.get("allowVolumeExpansion")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .into(),
        age(sc, now),
    ]
    .into()
}

fn priority_class(pc: &Value, now: Timestamp) -> Row {
    let policy = match text(pc, "/preemptionPolicy") {
        "" => "PreemptLowerPriority",
        p => p,
    };
    vec![
        name(pc),
        int(pc, "/value").into(),
        pc.get("globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .into(),
        policy.into(),
        age(pc, now),
    ]
    .into()
}

fn pdb(pdb: &Value, now: Timestamp) -> Row {
    vec![
        name(pdb),
        int_or_string(pdb.pointer("/spec/minAvailable"), "N/A").into(),
        int_or_string(pdb.pointer("/spec/maxUnavailable"), "N/A").into(),
        int(pdb, "/status/disruptionsAllowed").into(),
        age(pdb, now),
    ]
    .into()
}

/// A quantity or `<unknown>`.
fn quantity(v: Option<&Value>) -> String {
    int_or_string(v, "<unknown>")
}

/// One metric of an HPA as upstream prints it (`cpu: 40%/80%`, `3/5 (avg)`, ...).
fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let current = |source: &str, field: &str| {
        quantity(status.and_then(|s| s.pointer(&format!("/{source}/current/{field}"))))
    };
    match text(spec, "/type") {
        ty @ ("Resource" | "ContainerResource") => {
            let source = if ty == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let metric = text(spec, &format!("/{source}/name"));
            let target = spec
                .pointer(&format!("/{source}/target"))
                .cloned()
                .unwrap_or(Value::Null);
            if let Some(avg) = target.get("averageValue") {
                format!(
                    "{metric}: {}/{}",
                    current(source, "averageValue"),
                    quantity(Some(avg))
                )
            } else {
                let cur = status
                    .and_then(|s| s.pointer(&format!("/{source}/current/averageUtilization")))
                    .and_then(Value::as_i64)
                    .map_or("<unknown>".to_string(), |u| format!("{u}%"));
                let goal = target
                    .get("averageUtilization")
                    .and_then(Value::as_i64)
                    .map_or("<auto>".to_string(), |u| format!("{u}%"));
                format!("{metric}: {cur}/{goal}")
            }
        }
        "Pods" => format!(
            "{}/{}",
            current("pods", "averageValue"),
            quantity(spec.pointer("/pods/target/averageValue"))
        ),
        ty @ ("External" | "Object") => {
            let source = if ty == "External" {
                "external"
            } else {
                "object"
            };
            match spec.pointer(&format!("/{source}/target/averageValue")) {
                Some(avg) => format!(
                    "{}/{} (avg)",
                    current(source, "averageValue"),
                    quantity(Some(avg))
                ),
                None => format!(
                    "{}/{}",
                    current(source, "value"),
                    quantity(spec.pointer(&format!("/{source}/target/value")))
                ),
            }
        }
        _ => "<unknown type>".to_string(),
    }
}

fn hpa(hpa: &Value, now: Timestamp) -> Row {
    const MAX: usize = 2;
    let specs = list(hpa, "/spec/metrics");
    let statuses = list(hpa, "/status/currentMetrics");
    let targets = if specs.is_empty() {
        "<none>".to_string()
    } else {
        let shown: Vec<String> = specs
            .iter()
            .take(MAX)
            .enumerate()
            .map(|(i, spec)| hpa_metric(spec, statuses.get(i)))
            .collect();
        if specs.len() > MAX {
            format!("{} + {} more...", shown.join(", "), specs.len() - MAX)
        } else {
            shown.join(", ")
        }
    };
    let min = hpa
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or("<unset>".to_string(), |m| m.to_string());
    vec![
        name(hpa),
        format!(
            "{}/{}",
            text(hpa, "/spec/scaleTargetRef/kind"),
            text(hpa, "/spec/scaleTargetRef/name")
        )
        .into(),
        targets.into(),
        min.into(),
        int(hpa, "/spec/maxReplicas").into(),
        int(hpa, "/status/currentReplicas").into(),
        age(hpa, now),
    ]
    .into()
}

fn binding(b: &Value, now: Timestamp) -> Row {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut accounts = Vec::new();
    for subject in list(b, "/subjects") {
        let who = text(subject, "/name");
        match text(subject, "/kind") {
            "User" => users.push(who.to_string()),
            "Group" => groups.push(who.to_string()),
            "ServiceAccount" => {
                accounts.push(format!("{}/{who}", text(subject, "/namespace")));
            }
            _ => {}
        }
    }
    vec![
        name(b),
        format!("{}/{}", text(b, "/roleRef/kind"), text(b, "/roleRef/name")).into(),
        age(b, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        accounts.join(", ").into(),
    ]
    .into()
}
