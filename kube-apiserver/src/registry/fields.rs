//! The fields each resource can be selected by (`fieldSelector`), as upstream's per-resource
//! `GetAttrs`/field label conversion functions allow, and their values for one object.

use api_types::registry::ResourceInfo;
use serde_json::Value;
use std::collections::BTreeMap;

/// Fields every object can be selected by.
const COMMON: &[&str] = &["metadata.name", "metadata.namespace"];

/// Extra selectable fields per (group, resource), each a dotted path into the object.
fn extra_fields(info: &ResourceInfo) -> &'static [&'static str] {
    match (info.group, info.plural) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "events") | ("events.k8s.io", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        ("", "replicationcontrollers") | ("apps", "replicasets") => &["status.replicas"],
        ("", "services") => &["spec.clusterIP", "spec.type"],
        ("", "persistentvolumeclaims") => &["spec.storageClassName"],
        ("batch", "jobs") => &["status.successful"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["spec.signerName"],
        _ => &[],
    }
}

/// Every field `info`'s objects can be selected by.
pub fn supported(info: &ResourceInfo) -> Vec<&'static str> {
    COMMON.iter().chain(extra_fields(info)).copied().collect()
}

/// The selectable fields of `object` and their values (absent fields select as "").
pub fn field_set(info: &ResourceInfo, object: &Value) -> BTreeMap<String, String> {
    supported(info)
        .into_iter()
        .map(|field| (field.to_string(), field_value(info, object, field)))
        .collect()
}

fn field_value(info: &ResourceInfo, object: &Value, field: &str) -> String {
    // Cluster-scoped objects select as having the empty namespace.
    if field == "metadata.namespace" && !info.namespaced {
        return String::new();
    }
    // events.k8s.io's `regarding` answers to core's `involvedObject` names.
    let path = match (info.group, field.strip_prefix("involvedObject.")) {
        ("events.k8s.io", Some(rest)) => format!("regarding.{rest}"),
        _ => field.to_string(),
    };
    let mut value = object;
    for segment in path.split('.') {
        value = &value[segment];
    }
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        // Upstream's `source` field of core events is the reporting component.
        Value::Object(map) if field == "source" => map
            .get("component")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        // Unset booleans such as spec.unschedulable and spec.hostNetwork select as "false".
        Value::Null if matches!(field, "spec.unschedulable" | "spec.hostNetwork") => "false".into(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::registry::by_group_version_resource;
    use serde_json::json;

    #[test]
    fn pod_fields() {
        let info = by_group_version_resource("", "v1", "pods").unwrap();
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let set = field_set(info, &pod);
        assert_eq!(set["metadata.name"], "p");
        assert_eq!(set["metadata.namespace"], "ns");
        assert_eq!(set["spec.nodeName"], "n1");
        assert_eq!(set["status.phase"], "Running");
        assert_eq!(set["spec.hostNetwork"], "false");
        assert_eq!(set["status.podIP"], "");
    }

    #[test]
    fn unsupported_fields_are_not_listed() {
        let info = by_group_version_resource("", "v1", "configmaps").unwrap();
        assert_eq!(supported(info), ["metadata.name", "metadata.namespace"]);
        let nodes = by_group_version_resource("", "v1", "nodes").unwrap();
        let set = field_set(nodes, &json!({"metadata": {"name": "n"}}));
        assert_eq!(set["metadata.namespace"], "");
        assert_eq!(set["spec.unschedulable"], "false");
    }
}
