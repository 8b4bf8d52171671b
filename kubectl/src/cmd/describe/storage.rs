//! PersistentVolumeClaims (with the pods using them) and PersistentVolumes.

use super::events;
use super::writer::{
    PrefixWriter, annotations_multiline, arr, boolean, labels_multiline, obj, rfc1123z, s, scalar,
    since,
};
use serde_json::Value;

/// `storageutil.GetAccessModesAsString`: the short forms in a fixed order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(long, _)| has(long))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// Go's `%v` of a string slice: `[a b]`.
fn go_list(items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(|v| scalar(Some(v))).collect();
    format!("[{}]", parts.join(" "))
}

fn class_of(o: &Value) -> &str {
    if o.pointer("/spec/storageClassName").is_some() {
        s(o, "/spec/storageClassName")
    } else {
        s(
            o,
            "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
        )
    }
}

fn status_line(w: &mut PrefixWriter, o: &Value) {
    let deleted = s(o, "/metadata/deletionTimestamp");
    if deleted.is_empty() {
        w.write(0, &format!("Status:\t{}\n", s(o, "/status/phase")));
    } else {
        w.write(
            0,
            &format!("Status:\tTerminating (lasts {})\n", since(deleted)),
        );
    }
}

/// `describePersistentVolumeClaim`; `pods` are the namespace's pods (those mounting the claim
/// or owning it are listed under `Used By`).
pub fn claim(pvc: &Value, pods: &[Value], events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    let name = s(pvc, "/metadata/name");
    w.write(0, &format!("Name:\t{name}\n"));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(pvc, "/metadata/namespace")),
    );
    w.write(0, &format!("StorageClass:\t{}\n", class_of(pvc)));
    status_line(&mut w, pvc);
    let volume = s(pvc, "/spec/volumeName");
    w.write(0, &format!("Volume:\t{volume}\n"));
    labels_multiline(&mut w, "", "Labels", obj(pvc, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(pvc, "/metadata/annotations"));
    w.write(
        0,
        &format!(
            "Finalizers:\t{}\n",
            go_list(arr(pvc, "/metadata/finalizers"))
        ),
    );
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            scalar(pvc.pointer("/status/capacity/storage")),
            access_modes(arr(pvc, "/status/accessModes")),
        )
    };
    let capacity = if capacity.is_empty() && !volume.is_empty() {
        "0".to_owned()
    } else {
        capacity
    };
    w.write(0, &format!("Capacity:\t{capacity}\n"));
    w.write(0, &format!("Access Modes:\t{modes}\n"));
    let mode = s(pvc, "/spec/volumeMode");
    if !mode.is_empty() {
        w.write(0, &format!("VolumeMode:\t{mode}\n"));
    }
    if let Some(ds) = pvc.pointer("/spec/dataSource").filter(|v| v.is_object()) {
        w.write(0, "DataSource:\n");
        if let Some(g) = ds.get("apiGroup").and_then(Value::as_str) {
            w.write(1, &format!("APIGroup:\t{g}\n"));
        }
        w.write(1, &format!("Kind:\t{}\n", s(ds, "/kind")));
        w.write(1, &format!("Name:\t{}\n", s(ds, "/name")));
    }
    let mut users: Vec<&str> = pods
        .iter()
        .filter(|p| {
            arr(p, "/spec/volumes")
                .iter()
                .any(|v| s(v, "/persistentVolumeClaim/claimName") == name)
        })
        .map(|p| s(p, "/metadata/name"))
        .collect();
    for owner in arr(pvc, "/metadata/ownerReferences") {
        if s(owner, "/kind") != "Pod" {
            continue;
        }
        if let Some(p) = pods
            .iter()
            .find(|p| s(p, "/metadata/uid") == s(owner, "/uid"))
        {
            let pod_name = s(p, "/metadata/name");
            if !users.contains(&pod_name) {
                users.push(pod_name);
            }
        }
    }
    users.sort();
    w.write(0, "Used By:\t");
    if users.is_empty() {
        w.line("<none>");
    } else {
        for (i, u) in users.iter().enumerate() {
            if i != 0 {
                w.write(0, "\t");
            }
            w.write(0, &format!("{u}\n"));
        }
    }
    let conditions = arr(pvc, "/status/conditions");
    if !conditions.is_empty() {
        w.write(0, "Conditions:\n");
        w.write(
            1,
            "Type\tStatus\tLastProbeTime\tLastTransitionTime\tReason\tMessage\n",
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
                    rfc1123z(s(c, "/lastProbeTime")),
                    rfc1123z(s(c, "/lastTransitionTime")),
                    s(c, "/reason"),
                    s(c, "/message")
                ),
            );
        }
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `describePersistentVolume` (host path, NFS, local and CSI sources laid out; others
/// `<unknown>`).
pub fn volume(pv: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(pv, "/metadata/name")));
    labels_multiline(&mut w, "", "Labels", obj(pv, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(pv, "/metadata/annotations"));
    w.write(
        0,
        &format!(
            "Finalizers:\t{}\n",
            go_list(arr(pv, "/metadata/finalizers"))
        ),
    );
    w.write(0, &format!("StorageClass:\t{}\n", class_of(pv)));
    status_line(&mut w, pv);
    let claim = match pv.pointer("/spec/claimRef").filter(|v| v.is_object()) {
        Some(r) => format!("{}/{}", s(r, "/namespace"), s(r, "/name")),
        None => String::new(),
    };
    w.write(0, &format!("Claim:\t{claim}\n"));
    w.write(
        0,
        &format!(
            "Reclaim Policy:\t{}\n",
            s(pv, "/spec/persistentVolumeReclaimPolicy")
        ),
    );
    w.write(
        0,
        &format!(
            "Access Modes:\t{}\n",
            access_modes(arr(pv, "/spec/accessModes"))
        ),
    );
    let mode = s(pv, "/spec/volumeMode");
    if !mode.is_empty() {
        w.write(0, &format!("VolumeMode:\t{mode}\n"));
    }
    let capacity = scalar(pv.pointer("/spec/capacity/storage"));
    let capacity = if capacity.is_empty() {
        "0".to_owned()
    } else {
        capacity
    };
    w.write(0, &format!("Capacity:\t{capacity}\n"));
    w.write(0, "Node Affinity:\t");
    match pv
        .pointer("/spec/nodeAffinity/required")
        .filter(|v| v.is_object())
    {
        None => w.line("<none>"),
        Some(required) => {
            w.line("");
            w.write(1, "Required Terms:\t");
            let terms = arr(required, "/nodeSelectorTerms");
            if terms.is_empty() {
                w.line("<none>");
            } else {
                w.line("");
                for (i, term) in terms.iter().enumerate() {
                    w.write(2, &format!("Term {i}:\t"));
                    let reqs = arr(term, "/matchExpressions");
                    if reqs.is_empty() {
                        w.line("<none>");
                    }
                    for (j, r) in reqs.iter().enumerate() {
                        if j != 0 {
                            w.write(2, "\t");
                        }
                        let mut text =
                            format!("{} {}", s(r, "/key"), s(r, "/operator").to_lowercase());
                        let values: Vec<String> =
                            arr(r, "/values").iter().map(|v| scalar(Some(v))).collect();
                        if !values.is_empty() {
                            text.push_str(&format!(" [{}]", values.join(", ")));
                        }
                        w.write(0, &format!("{text}\n"));
                    }
                }
            }
        }
    }
    w.write(0, &format!("Message:\t{}\n", s(pv, "/status/message")));
    w.write(0, "Source:\n");
    let spec = pv.get("spec").cloned().unwrap_or(Value::Null);
    let present = |k: &str| spec.get(k).filter(|x| x.is_object()).cloned();
    if let Some(h) = present("hostPath") {
        let t = if h.get("type").is_none() {
            "<none>"
        } else {
            s(&h, "/type")
        };
        w.write(2, &format!("Type:\tHostPath (bare host directory volume)\n    Path:\t{}\n    HostPathType:\t{t}\n", s(&h, "/path")));
    } else if let Some(x) = present("nfs") {
        w.write(2, &format!("Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n    Server:\t{}\n    Path:\t{}\n    ReadOnly:\t{}\n", s(&x, "/server"), s(&x, "/path"), boolean(&x, "/readOnly")));
    } else if let Some(x) = present("local") {
        w.write(2, &format!("Type:\tLocalVolume (a persistent volume backed by local storage on a node)\n    Path:\t{}\n", s(&x, "/path")));
    } else {
        w.write(1, "<unknown>\n");
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}
