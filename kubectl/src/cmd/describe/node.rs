//! Nodes (upstream's `describeNode`): roles, taints, the node lease, conditions, addresses,
//! capacity, system info, and the non-terminated pods with their requests and limits.

use super::events;
use super::quantity::Sum;
use super::writer::{
    PrefixWriter, annotations_multiline, arr, boolean, labels_multiline, obj, rfc1123z, s, scalar,
    since, taints_multiline,
};
use serde_json::Value;

/// What the node describer fetched besides the node.
pub struct NodeExtras<'a> {
    /// `Ok(lease)`, or the error text upstream prints after `Failed to get lease:`.
    pub lease: Result<Value, String>,
    /// The node's non-terminated pods; `None` when listing pods was forbidden.
    pub pods: Option<&'a [Value]>,
    pub events: Option<&'a [Value]>,
}

/// `findNodeRoles`.
fn roles(node: &Value) -> Vec<String> {
    let mut roles: Vec<String> = Vec::new();
    if let Some(labels) = obj(node, "/metadata/labels") {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role.to_owned());
                }
            } else if k == "kubernetes.io/role" && !scalar(Some(v)).is_empty() {
                roles.push(scalar(Some(v)));
            }
        }
    }
    roles.sort();
    roles.dedup();
    roles
}

/// `describeNode`.
pub fn describe(node: &Value, extras: &NodeExtras<'_>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(node, "/metadata/name")));
    let roles = roles(node);
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.join(",")
    };
    w.write(0, &format!("Roles:\t{roles}\n"));
    labels_multiline(&mut w, "", "Labels", obj(node, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(node, "/metadata/annotations"));
    w.write(
        0,
        &format!(
            "CreationTimestamp:\t{}\n",
            rfc1123z(s(node, "/metadata/creationTimestamp"))
        ),
    );
    taints_multiline(&mut w, "Taints", arr(node, "/spec/taints"));
    w.write(
        0,
        &format!("Unschedulable:\t{}\n", boolean(node, "/spec/unschedulable")),
    );
    match &extras.lease {
        Ok(lease) => {
            w.write(0, "Lease:\n");
            let or_unset = |v: &str| {
                if v.is_empty() {
                    "<unset>".to_owned()
                } else {
                    v.to_owned()
                }
            };
            w.write(
                1,
                &format!(
                    "HolderIdentity:\t{}\n",
                    or_unset(s(lease, "/spec/holderIdentity"))
                ),
            );
            for (field, title) in [
                ("/spec/acquireTime", "AcquireTime"),
                ("/spec/renewTime", "RenewTime"),
            ] {
                let t = s(lease, field);
                let t = if t.is_empty() {
                    "<unset>".to_owned()
                } else {
                    rfc1123z(t)
                };
                w.write(1, &format!("{title}:\t{t}\n"));
            }
        }
        Err(err) => w.write(0, &format!("Lease:\tFailed to get lease: {err}\n")),
    }
    let conditions = arr(node, "/status/conditions");
    if !conditions.is_empty() {
        w.write(
            0,
            "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n",
        );
        w.write(
            1,
            "----\t------\t-----------------\t------------------\t------\t-------\n",
        );
        for c in conditions {
            w.write(
                1,
                &format!(
                    "{} \t{} \t{} \t{} \t{} \t{}\n",
                    s(c, "/type"),
                    s(c, "/status"),
                    rfc1123z(s(c, "/lastHeartbeatTime")),
                    rfc1123z(s(c, "/lastTransitionTime")),
                    s(c, "/reason"),
                    s(c, "/message")
                ),
            );
        }
    }
    w.write(0, "Addresses:\n");
    for a in arr(node, "/status/addresses") {
        w.write(1, &format!("{}:\t{}\n", s(a, "/type"), s(a, "/address")));
    }
    for (field, title) in [
        ("/status/capacity", "Capacity"),
        ("/status/allocatable", "Allocatable"),
    ] {
        if let Some(list) = obj(node, field).filter(|m| !m.is_empty()) {
            w.write(0, &format!("{title}:\n"));
            let mut names: Vec<&String> = list.keys().collect();
            names.sort();
            for name in names {
                w.write(0, &format!("  {name}:\t{}\n", scalar(list.get(name))));
            }
        }
    }
    w.write(0, "System Info:\n");
    for (field, title) in [
        ("machineID", "Machine ID"),
        ("systemUUID", "System UUID"),
        ("bootID", "Boot ID"),
        ("kernelVersion", "Kernel Version"),
        ("osImage", "OS Image"),
        ("operatingSystem", "Operating System"),
        ("architecture", "Architecture"),
        ("containerRuntimeVersion", "Container Runtime Version"),
        ("kubeletVersion", "Kubelet Version"),
        ("kubeProxyVersion", "Kube-Proxy Version"),
    ] {
        let v = s(node, &format!("/status/nodeInfo/{field}"));
        w.write(0, &format!("  {title}:\t{v}\n"));
    }
    let cidr = s(node, "/spec/podCIDR");
    if !cidr.is_empty() {
        w.write(0, &format!("PodCIDR:\t{cidr}\n"));
    }
    let cidrs: Vec<String> = arr(node, "/spec/podCIDRs")
        .iter()
        .map(|v| scalar(Some(v)))
        .collect();
    if !cidrs.is_empty() {
        w.write(0, &format!("PodCIDRs:\t{}\n", cidrs.join(",")));
    }
    let provider = s(node, "/spec/providerID");
    if !provider.is_empty() {
        w.write(0, &format!("ProviderID:\t{provider}\n"));
    }
    match extras.pods {
        Some(pods) => node_resources(&mut w, node, pods),
        None => w.write(0, "Pods:\tnot authorized\n"),
    }
    if let Some(events) = extras.events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `resourcehelper.PodRequests`/`PodLimits`, simplified: the containers' sum, at least each
/// init container's, pod-level resources when set, plus overhead.
fn pod_totals(pod: &Value, field: &str, name: &str) -> Sum {
    let key = format!("/resources/{field}/{name}");
    if let Some(v) = pod.pointer(&format!("/spec{key}")) {
        let mut sum = Sum::default();
        sum.add(&scalar(Some(v)));
        return sum;
    }
    let mut sum = Sum::default();
    for c in arr(pod, "/spec/containers") {
        if let Some(v) = c.pointer(&key) {
            sum.add(&scalar(Some(v)));
        }
    }
    for c in arr(pod, "/spec/initContainers") {
        if let Some(v) = c.pointer(&key) {
            let mut one = Sum::default();
            one.add(&scalar(Some(v)));
            sum = sum.max(one);
        }
    }
    if let Some(v) = pod.pointer(&format!("/spec/overhead/{name}")) {
        sum.add(&scalar(Some(v)));
    }
    sum
}

fn percent(part: &Sum, whole: f64, milli: bool) -> i64 {
    let part = if milli {
        part.milli_value() as f64
    } else {
        part.value()
    };
    let whole = if milli { whole * 1000.0 } else { whole };
    if whole == 0.0 {
        return 0;
    }
    (part / whole * 100.0) as i64
}

/// `describeNodeResource`.
fn node_resources(w: &mut PrefixWriter, node: &Value, pods: &[Value]) {
    w.write(
        0,
        &format!("Non-terminated Pods:\t({} in total)\n", pods.len()),
    );
    w.write(
        1,
        "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n",
    );
    w.write(
        1,
        "---------\t----\t\t------------\t----------\t---------------\t-------------\t---\n",
    );
    let allocatable = obj(node, "/status/allocatable")
        .filter(|m| !m.is_empty())
        .or_else(|| obj(node, "/status/capacity"));
    let alloc = |name: &str| {
        allocatable
            .and_then(|m| m.get(name))
            .and_then(|v| super::quantity::parse(&scalar(Some(v))))
            .unwrap_or(0.0)
    };
    let cell = |sum: &Sum, name: &str| {
        format!(
            "{} ({}%)",
            sum.canonical(),
            percent(sum, alloc(name), name == "cpu")
        )
    };
    for pod in pods {
        let cpu_req = pod_totals(pod, "requests", "cpu");
        let cpu_lim = pod_totals(pod, "limits", "cpu");
        let mem_req = pod_totals(pod, "requests", "memory");
        let mem_lim = pod_totals(pod, "limits", "memory");
        w.write(
            1,
            &format!(
                "{}\t{}\t\t{}\t{}\t{}\t{}\t{}\n",
                s(pod, "/metadata/namespace"),
                s(pod, "/metadata/name"),
                cell(&cpu_req, "cpu"),
                cell(&cpu_lim, "cpu"),
                cell(&mem_req, "memory"),
                cell(&mem_lim, "memory"),
                since(s(pod, "/metadata/creationTimestamp"))
            ),
        );
    }
    w.write(
        0,
        "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n",
    );
    w.write(1, "Resource\tRequests\tLimits\n");
    w.write(1, "--------\t--------\t------\n");
    let total = |field: &str, name: &str| {
        let mut sum = Sum::default();
        for one in pods.iter().map(|pod| pod_totals(pod, field, name)) {
            if one.is_set() {
                sum.add(&one.canonical());
            }
        }
        sum
    };
    for name in ["cpu", "memory", "ephemeral-storage"] {
        let (req, lim) = (total("requests", name), total("limits", name));
        w.write(
            1,
            &format!("{name}\t{}\t{}\n", cell(&req, name), cell(&lim, name)),
        );
    }
    let mut huge: Vec<&String> = Vec::new();
    let mut extended: Vec<&String> = Vec::new();
    for name in allocatable
        .map(|m| m.keys().collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if name.starts_with("hugepages-") {
            huge.push(name);
        } else if !["cpu", "memory", "ephemeral-storage", "pods"].contains(&name.as_str()) {
            extended.push(name);
        }
    }
    huge.sort();
    extended.sort();
    for name in huge {
        let (req, lim) = (total("requests", name), total("limits", name));
        w.write(
            1,
            &format!("{name}\t{}\t{}\n", cell(&req, name), cell(&lim, name)),
        );
    }
    for name in extended {
        let (req, lim) = (total("requests", name), total("limits", name));
        w.write(
            1,
            &format!("{name}\t{}\t{}\n", req.canonical(), lim.canonical()),
        );
    }
}
