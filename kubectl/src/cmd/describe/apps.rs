//! Deployments (with their ReplicaSets and rolling-update strategy) and ReplicaSets (with the
//! phases of the pods they control).

use super::events;
use super::pod::{controlled_by, describe_template, format_label_selector, selector_string};
use super::writer::{
    PrefixWriter, annotations_multiline, arr, int, labels_multiline, obj, rfc1123z, s, scalar,
};
use serde_json::Value;

/// The deployment's ReplicaSets: the new one (template equal but for the hash label) and the
/// old ones, as `deploymentutil.GetAllReplicaSets` splits them.
pub struct Split<'a> {
    pub old: Vec<&'a Value>,
    pub new: Option<&'a Value>,
}

/// Splits `owned` (the ReplicaSets this deployment controls, in list order).
pub fn split<'a>(deployment: &Value, owned: &'a [Value]) -> Split<'a> {
    let template = without_hash(deployment.pointer("/spec/template"));
    let mut by_age: Vec<&Value> = owned.iter().collect();
    by_age.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                s(v, "/metadata/creationTimestamp").to_owned(),
                s(v, "/metadata/name").to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    let new = by_age
        .into_iter()
        .find(|rs| without_hash(rs.pointer("/spec/template")) == template);
    let old = owned
        .iter()
        .filter(|rs| new.is_none_or(|n| !std::ptr::eq(*rs, n)))
        .collect();
    Split { old, new }
}

/// A pod template without the `pod-template-hash` label (an emptied label map counts as none).
fn without_hash(template: Option<&Value>) -> Value {
    let mut t = template.cloned().unwrap_or(Value::Null);
    if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            labels.remove("pod-template-hash");
        }
        if meta
            .get("labels")
            .and_then(Value::as_object)
            .is_some_and(|l| l.is_empty())
        {
            meta.remove("labels");
        }
    }
    t
}

fn replica_sets_line(list: &[&Value]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|rs| {
            format!(
                "{} ({}/{} replicas created)",
                s(rs, "/metadata/name"),
                int(rs, "/status/replicas"),
                int(rs, "/spec/replicas")
            )
        })
        .collect();
    if items.is_empty() {
        "<none>".to_owned()
    } else {
        items.join(", ")
    }
}

fn conditions(w: &mut PrefixWriter, object: &Value) {
    let list = arr(object, "/status/conditions");
    if list.is_empty() {
        return;
    }
    w.write(0, "Conditions:\n  Type\tStatus\tReason\n");
    w.write(1, "----\t------\t------\n");
    for c in list {
        w.write(
            1,
            &format!(
                "{} \t{}\t{}\n",
                s(c, "/type"),
                s(c, "/status"),
                s(c, "/reason")
            ),
        );
    }
}

/// `describeDeployment`; `owned` are its ReplicaSets (`None` when they could not be listed).
pub fn deployment(d: &Value, owned: Option<&[Value]>, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(d, "/metadata/name")));
    w.write(0, &format!("Namespace:\t{}\n", s(d, "/metadata/namespace")));
    w.write(
        0,
        &format!(
            "CreationTimestamp:\t{}\n",
            rfc1123z(s(d, "/metadata/creationTimestamp"))
        ),
    );
    labels_multiline(&mut w, "", "Labels", obj(d, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(d, "/metadata/annotations"));
    let selector = d
        .pointer("/spec/selector")
        .map(selector_string)
        .unwrap_or_default();
    w.write(0, &format!("Selector:\t{selector}\n"));
    w.write(
        0,
        &format!(
            "Replicas:\t{} desired | {} updated | {} total | {} available | {} unavailable\n",
            int(d, "/spec/replicas"),
            int(d, "/status/updatedReplicas"),
            int(d, "/status/replicas"),
            int(d, "/status/availableReplicas"),
            int(d, "/status/unavailableReplicas")
        ),
    );
    w.write(
        0,
        &format!("StrategyType:\t{}\n", s(d, "/spec/strategy/type")),
    );
    w.write(
        0,
        &format!("MinReadySeconds:\t{}\n", int(d, "/spec/minReadySeconds")),
    );
    if let Some(ru) = d
        .pointer("/spec/strategy/rollingUpdate")
        .filter(|v| v.is_object())
    {
        w.write(
            0,
            &format!(
                "RollingUpdateStrategy:\t{} max unavailable, {} max surge\n",
                int_or_string(ru.get("maxUnavailable")),
                int_or_string(ru.get("maxSurge"))
            ),
        );
    }
    describe_template(&mut w, d.pointer("/spec/template"));
    conditions(&mut w, d);
    if let Some(owned) = owned {
        let split = split(d, owned);
        if !split.old.is_empty() || split.new.is_some() {
            w.write(
                0,
                &format!("OldReplicaSets:\t{}\n", replica_sets_line(&split.old)),
            );
            let new: Vec<&Value> = split.new.into_iter().collect();
            w.write(0, &format!("NewReplicaSet:\t{}\n", replica_sets_line(&new)));
        }
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `intstr.String()` (an unset value is Go's zero, `0`).
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "0".to_owned(),
        Some(v) => scalar(Some(v)),
    }
}

/// Pod phases counted as upstream's `getPodStatusForController`.
#[derive(Debug, Default)]
pub struct PodPhases {
    pub running: usize,
    pub waiting: usize,
    pub succeeded: usize,
    pub failed: usize,
}

/// Counts the phases of the pods controlled by `uid`.
pub fn count_phases(pods: &[Value], uid: &str) -> PodPhases {
    let mut phases = PodPhases::default();
    for pod in pods {
        let controlled = arr(pod, "/metadata/ownerReferences").iter().any(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true) && s(r, "/uid") == uid
        });
        if !controlled {
            continue;
        }
        match s(pod, "/status/phase") {
            "Running" => phases.running += 1,
            "Pending" => phases.waiting += 1,
            "Succeeded" => phases.succeeded += 1,
            "Failed" => phases.failed += 1,
            _ => {}
        }
    }
    phases
}

/// `describeReplicaSet`; `phases` is the pod listing's result or its error text.
pub fn replica_set(
    rs: &Value,
    phases: Result<PodPhases, String>,
    events: Option<&[Value]>,
) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(rs, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(rs, "/metadata/namespace")),
    );
    let selector = rs
        .pointer("/spec/selector")
        .map(format_label_selector)
        .unwrap_or_else(|| "<none>".to_owned());
    w.write(0, &format!("Selector:\t{selector}\n"));
    labels_multiline(&mut w, "", "Labels", obj(rs, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(rs, "/metadata/annotations"));
    if let Some(by) = controlled_by(rs) {
        w.write(0, &format!("Controlled By:\t{by}\n"));
    }
    w.write(
        0,
        &format!(
            "Replicas:\t{} current / {} desired\n",
            int(rs, "/status/replicas"),
            int(rs, "/spec/replicas")
        ),
    );
    w.write(0, "Pods Status:\t");
    match phases {
        Ok(p) => w.write(
            0,
            &format!(
                "{} Running / {} Waiting / {} Succeeded / {} Failed\n",
                p.running, p.waiting, p.succeeded, p.failed
            ),
        ),
        Err(err) => w.write(0, &format!("error in fetching pods: {err}\n")),
    }
    describe_template(&mut w, rs.pointer("/spec/template"));
    conditions(&mut w, rs);
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}
