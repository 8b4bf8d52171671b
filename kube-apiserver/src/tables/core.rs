//! Core resources: services, endpoints, namespaces, nodes, configmaps, secrets,
//! serviceaccounts, events, limitranges, resourcequotas, persistentvolumes(claims).

use jiff::Timestamp;
use serde_json::Value;

use super::columns::{AGE, Column, DEFAULT, NAME, col, wide};
use super::format::{access_modes, age, count, format_labels, int, list, or, since, text};
use super::{Printer, Row, RowFn};

const SERVICE: &[Column] = &[
    NAME,
    col("Type", "string", "How the service is exposed."),
    col(
        "Cluster-IP",
        "string",
        "The IP address of the service, assigned by the master.",
    ),
    col(
        "External-IP",
        "string",
        "External IP addresses the service is reachable on.",
    ),
    col("Port(s)", "string", "The ports exposed by this service."),
    AGE,
    wide(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
    ),
];

const ENDPOINTS: &[Column] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "Endpoints of the service: IPs and ports.",
    ),
    AGE,
];

const NAMESPACE: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the namespace."),
    AGE,
];

const NODE: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node."),
    col("Roles", "string", "The roles of the node."),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide(
        "Internal-IP",
        "string",
        "List of internal IPs that are assigned to the node.",
    ),
    wide(
        "External-IP",
        "string",
        "List of external IPs that are assigned to the node.",
    ),
    wide(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release.",
    ),
    wide(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r'.",
    ),
    wide(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node.",
    ),
];

const CONFIG_MAP: &[Column] = &[
    NAME,
    col(
        "Data",
        "string",
        "Number of entries in data and binaryData.",
    ),
    AGE,
];

const SECRET: &[Column] = &[
    NAME,
    col("Type", "string", "The type of the secret."),
    col("Data", "string", "Number of entries in data."),
    AGE,
];

const SERVICE_ACCOUNT: &[Column] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "Number of secrets the service account lists.",
    ),
    AGE,
];

const EVENT: &[Column] = &[
    col(
        "Last Seen",
        "string",
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    col("Type", "string", "Type of this event (Normal, Warning)."),
    col("Reason", "string", "Why the action was taken."),
    col("Object", "string", "The object this event is about."),
    wide(
        "Subobject",
        "string",
        "The part of the object this event is about.",
    ),
    wide("Source", "string", "The component reporting this event."),
    col(
        "Message",
        "string",
        "A human-readable description of the status of this operation.",
    ),
    wide(
        "First Seen",
        "string",
        "The time at which the event was first recorded.",
    ),
    wide(
        "Count",
        "string",
        "The number of times this event has occurred.",
    ),
    Column {
        priority: 1,
        ..NAME
    },
];

const RESOURCE_QUOTA: &[Column] = &[
    NAME,
    AGE,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
];

const PERSISTENT_VOLUME: &[Column] = &[
    NAME,
    col("Capacity", "string", "The capacity of the volume."),
    col("Access Modes", "string", "How the volume can be mounted."),
    col(
        "Reclaim Policy",
        "string",
        "What happens to the volume when released from its claim.",
    ),
    col("Status", "string", "The phase of the volume."),
    col("Claim", "string", "The claim bound to the volume."),
    col("StorageClass", "string", "The storage class of the volume."),
    col(
        "VolumeAttributesClass",
        "string",
        "The volume attributes class of the volume.",
    ),
    col("Reason", "string", "Why the volume is in its phase."),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "Whether the volume is a filesystem or a raw block device.",
    ),
];

const PERSISTENT_VOLUME_CLAIM: &[Column] = &[
    NAME,
    col("Status", "string", "The phase of the claim."),
    col("Volume", "string", "The volume bound to the claim."),
    col("Capacity", "string", "The capacity of the bound volume."),
    col("Access Modes", "string", "How the volume can be mounted."),
    col("StorageClass", "string", "The storage class of the claim."),
    col(
        "VolumeAttributesClass",
        "string",
        "The volume attributes class of the claim.",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "Whether the volume is a filesystem or a raw block device.",
    ),
];

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    let (columns, row): (&'static [Column], RowFn) = match (group, resource) {
        ("", "services") => (SERVICE, service),
        ("", "endpoints") => (ENDPOINTS, endpoints),
        ("", "namespaces") => (NAMESPACE, namespace),
        ("", "nodes") => (NODE, node),
        ("", "configmaps") => (CONFIG_MAP, config_map),
        ("", "secrets") => (SECRET, secret),
        ("", "serviceaccounts") => (SERVICE_ACCOUNT, service_account),
        ("", "events") | ("events.k8s.io", "events") => (EVENT, event),
        ("", "limitranges") => (DEFAULT, created_at),
        ("", "resourcequotas") => (RESOURCE_QUOTA, resource_quota),
        ("", "persistentvolumes") => (PERSISTENT_VOLUME, persistent_volume),
        ("", "persistentvolumeclaims") => (PERSISTENT_VOLUME_CLAIM, persistent_volume_claim),
        _ => return None,
    };
    Some(Printer { columns, row })
}

fn name(obj: &Value) -> Value {
    text(obj, "/metadata/name").into()
}

/// NAME and CREATED AT, for resources upstream prints that way.
pub(super) fn created_at(obj: &Value, _now: Timestamp) -> Row {
    vec![name(obj), text(obj, "/metadata/creationTimestamp").into()].into()
}

fn strings<'a>(obj: &'a Value, pointer: &str) -> Vec<&'a str> {
    list(obj, pointer)
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// The load balancer's ingress points, IPs or hostnames.
pub(super) fn load_balancer_ingress(ingress: &[Value]) -> Vec<String> {
    ingress
        .iter()
        .filter_map(|i| {
            let ip = text(i, "/ip");
            let host = text(i, "/hostname");
            (!ip.is_empty() || !host.is_empty()).then(|| or(ip, host).to_string())
        })
        .collect()
}

fn service(svc: &Value, now: Timestamp) -> Row {
    let ty = text(svc, "/spec/type");
    let cluster_ip = strings(svc, "/spec/clusterIPs")
        .first()
        .copied()
        .unwrap_or("<none>");
    let external_ips = strings(svc, "/spec/externalIPs");
    let external = match ty {
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let mut all = load_balancer_ingress(list(svc, "/status/loadBalancer/ingress"));
            all.extend(external_ips.iter().map(|s| s.to_string()));
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = list(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = text(p, "/protocol");
            match int(p, "/nodePort") {
                0 => format!("{}/{protocol}", int(p, "/port")),
                node_port => format!("{}:{node_port}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        name(svc),
        ty.into(),
        cluster_ip.into(),
        external.into(),
        ports.into(),
        age(svc, now),
        format_labels(svc.pointer("/spec/selector")).into(),
    ]
    .into()
}

/// Upstream's `formatEndpoints`: up to three `ip:port`, then `+ N more...`.
fn endpoints(ep: &Value, now: Timestamp) -> Row {
    const MAX: usize = 3;
    let subsets = list(ep, "/subsets");
    let cell = if subsets.is_empty() {
        "<none>".to_string()
    } else {
        let mut shown = Vec::new();
        let mut total = 0usize;
        for subset in subsets {
            let addresses: Vec<&str> = list(subset, "/addresses")
                .iter()
                .map(|a| text(a, "/ip"))
                .collect();
            let ports = list(subset, "/ports");
            if ports.is_empty() {
                total += addresses.len();
                shown.extend(addresses.iter().map(|ip| ip.to_string()));
                continue;
            }
            for port in ports {
                total += addresses.len();
                shown.extend(
                    addresses
                        .iter()
                        .map(|ip| join_host_port(ip, int(port, "/port"))),
                );
            }
        }
        let more = total.saturating_sub(MAX);
        shown.truncate(MAX);
        if more > 0 {
            format!("{} + {more} more...", shown.join(","))
        } else {
            shown.join(",")
        }
    };
    vec![name(ep), cell.into(), age(ep, now)].into()
}

/// `ip:port`, with brackets for IPv6 as Go's `net.JoinHostPort`.
pub(super) fn join_host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

fn namespace(ns: &Value, now: Timestamp) -> Row {
    vec![name(ns), text(ns, "/status/phase").into(), age(ns, now)].into()
}

fn node(node: &Value, now: Timestamp) -> Row {
    let mut status: Vec<String> = Vec::new();
    if let Some(ready) = list(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| text(c, "/type") == "Ready")
    {
        status.push(if text(ready, "/status") == "True" {
            "Ready".to_string()
        } else {
            "NotReady".to_string()
        });
    }
    if status.is_empty() {
        status.push("Unknown".to_string());
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }

    let mut roles: Vec<String> = Vec::new();
    if let Some(Value::Object(labels)) = node.pointer("/metadata/labels") {
        for (key, value) in labels {
            let role = match key.strip_prefix("node-role.kubernetes.io/") {
                Some(role) => role,
                None if key == "kubernetes.io/role" => value.as_str().unwrap_or(""),
                None => continue,
            };
            if !role.is_empty() && !roles.iter().any(|r| r == role) {
                roles.push(role.to_string());
            }
        }
    }
    roles.sort();
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    };

    let address = |ty: &str| {
        list(node, "/status/addresses")
            .iter()
            .find(|a| text(a, "/type") == ty)
            .map_or("<none>", |a| text(a, "/address"))
            .to_string()
    };
    let info = |field: &str| {
        or(
            text(node, &format!("/status/nodeInfo/{field}")),
            "<unknown>",
        )
        .to_string()
    };
    vec![
        name(node),
        status.join(",").into(),
        roles.into(),
        age(node, now),
        text(node, "/status/nodeInfo/kubeletVersion").into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
    .into()
}

fn config_map(cm: &Value, now: Timestamp) -> Row {
    let entries = count(cm, "/data") + count(cm, "/binaryData");
    vec![name(cm), entries.into(), age(cm, now)].into()
}

fn secret(secret: &Value, now: Timestamp) -> Row {
    vec![
        name(secret),
        text(secret, "/type").into(),
        count(secret, "/data").into(),
        age(secret, now),
    ]
    .into()
}

fn service_account(sa: &Value, now: Timestamp) -> Row {
    vec![name(sa), count(sa, "/secrets").into(), age(sa, now)].into()
}

/// The first non-empty of several fields (core/v1 and events.k8s.io/v1 name them differently).
fn first<'a>(obj: &'a Value, pointers: &[&str]) -> &'a str {
    pointers
        .iter()
        .map(|p| text(obj, p))
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

fn event(ev: &Value, now: Timestamp) -> Row {
    let first_ts = first(ev, &["/firstTimestamp", "/deprecatedFirstTimestamp"]);
    let first_seen = if first_ts.is_empty() {
        since(text(ev, "/eventTime"), now)
    } else {
        since(first_ts, now)
    };
    let last_ts = first(ev, &["/lastTimestamp", "/deprecatedLastTimestamp"]);
    let mut last_seen = if last_ts.is_empty() {
        first_seen.clone()
    } else {
        since(last_ts, now)
    };
    let mut occurrences = ev
        .get("count")
        .or_else(|| ev.get("deprecatedCount"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(series) = ev.get("series").filter(|s| s.is_object()) {
        last_seen = since(text(series, "/lastObservedTime"), now);
        occurrences = int(series, "/count");
    } else if occurrences == 0 {
        occurrences = 1;
    }
    let regarding = ev
        .get("involvedObject")
        .or_else(|| ev.get("regarding"))
        .cloned()
        .unwrap_or(Value::Null);
    let kind = text(&regarding, "/kind").to_lowercase();
    let target = match text(&regarding, "/name") {
        "" => kind,
        object => format!("{kind}/{object}"),
    };
    let component = first(
        ev,
        &[
            "/source/component",
            "/deprecatedSource/component",
            "/reportingController",
            "/reportingComponent",
        ],
    );
    let instance = first(
        ev,
        &[
            "/source/host",
            "/deprecatedSource/host",
            "/reportingInstance",
        ],
    );
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    let message = first(ev, &["/message", "/note"]).trim();
    vec![
        last_seen.into(),
        text(ev, "/type").into(),
        text(ev, "/reason").into(),
        target.into(),
        text(&regarding, "/fieldPath").into(),
        source.into(),
        message.into(),
        first_seen.into(),
        occurrences.into(),
        name(ev),
    ]
    .into()
}

fn resource_quota(quota: &Value, now: Timestamp) -> Row {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(Value::Object(hard)) = quota
        .pointer("/status/hard")
        .or(quota.pointer("/spec/hard"))
    {
        let mut keys: Vec<&String> = hard.keys().collect();
        keys.sort();
        for key in keys {
            let used = quota
                .pointer("/status/used")
                .and_then(|u| u.get(key.as_str()))
                .and_then(Value::as_str)
                .unwrap_or("0");
            let limit = hard.get(key.as_str()).and_then(Value::as_str).unwrap_or("");
            let entry = format!("{key}: {used}/{limit}");
            if key.starts_with("limits.") {
                limits.push(entry);
            } else {
                requests.push(entry);
            }
        }
    }
    vec![
        name(quota),
        age(quota, now),
        requests.join(", ").into(),
        limits.join(", ").into(),
    ]
    .into()
}

fn persistent_volume(pv: &Value, now: Timestamp) -> Row {
    let claim = match pv.pointer("/spec/claimRef") {
        Some(r) if r.is_object() => format!("{}/{}", text(r, "/namespace"), text(r, "/name")),
        _ => String::new(),
    };
    let deleting = pv
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    let phase = if deleting {
        "Terminating"
    } else {
        text(pv, "/status/phase")
    };
    vec![
        name(pv),
        text(pv, "/spec/capacity/storage").into(),
        access_modes(list(pv, "/spec/accessModes")).into(),
        text(pv, "/spec/persistentVolumeReclaimPolicy").into(),
        phase.into(),
        claim.into(),
        text(pv, "/spec/storageClassName").into(),
        or(text(pv, "/spec/volumeAttributesClassName"), "<unset>").into(),
        text(pv, "/status/reason").into(),
        age(pv, now),
        or(text(pv, "/spec/volumeMode"), "<unset>").into(),
    ]
    .into()
}

fn persistent_volume_claim(pvc: &Value, now: Timestamp) -> Row {
    let deleting = pvc
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    let phase = if deleting {
        "Terminating"
    } else {
        text(pvc, "/status/phase")
    };
    let volume = text(pvc, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            text(pvc, "/status/capacity/storage").to_string(),
            access_modes(list(pvc, "/status/accessModes")),
        )
    };
    let class = text(pvc, "/spec/storageClassName");
    let class = if class.is_empty() {
        // The beta annotation predates the field and still wins when the field is empty.
        text(
            pvc,
            "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
        )
    } else {
        class
    };
    vec![
        name(pvc),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class.into(),
        or(text(pvc, "/spec/volumeAttributesClassName"), "<unset>").into(),
        age(pvc, now),
        or(text(pvc, "/spec/volumeMode"), "<unset>").into(),
    ]
    .into()
}
