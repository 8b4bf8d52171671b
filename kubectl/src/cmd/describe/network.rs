//! Endpoints, EndpointSlices, and the RBAC bindings (whose subjects are a plain table).

use super::events;
use super::writer::{PrefixWriter, annotations_multiline, arr, labels_multiline, obj, s, scalar};
use serde_json::Value;

fn header(w: &mut PrefixWriter, o: &Value) {
    w.write(0, &format!("Name:\t{}\n", s(o, "/metadata/name")));
    w.write(0, &format!("Namespace:\t{}\n", s(o, "/metadata/namespace")));
    labels_multiline(w, "", "Labels", obj(o, "/metadata/labels"));
    annotations_multiline(w, "Annotations", obj(o, "/metadata/annotations"));
}

fn or_none(list: Vec<&str>, sep: &str) -> String {
    if list.is_empty() {
        "<none>".to_owned()
    } else {
        list.join(sep)
    }
}

/// `describeEndpoints`.
pub fn endpoints(ep: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    header(&mut w, ep);
    w.write(0, "Subsets:\n");
    for subset in arr(ep, "/subsets") {
        let ips =
            |field: &str| -> Vec<&str> { arr(subset, field).iter().map(|a| s(a, "/ip")).collect() };
        w.write(
            1,
            &format!("Addresses:\t{}\n", or_none(ips("/addresses"), ",")),
        );
        w.write(
            1,
            &format!(
                "NotReadyAddresses:\t{}\n",
                or_none(ips("/notReadyAddresses"), ",")
            ),
        );
        let ports = arr(subset, "/ports");
        if !ports.is_empty() {
            w.write(1, "Ports:\n");
            w.write(2, "Name\tPort\tProtocol\n");
            w.write(2, "----\t----\t--------\n");
            for p in ports {
                let name = s(p, "/name");
                let name = if name.is_empty() { "<unset>" } else { name };
                w.write(
                    2,
                    &format!("{name}\t{}\t{}\n", scalar(p.get("port")), s(p, "/protocol")),
                );
            }
        }
        w.write(0, "\n");
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `describeEndpointSliceV1`.
pub fn endpoint_slice(eps: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    header(&mut w, eps);
    w.write(0, &format!("AddressType:\t{}\n", s(eps, "/addressType")));
    let ports = arr(eps, "/ports");
    if ports.is_empty() {
        w.write(0, "Ports: <unset>\n");
    } else {
        w.write(0, "Ports:\n");
        w.write(1, "Name\tPort\tProtocol\n");
        w.write(1, "----\t----\t--------\n");
        for p in ports {
            let name = s(p, "/name");
            let name = if name.is_empty() { "<unset>" } else { name };
            let port = p
                .get("port")
                .filter(|v| !v.is_null())
                .map(|v| scalar(Some(v)))
                .unwrap_or_else(|| "<unset>".to_owned());
            w.write(1, &format!("{name}\t{port}\t{}\n", s(p, "/protocol")));
        }
    }
    let endpoints = arr(eps, "/endpoints");
    if endpoints.is_empty() {
        w.write(0, "Endpoints: <none>\n");
    } else {
        w.write(0, "Endpoints:\n");
        let unset = |v: Option<&Value>| match v {
            Some(Value::Null) | None => "<unset>".to_owned(),
            Some(v) => scalar(Some(v)),
        };
        for e in endpoints {
            let addrs: Vec<&str> = arr(e, "/addresses")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            w.write(1, &format!("- Addresses:\t{}\n", or_none(addrs, ", ")));
            w.write(2, "Conditions:\n");
            w.write(
                3,
                &format!("Ready:\t{}\n", unset(e.pointer("/conditions/ready"))),
            );
            w.write(2, &format!("Hostname:\t{}\n", unset(e.get("hostname"))));
            if let Some(r) = e.get("targetRef").filter(|v| v.is_object()) {
                w.write(
                    2,
                    &format!("TargetRef:\t{}/{}\n", s(r, "/kind"), s(r, "/name")),
                );
            }
            w.write(2, &format!("NodeName:\t{}\n", unset(e.get("nodeName"))));
            w.write(2, &format!("Zone:\t{}\n", unset(e.get("zone"))));
        }
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// RoleBinding and ClusterRoleBinding: the role, then the subjects table.
pub fn binding(b: &Value) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(b, "/metadata/name")));
    labels_multiline(&mut w, "", "Labels", obj(b, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(b, "/metadata/annotations"));
    w.write(0, "Role:\n");
    w.write(1, &format!("Kind:\t{}\n", s(b, "/roleRef/kind")));
    w.write(1, &format!("Name:\t{}\n", s(b, "/roleRef/name")));
    w.write(0, "Subjects:\n");
    w.write(1, "Kind\tName\tNamespace\n");
    w.write(1, "----\t----\t---------\n");
    for subject in arr(b, "/subjects") {
        w.write(
            1,
            &format!(
                "{}\t{}\t{}\n",
                s(subject, "/kind"),
                s(subject, "/name"),
                s(subject, "/namespace")
            ),
        );
    }
    w.finish()
}
