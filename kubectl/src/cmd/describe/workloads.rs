//! The other workload kinds: Job, CronJob, DaemonSet and StatefulSet (the pod template, the
//! phases of their pods, their events), and the PodDisruptionBudget and PriorityClass that
//! govern them.

use super::apps::PodPhases;
use super::core::format_labels;
use super::events;
use super::pod::{controlled_by, describe_template, format_label_selector, selector_string};
use super::writer::{
    PrefixWriter, annotations_multiline, arr, boolean, int, labels_multiline, obj, parse_time,
    rfc1123z, s, scalar,
};
use serde_json::Value;

fn phases_line(p: &PodPhases) -> String {
    format!(
        "{} Running / {} Waiting / {} Succeeded / {} Failed",
        p.running, p.waiting, p.succeeded, p.failed
    )
}

fn opt_int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

/// `describeJob`.
pub fn job(job: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(job, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(job, "/metadata/namespace")),
    );
    let selector = job
        .pointer("/spec/selector")
        .map(selector_string)
        .unwrap_or_default();
    w.write(0, &format!("Selector:\t{selector}\n"));
    labels_multiline(&mut w, "", "Labels", obj(job, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(job, "/metadata/annotations"));
    if let Some(by) = controlled_by(job) {
        w.write(0, &format!("Controlled By:\t{by}\n"));
    }
    if let Some(p) = opt_int(job, "/spec/parallelism") {
        w.write(0, &format!("Parallelism:\t{p}\n"));
    }
    match opt_int(job, "/spec/completions") {
        Some(c) => w.write(0, &format!("Completions:\t{c}\n")),
        None => w.write(0, "Completions:\t<unset>\n"),
    }
    let mode = s(job, "/spec/completionMode");
    if !mode.is_empty() {
        w.write(0, &format!("Completion Mode:\t{mode}\n"));
    }
    if let Some(suspend) = job.pointer("/spec/suspend").and_then(Value::as_bool) {
        w.write(0, &format!("Suspend:\t{suspend}\n"));
    }
    if let Some(b) = opt_int(job, "/spec/backoffLimit") {
        w.write(0, &format!("Backoff Limit:\t{b}\n"));
    }
    if let Some(t) = opt_int(job, "/spec/ttlSecondsAfterFinished") {
        w.write(0, &format!("TTL Seconds After Finished:\t{t}\n"));
    }
    let (start, end) = (
        s(job, "/status/startTime"),
        s(job, "/status/completionTime"),
    );
    if !start.is_empty() {
        w.write(0, &format!("Start Time:\t{}\n", rfc1123z(start)));
    }
    if !end.is_empty() {
        w.write(0, &format!("Completed At:\t{}\n", rfc1123z(end)));
    }
    if let (Some(a), Some(b)) = (parse_time(start), parse_time(end)) {
        w.write(
            0,
            &format!("Duration:\t{}\n", super::writer::human_duration(b - a)),
        );
    }
    if let Some(d) = opt_int(job, "/spec/activeDeadlineSeconds") {
        w.write(0, &format!("Active Deadline Seconds:\t{d}s\n"));
    }
    let (active, succeeded, failed) = (
        int(job, "/status/active"),
        int(job, "/status/succeeded"),
        int(job, "/status/failed"),
    );
    match opt_int(job, "/status/ready") {
        Some(ready) => w.write(
            0,
            &format!("Pods Statuses:\t{active} Active ({ready} Ready) / {succeeded} Succeeded / {failed} Failed\n"),
        ),
        None => w.write(
            0,
            &format!("Pods Statuses:\t{active} Active / {succeeded} Succeeded / {failed} Failed\n"),
        ),
    }
    if mode == "Indexed" {
        let done = s(job, "/status/completedIndexes");
        w.write(
            0,
            &format!("Completed Indexes:\t{}\n", cap_indexes(done, 50)),
        );
    }
    describe_template(&mut w, job.pointer("/spec/template"));
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `capIndexesListOrNone`.
fn cap_indexes(indexes: &str, soft_limit: usize) -> String {
    if indexes.is_empty() {
        return "<none>".to_owned();
    }
    let bytes = indexes.as_bytes();
    let mut ix = soft_limit;
    while ix < bytes.len() && bytes[ix] != b',' {
        ix += 1;
    }
    if ix >= bytes.len() {
        indexes.to_owned()
    } else {
        format!("{}...", &indexes[..=ix])
    }
}

/// `describeCronJob`.
pub fn cron_job(cj: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(cj, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(cj, "/metadata/namespace")),
    );
    labels_multiline(&mut w, "", "Labels", obj(cj, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(cj, "/metadata/annotations"));
    w.write(0, &format!("Schedule:\t{}\n", s(cj, "/spec/schedule")));
    w.write(
        0,
        &format!(
            "Concurrency Policy:\t{}\n",
            s(cj, "/spec/concurrencyPolicy")
        ),
    );
    let suspend = match cj.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    w.write(0, &format!("Suspend:\t{suspend}\n"));
    let or_unset = |v: Option<String>| v.unwrap_or_else(|| "<unset>".to_owned());
    // kubectl 1.33 has no `Time Zone` line (later ones add it).
    for (field, title) in [
        (
            "/spec/successfulJobsHistoryLimit",
            "Successful Job History Limit",
        ),
        ("/spec/failedJobsHistoryLimit", "Failed Job History Limit"),
    ] {
        let v = opt_int(cj, field).map(|n| n.to_string());
        w.write(0, &format!("{title}:\t{}\n", or_unset(v)));
    }
    let deadline = opt_int(cj, "/spec/startingDeadlineSeconds").map(|n| format!("{n}s"));
    w.write(
        0,
        &format!("Starting Deadline Seconds:\t{}\n", or_unset(deadline)),
    );
    let spec = cj
        .pointer("/spec/jobTemplate/spec")
        .cloned()
        .unwrap_or(Value::Null);
    match spec.get("selector").filter(|v| v.is_object()) {
        Some(sel) => w.write(0, &format!("Selector:\t{}\n", selector_string(sel))),
        None => w.write(0, "Selector:\t<unset>\n"),
    }
    for (field, title) in [
        ("/parallelism", "Parallelism"),
        ("/completions", "Completions"),
    ] {
        let v = opt_int(&spec, field).map(|n| n.to_string());
        w.write(0, &format!("{title}:\t{}\n", or_unset(v)));
    }
    if let Some(d) = opt_int(&spec, "/activeDeadlineSeconds") {
        w.write(0, &format!("Active Deadline Seconds:\t{d}s\n"));
    }
    describe_template(&mut w, spec.get("template"));
    let last = s(cj, "/status/lastScheduleTime");
    let last = if last.is_empty() {
        "<unset>".to_owned()
    } else {
        rfc1123z(last)
    };
    w.write(0, &format!("Last Schedule Time:\t{last}\n"));
    w.write(0, "Active Jobs:\t");
    let active: Vec<&str> = arr(cj, "/status/active")
        .iter()
        .map(|j| s(j, "/name"))
        .collect();
    if active.is_empty() {
        w.line("<none>");
    } else {
        w.line(&active.join(", "));
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `describeDaemonSet`.
pub fn daemon_set(ds: &Value, phases: &PodPhases, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(ds, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(ds, "/metadata/namespace")),
    );
    let selector = ds
        .pointer("/spec/selector")
        .map(selector_string)
        .unwrap_or_default();
    w.write(0, &format!("Selector:\t{selector}\n"));
    let node_selector = obj(ds, "/spec/template/spec/nodeSelector");
    w.write(
        0,
        &format!("Node-Selector:\t{}\n", format_labels(node_selector)),
    );
    labels_multiline(&mut w, "", "Labels", obj(ds, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(ds, "/metadata/annotations"));
    for (field, title) in [
        (
            "desiredNumberScheduled",
            "Desired Number of Nodes Scheduled",
        ),
        (
            "currentNumberScheduled",
            "Current Number of Nodes Scheduled",
        ),
        (
            "updatedNumberScheduled",
            "Number of Nodes Scheduled with Up-to-date Pods",
        ),
        (
            "numberAvailable",
            "Number of Nodes Scheduled with Available Pods",
        ),
        ("numberMisscheduled", "Number of Nodes Misscheduled"),
    ] {
        w.write(
            0,
            &format!("{title}: {}\n", int(ds, &format!("/status/{field}"))),
        );
    }
    w.write(0, &format!("Pods Status:\t{}\n", phases_line(phases)));
    describe_template(&mut w, ds.pointer("/spec/template"));
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `describeStatefulSet`.
pub fn stateful_set(ss: &Value, phases: &PodPhases, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(ss, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(ss, "/metadata/namespace")),
    );
    w.write(
        0,
        &format!(
            "CreationTimestamp:\t{}\n",
            rfc1123z(s(ss, "/metadata/creationTimestamp"))
        ),
    );
    let selector = ss
        .pointer("/spec/selector")
        .map(selector_string)
        .unwrap_or_default();
    w.write(0, &format!("Selector:\t{selector}\n"));
    labels_multiline(&mut w, "", "Labels", obj(ss, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(ss, "/metadata/annotations"));
    w.write(
        0,
        &format!(
            "Replicas:\t{} desired | {} total\n",
            int(ss, "/spec/replicas"),
            int(ss, "/status/replicas")
        ),
    );
    w.write(
        0,
        &format!("Update Strategy:\t{}\n", s(ss, "/spec/updateStrategy/type")),
    );
    if let Some(p) = opt_int(ss, "/spec/updateStrategy/rollingUpdate/partition") {
        w.write(1, &format!("Partition:\t{p}\n"));
        if let Some(m) = ss.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable") {
            w.write(1, &format!("MaxUnavailable:\t{}\n", scalar(Some(m))));
        }
    }
    w.write(0, &format!("Pods Status:\t{}\n", phases_line(phases)));
    describe_template(&mut w, ss.pointer("/spec/template"));
    let claims = arr(ss, "/spec/volumeClaimTemplates");
    if claims.is_empty() {
        w.write(0, "Volume Claims:\t<none>\n");
    } else {
        w.write(0, "Volume Claims:\n");
        for pvc in claims {
            w.write(1, &format!("Name:\t{}\n", s(pvc, "/metadata/name")));
            let mut class = s(pvc, "/spec/storageClassName");
            if pvc.pointer("/spec/storageClassName").is_none() {
                class = s(
                    pvc,
                    "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
                );
            }
            w.write(1, &format!("StorageClass:\t{class}\n"));
            labels_multiline(&mut w, "  ", "Labels", obj(pvc, "/metadata/labels"));
            labels_multiline(
                &mut w,
                "  ",
                "Annotations",
                obj(pvc, "/metadata/annotations"),
            );
            let capacity = pvc
                .pointer("/spec/resources/requests/storage")
                .map(|v| scalar(Some(v)))
                .unwrap_or_else(|| "<default>".to_owned());
            w.write(1, &format!("Capacity:\t{capacity}\n"));
            let modes: Vec<String> = arr(pvc, "/spec/accessModes")
                .iter()
                .map(|v| scalar(Some(v)))
                .collect();
            w.write(1, &format!("Access Modes:\t[{}]\n", modes.join(" ")));
        }
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `describePodDisruptionBudgetV1`.
pub fn pod_disruption_budget(pdb: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(pdb, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(pdb, "/metadata/namespace")),
    );
    if let Some(m) = pdb.pointer("/spec/minAvailable") {
        w.write(0, &format!("Min available:\t{}\n", scalar(Some(m))));
    } else if let Some(m) = pdb.pointer("/spec/maxUnavailable") {
        w.write(0, &format!("Max unavailable:\t{}\n", scalar(Some(m))));
    }
    match pdb.pointer("/spec/selector").filter(|v| v.is_object()) {
        Some(sel) => w.write(0, &format!("Selector:\t{}\n", format_label_selector(sel))),
        None => w.write(0, "Selector:\t<unset>\n"),
    }
    w.write(0, "Status:\n");
    for (field, title) in [
        ("disruptionsAllowed", "Allowed disruptions"),
        ("currentHealthy", "Current"),
        ("desiredHealthy", "Desired"),
        ("expectedPods", "Total"),
    ] {
        w.write(
            2,
            &format!("{title}:\t{}\n", int(pdb, &format!("/status/{field}"))),
        );
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `describePriorityClass`.
pub fn priority_class(pc: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(pc, "/metadata/name")));
    w.write(0, &format!("Value:\t{}\n", int(pc, "/value")));
    w.write(
        0,
        &format!("GlobalDefault:\t{}\n", boolean(pc, "/globalDefault")),
    );
    w.write(
        0,
        &format!("PreemptionPolicy:\t{}\n", s(pc, "/preemptionPolicy")),
    );
    w.write(0, &format!("Description:\t{}\n", s(pc, "/description")));
    w.write(
        0,
        &format!(
            "Annotations:\t{}\n",
            format_labels(obj(pc, "/metadata/annotations"))
        ),
    );
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}
