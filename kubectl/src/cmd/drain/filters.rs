//! Which pods of a node a drain removes (upstream's drain filters): DaemonSet pods, mirror
//! pods, pods with local storage and unmanaged pods, each fatal or a warning per the flags.

use serde_json::Value;
use std::collections::BTreeMap;

pub const DAEMONSET_FATAL: &str = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
pub const DAEMONSET_WARNING: &str = "ignoring DaemonSet-managed Pods";
pub const LOCAL_STORAGE_FATAL: &str =
    "Pods with local storage (use --delete-emptydir-data to override)";
pub const LOCAL_STORAGE_WARNING: &str = "deleting Pods with local storage";
pub const UNMANAGED_FATAL: &str =
    "cannot delete Pods that declare no controller (use --force to override)";
pub const UNMANAGED_WARNING: &str = "deleting Pods that declare no controller";

/// The drain flags the filters read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy {
    pub force: bool,
    pub ignore_daemonsets: bool,
    pub delete_emptydir_data: bool,
}

/// A filter's verdict on one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Okay,
    Skip,
    Warning { delete: bool, message: String },
    Error(String),
}

impl Status {
    pub fn deletes(&self) -> bool {
        matches!(self, Status::Okay | Status::Warning { delete: true, .. })
    }
}

fn finished(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

fn controller(pod: &Value) -> Option<&Value> {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// `ds_exists` answers whether the DaemonSet owning the pod still exists (`Err` carries the
/// lookup's error text).
pub fn evaluate(
    pod: &Value,
    policy: Policy,
    ds_exists: impl Fn(&str) -> Result<bool, String>,
) -> Status {
    // DaemonSet filter.
    if let Some(owner) = controller(pod)
        && owner.get("kind").and_then(Value::as_str) == Some("DaemonSet")
        && !finished(pod)
    {
        let name = owner.get("name").and_then(Value::as_str).unwrap_or("");
        match ds_exists(name) {
            Ok(true) if policy.ignore_daemonsets => {
                return Status::Warning {
                    delete: false,
                    message: DAEMONSET_WARNING.into(),
                };
            }
            Ok(true) => return Status::Error(DAEMONSET_FATAL.into()),
            Ok(false) if policy.force => {
                return Status::Warning {
                    delete: true,
                    message: format!("daemonsets.apps \"{name}\" not found"),
                };
            }
            Ok(false) => return Status::Error(format!("daemonsets.apps \"{name}\" not found")),
            Err(e) => return Status::Error(e),
        }
    }
    // Mirror pods belong to the kubelet.
    if pod
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return Status::Skip;
    }
    let mut status = Status::Okay;
    let local_storage = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .is_some_and(|vs| vs.iter().any(|v| v.get("emptyDir").is_some()));
    if local_storage && !finished(pod) {
        if !policy.delete_emptydir_data {
            return Status::Error(LOCAL_STORAGE_FATAL.into());
        }
        status = Status::Warning {
            delete: true,
            message: LOCAL_STORAGE_WARNING.into(),
        };
    }
    // Unreplicated filter; like upstream it replaces the local-storage warning.
    if finished(pod) || controller(pod).is_some() {
        let _ = status;
        return Status::Okay;
    }
    if policy.force {
        return Status::Warning {
            delete: true,
            message: UNMANAGED_WARNING.into(),
        };
    }
    Status::Error(UNMANAGED_FATAL.into())
}

fn ns_name(pod: &Value) -> String {
    format!(
        "{}/{}",
        pod.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(""),
        pod.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    )
}

/// Groups `ns/name` by message, in first-seen order.
fn grouped<'a>(items: impl Iterator<Item = (&'a str, String)>) -> Vec<(String, Vec<String>)> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (msg, pod) in items {
        if !by.contains_key(msg) {
            order.push(msg.to_owned());
        }
        by.entry(msg.to_owned()).or_default().push(pod);
    }
    order
        .into_iter()
        .map(|m| {
            let pods = by.remove(&m).unwrap_or_default();
            (m, pods)
        })
        .collect()
}

/// Upstream's `cannot delete <message>: ns/a, ns/b` errors.
pub fn errors(list: &[(Value, Status)]) -> Vec<String> {
    grouped(list.iter().filter_map(|(p, s)| match s {
        Status::Error(m) => Some((m.as_str(), ns_name(p))),
        _ => None,
    }))
    .into_iter()
    .map(|(m, pods)| format!("cannot delete {m}: {}", pods.join(", ")))
    .collect()
}

/// Upstream's warning line body: `<message>: ns/a, ns/b; <message>: ...`.
pub fn warnings(list: &[(Value, Status)]) -> String {
    grouped(list.iter().filter_map(|(p, s)| match s {
        Status::Warning { message, .. } => Some((message.as_str(), ns_name(p))),
        _ => None,
    }))
    .into_iter()
    .map(|(m, pods)| format!("{m}: {}", pods.join(", ")))
    .collect::<Vec<_>>()
    .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(owner: Option<&str>, empty_dir: bool) -> Value {
        let mut p = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {}, "status": {"phase": "Running"}});
        if let Some(kind) = owner {
            p["metadata"]["ownerReferences"] =
                json!([{"kind": kind, "name": "o", "controller": true}]);
        }
        if empty_dir {
            p["spec"]["volumes"] = json!([{"name": "v", "emptyDir": {}}]);
        }
        p
    }

    #[test]
    fn verdicts() {
        let none = Policy::default();
        let all = Policy {
            force: true,
            ignore_daemonsets: true,
            delete_emptydir_data: true,
        };
        let exists = |_: &str| Ok(true);
        let cases = [
            (pod(Some("ReplicaSet"), false), none, Status::Okay),
            (
                pod(None, false),
                none,
                Status::Error(UNMANAGED_FATAL.into()),
            ),
            (
                pod(None, false),
                all,
                Status::Warning {
                    delete: true,
                    message: UNMANAGED_WARNING.into(),
                },
            ),
            (
                pod(Some("DaemonSet"), false),
                none,
                Status::Error(DAEMONSET_FATAL.into()),
            ),
            (
                pod(Some("DaemonSet"), false),
                all,
                Status::Warning {
                    delete: false,
                    message: DAEMONSET_WARNING.into(),
                },
            ),
            (
                pod(Some("ReplicaSet"), true),
                none,
                Status::Error(LOCAL_STORAGE_FATAL.into()),
            ),
            (pod(Some("ReplicaSet"), true), all, Status::Okay),
        ];
        for (p, policy, want) in cases {
            assert_eq!(evaluate(&p, policy, exists), want, "{p} {policy:?}");
        }
        let list = vec![
            (pod(None, false), Status::Error(UNMANAGED_FATAL.into())),
            (pod(None, false), Status::Error(UNMANAGED_FATAL.into())),
        ];
        assert_eq!(
            errors(&list),
            vec![format!("cannot delete {UNMANAGED_FATAL}: ns/p, ns/p")]
        );
    }
}
