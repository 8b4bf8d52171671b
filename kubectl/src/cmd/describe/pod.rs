//! Pods (upstream's `describePod`), their volumes, and pod templates (`DescribePodTemplate`,
//! shared by the workload describers).

use super::containers;
use super::events;
use super::quantity::qos_class;
use super::writer::{
    PrefixWriter, annotations_multiline, arr, boolean, int, labels_multiline, obj, rfc1123z, s,
    since, tolerations_multiline,
};
use serde_json::Value;

/// `describePod`.
pub fn describe(pod: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(pod, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(pod, "/metadata/namespace")),
    );
    if let Some(p) = pod.pointer("/spec/priority").and_then(Value::as_i64) {
        w.write(0, &format!("Priority:\t{p}\n"));
    }
    for (field, title) in [
        ("/spec/priorityClassName", "Priority Class Name"),
        ("/spec/runtimeClassName", "Runtime Class Name"),
        ("/spec/serviceAccountName", "Service Account"),
    ] {
        let v = s(pod, field);
        if !v.is_empty() {
            w.write(0, &format!("{title}:\t{v}\n"));
        }
    }
    let node = s(pod, "/spec/nodeName");
    if node.is_empty() {
        w.write(0, "Node:\t<none>\n");
    } else {
        w.write(0, &format!("Node:\t{node}/{}\n", s(pod, "/status/hostIP")));
    }
    let start = s(pod, "/status/startTime");
    if !start.is_empty() {
        w.write(0, &format!("Start Time:\t{}\n", rfc1123z(start)));
    }
    labels_multiline(&mut w, "", "Labels", obj(pod, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(pod, "/metadata/annotations"));
    let phase = s(pod, "/status/phase");
    let deleted = s(pod, "/metadata/deletionTimestamp");
    if !deleted.is_empty() && phase != "Failed" && phase != "Succeeded" {
        w.write(
            0,
            &format!("Status:\tTerminating (lasts {})\n", since(deleted)),
        );
        w.write(
            0,
            &format!(
                "Termination Grace Period:\t{}s\n",
                int(pod, "/metadata/deletionGracePeriodSeconds")
            ),
        );
    } else {
        w.write(0, &format!("Status:\t{phase}\n"));
    }
    for (field, title) in [("/status/reason", "Reason"), ("/status/message", "Message")] {
        let v = s(pod, field);
        if !v.is_empty() {
            w.write(0, &format!("{title}:\t{v}\n"));
        }
    }
    let seccomp = s(pod, "/spec/securityContext/seccompProfile/type");
    if pod
        .pointer("/spec/securityContext/seccompProfile")
        .is_some()
    {
        w.write(0, &format!("SeccompProfile:\t{seccomp}\n"));
        if seccomp == "Localhost" {
            w.write(
                0,
                &format!(
                    "LocalhostProfile:\t{}\n",
                    s(pod, "/spec/securityContext/seccompProfile/localhostProfile")
                ),
            );
        }
    }
    w.write(0, &format!("IP:\t{}\n", s(pod, "/status/podIP")));
    let ips = arr(pod, "/status/podIPs");
    if ips.is_empty() {
        w.write(0, "IPs:\t<none>\n");
    } else {
        w.write(0, "IPs:\n");
        for ip in ips {
            w.write(1, &format!("IP:\t{}\n", s(ip, "/ip")));
        }
    }
    if let Some(by) = controlled_by(pod) {
        w.write(0, &format!("Controlled By:\t{by}\n"));
    }
    let nominated = s(pod, "/status/nominatedNodeName");
    if !nominated.is_empty() {
        w.write(0, &format!("NominatedNodeName:\t{nominated}\n"));
    }
    if let Some(r) = pod.pointer("/spec/resources").filter(|v| v.is_object()) {
        w.write(0, "Resources:\n");
        containers::resources(&mut w, Some(r), 1);
    }
    let init = arr(pod, "/spec/initContainers");
    if !init.is_empty() {
        let statuses = arr(pod, "/status/initContainerStatuses");
        containers::describe(&mut w, "Init Containers", init, statuses, Some(pod), "");
    }
    let statuses = arr(pod, "/status/containerStatuses");
    let main = arr(pod, "/spec/containers");
    containers::describe(&mut w, "Containers", main, statuses, Some(pod), "");
    let ephemeral = arr(pod, "/spec/ephemeralContainers");
    if !ephemeral.is_empty() {
        let statuses = arr(pod, "/status/ephemeralContainerStatuses");
        containers::describe(
            &mut w,
            "Ephemeral Containers",
            ephemeral,
            statuses,
            Some(pod),
            "",
        );
    }
    let conditions = arr(pod, "/status/conditions");
    let gates = arr(pod, "/spec/readinessGates");
    if !gates.is_empty() {
        w.write(0, "Readiness Gates:\n  Type\tStatus\n");
        for g in gates {
            let t = s(g, "/conditionType");
            let status = conditions
                .iter()
                .find(|c| s(c, "/type") == t)
                .map(|c| s(c, "/status"))
                .unwrap_or("<none>");
            w.write(1, &format!("{t} \t{status} \n"));
        }
    }
    if !conditions.is_empty() {
        w.write(0, "Conditions:\n  Type\tStatus\n");
        for c in conditions {
            w.write(1, &format!("{} \t{} \n", s(c, "/type"), s(c, "/status")));
        }
    }
    volumes(&mut w, arr(pod, "/spec/volumes"), "");
    w.write(0, &format!("QoS Class:\t{}\n", qos_class(pod)));
    labels_multiline(&mut w, "", "Node-Selectors", obj(pod, "/spec/nodeSelector"));
    tolerations_multiline(&mut w, "", "Tolerations", arr(pod, "/spec/tolerations"));
    topology_spread(&mut w, arr(pod, "/spec/topologySpreadConstraints"), "");
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `printController`: `Kind/name` of the controlling owner.
pub fn controlled_by(object: &Value) -> Option<String> {
    arr(object, "/metadata/ownerReferences")
        .iter()
        .find(|r| boolean(r, "/controller"))
        .map(|r| format!("{}/{}", s(r, "/kind"), s(r, "/name")))
}

/// `DescribePodTemplate`.
pub fn describe_template(w: &mut PrefixWriter, template: Option<&Value>) {
    w.write(0, "Pod Template:\n");
    let Some(t) = template else {
        w.write(1, "<unset>");
        return;
    };
    labels_multiline(w, "", "  Labels", obj(t, "/metadata/labels"));
    if obj(t, "/metadata/annotations").is_some_and(|a| !a.is_empty()) {
        annotations_multiline(w, "  Annotations", obj(t, "/metadata/annotations"));
    }
    let sa = s(t, "/spec/serviceAccountName");
    if !sa.is_empty() {
        w.write(1, &format!("Service Account:\t{sa}\n"));
    }
    let init = arr(t, "/spec/initContainers");
    if !init.is_empty() {
        containers::describe(w, "Init Containers", init, &[], None, "  ");
    }
    containers::describe(w, "Containers", arr(t, "/spec/containers"), &[], None, "  ");
    volumes(w, arr(t, "/spec/volumes"), "  ");
    topology_spread(w, arr(t, "/spec/topologySpreadConstraints"), "  ");
    let pc = s(t, "/spec/priorityClassName");
    if !pc.is_empty() {
        w.write(1, &format!("Priority Class Name:\t{pc}\n"));
    }
    labels_multiline(w, "", "  Node-Selectors", obj(t, "/spec/nodeSelector"));
    tolerations_multiline(w, "", "  Tolerations", arr(t, "/spec/tolerations"));
}

fn topology_spread(w: &mut PrefixWriter, list: &[Value], space: &str) {
    if list.is_empty() {
        return;
    }
    let mut sorted: Vec<&Value> = list.iter().collect();
    sorted.sort_by(|a, b| s(a, "/topologyKey").cmp(s(b, "/topologyKey")));
    w.write(0, &format!("{space}Topology Spread Constraints:\t"));
    for (i, t) in sorted.iter().enumerate() {
        if i != 0 {
            w.write(0, space);
            w.write(0, "\t");
        }
        let mut text = format!(
            "{}:{} when max skew {} is exceeded",
            s(t, "/topologyKey"),
            s(t, "/whenUnsatisfiable"),
            int(t, "/maxSkew")
        );
        if let Some(sel) = t.get("labelSelector").filter(|v| v.is_object()) {
            text.push_str(&format!(" for selector {}", format_label_selector(sel)));
        }
        w.write(0, &format!("{text}\n"));
    }
}

/// `metav1.FormatLabelSelector`: the selector's string, `<none>` when it selects everything.
pub fn format_label_selector(sel: &Value) -> String {
    let text = selector_string(sel);
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text
    }
}

/// `labels.Selector.String()` of a label selector: requirements sorted by key, `k=v`,
/// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
pub fn selector_string(sel: &Value) -> String {
    let mut parts: Vec<(String, String)> = Vec::new();
    if let Some(m) = obj(sel, "/matchLabels") {
        for (k, v) in m {
            parts.push((k.clone(), format!("{k}={}", super::writer::scalar(Some(v)))));
        }
    }
    for e in arr(sel, "/matchExpressions") {
        let key = s(e, "/key");
        let mut values: Vec<String> = arr(e, "/values")
            .iter()
            .map(|v| super::writer::scalar(Some(v)))
            .collect();
        values.sort();
        values.dedup();
        let text = match s(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        };
        parts.push((key.to_owned(), text));
    }
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    parts
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// `describeVolumes`.
pub fn volumes(w: &mut PrefixWriter, list: &[Value], space: &str) {
    if list.is_empty() {
        w.write(0, &format!("{space}Volumes:\t<none>\n"));
        return;
    }
    w.write(0, &format!("{space}Volumes:\n"));
    let indent = if space.is_empty() { "" } else { " " };
    for v in list {
        w.write(1, &format!("{indent}{}:\n", s(v, "/name")));
        volume_source(w, v);
    }
}

fn volume_source(w: &mut PrefixWriter, v: &Value) {
    let present = |k: &str| v.get(k).filter(|x| x.is_object());
    let b = |x: &Value, p: &str| boolean(x, p);
    if let Some(h) = present("hostPath") {
        let t = s(h, "/type");
        let t = if h.get("type").is_none() { "<none>" } else { t };
        w.write(2, &format!("Type:\tHostPath (bare host directory volume)\n    Path:\t{}\n    HostPathType:\t{t}\n", s(h, "/path")));
    } else if let Some(e) = present("emptyDir") {
        let limit = super::writer::scalar(e.get("sizeLimit"));
        let limit = if super::quantity::parse(&limit).is_some_and(|q| q > 0.0) {
            limit
        } else {
            "<unset>".to_owned()
        };
        w.write(2, &format!("Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n    Medium:\t{}\n    SizeLimit:\t{limit}\n", s(e, "/medium")));
    } else if let Some(x) = present("secret") {
        w.write(2, &format!("Type:\tSecret (a volume populated by a Secret)\n    SecretName:\t{}\n    Optional:\t{}\n", s(x, "/secretName"), b(x, "/optional")));
    } else if let Some(x) = present("configMap") {
        w.write(2, &format!("Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\t{}\n    Optional:\t{}\n", s(x, "/name"), b(x, "/optional")));
    } else if let Some(x) = present("nfs") {
        w.write(2, &format!("Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n    Server:\t{}\n    Path:\t{}\n    ReadOnly:\t{}\n", s(x, "/server"), s(x, "/path"), b(x, "/readOnly")));
    } else if let Some(x) = present("persistentVolumeClaim") {
        w.write(2, &format!("Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)\n    ClaimName:\t{}\n    ReadOnly:\t{}\n", s(x, "/claimName"), b(x, "/readOnly")));
    } else if let Some(x) = present("downwardAPI") {
        w.write(
            2,
            "Type:\tDownwardAPI (a volume populated by information about the pod)\n    Items:\n",
        );
        for item in arr(x, "/items") {
            if let Some(f) = item.get("fieldRef").filter(|v| v.is_object()) {
                w.write(
                    3,
                    &format!("{} -> {}\n", s(f, "/fieldPath"), s(item, "/path")),
                );
            }
            if let Some(r) = item.get("resourceFieldRef").filter(|v| v.is_object()) {
                w.write(
                    3,
                    &format!("{} -> {}\n", s(r, "/resource"), s(item, "/path")),
                );
            }
        }
    } else if let Some(x) = present("projected") {
        w.write(
            2,
            "Type:\tProjected (a volume that contains injected data from multiple sources)\n",
        );
        for src in arr(x, "/sources") {
            if let Some(sec) = src.get("secret").filter(|v| v.is_object()) {
                w.write(
                    2,
                    &format!(
                        "SecretName:\t{}\n    Optional:\t{}\n",
                        s(sec, "/name"),
                        b(sec, "/optional")
                    ),
                );
            } else if src.get("downwardAPI").is_some_and(Value::is_object) {
                w.write(2, "DownwardAPI:\ttrue\n");
            } else if let Some(cm) = src.get("configMap").filter(|v| v.is_object()) {
                w.write(
                    2,
                    &format!(
                        "ConfigMapName:\t{}\n    Optional:\t{}\n",
                        s(cm, "/name"),
                        b(cm, "/optional")
                    ),
                );
            } else if let Some(t) = src.get("serviceAccountToken").filter(|v| v.is_object()) {
                w.write(
                    2,
                    &format!(
                        "TokenExpirationSeconds:\t{}\n",
                        int(t, "/expirationSeconds")
                    ),
                );
            }
        }
    } else if let Some(x) = present("csi") {
        let ro = b(x, "/readOnly");
        w.write(2, &format!("Type:\tCSI (a Container Storage Interface (CSI) volume source)\n    Driver:\t{}\n    FSType:\t{}\n    ReadOnly:\t{ro}\n", s(x, "/driver"), s(x, "/fsType")));
    } else if let Some(x) = present("image") {
        w.write(2, &format!("Type:\tImage (a container image or OCI artifact)\n    Reference:\t{}\n    PullPolicy:\t{}\n", s(x, "/reference"), s(x, "/pullPolicy")));
    } else {
        // Cloud and legacy in-tree sources are not laid out here.
        w.write(1, "<unknown>\n");
    }
}
