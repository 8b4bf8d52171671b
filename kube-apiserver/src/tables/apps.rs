//! Workloads: deployments, replicasets, statefulsets, daemonsets, replicationcontrollers, jobs,
//! cronjobs.

use jiff::Timestamp;
use serde_json::Value;

use super::columns::{AGE, CONTAINERS, Column, IMAGES, NAME, SELECTOR, col};
use super::format::{
    age, bool_text, containers_and_images, count, format_label_selector, format_labels,
    human_duration, int, list, since, text, timestamp,
};
use super::{Printer, Row, RowFn};

const DEPLOYMENT: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    col(
        "Available",
        "string",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const REPLICA_SET: &[Column] = &[
    NAME,
    col("Desired", "integer", "Number of desired pods."),
    col("Current", "integer", "Number of actual replicas."),
    col("Ready", "integer", "The number of ready replicas."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const STATEFUL_SET: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

const DAEMON_SET: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod.",
    ),
    col(
        "Current",
        "integer",
        "The number of nodes that are running at least one daemon pod and are supposed to.",
    ),
    col(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of it running and ready.",
    ),
    col(
        "Up-to-date",
        "integer",
        "The total number of nodes that are running updated daemon pod.",
    ),
    col(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of it running and available.",
    ),
    col(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const JOB: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col(
        "Completions",
        "string",
        "The desired number of successfully finished pods the job should be run with.",
    ),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const CRON_JOB: &[Column] = &[
    NAME,
    col("Schedule", "string", "The schedule in Cron format."),
    col(
        "Timezone",
        "string",
        "The time zone name for the given schedule.",
    ),
    col(
        "Suspend",
        "boolean",
        "Whether subsequent executions are suspended.",
    ),
    col("Active", "integer", "The number of currently running jobs."),
    col(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    let (columns, row): (&'static [Column], RowFn) = match (group, resource) {
        ("apps", "deployments") => (DEPLOYMENT, deployment),
        ("apps", "replicasets") => (REPLICA_SET, replica_set),
        ("", "replicationcontrollers") => (REPLICA_SET, replication_controller),
        ("apps", "statefulsets") => (STATEFUL_SET, stateful_set),
        ("apps", "daemonsets") => (DAEMON_SET, daemon_set),
        ("batch", "jobs") => (JOB, job),
        ("batch", "cronjobs") => (CRON_JOB, cron_job),
        _ => return None,
    };
    Some(Printer { columns, row })
}

/// `spec.replicas`, which defaulting sets to 1 when absent.
fn desired(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn name(obj: &Value) -> Value {
    text(obj, "/metadata/name").into()
}

fn template_cells(obj: &Value, template: &str) -> (Value, Value) {
    containers_and_images(list(obj, &format!("{template}/spec/containers")))
}

fn deployment(d: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_cells(d, "/spec/template");
    vec![
        name(d),
        format!("{}/{}", int(d, "/status/readyReplicas"), desired(d)).into(),
        int(d, "/status/updatedReplicas").into(),
        int(d, "/status/availableReplicas").into(),
        age(d, now),
        containers,
        images,
        format_label_selector(d.pointer("/spec/selector")).into(),
    ]
    .into()
}

fn replica_set(rs: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_cells(rs, "/spec/template");
    vec![
        name(rs),
        desired(rs).into(),
        int(rs, "/status/replicas").into(),
        int(rs, "/status/readyReplicas").into(),
        age(rs, now),
        containers,
        images,
        format_label_selector(rs.pointer("/spec/selector")).into(),
    ]
    .into()
}

fn replication_controller(rc: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_cells(rc, "/spec/template");
    vec![
        name(rc),
        desired(rc).into(),
        int(rc, "/status/replicas").into(),
        int(rc, "/status/readyReplicas").into(),
        age(rc, now),
        containers,
        images,
        format_labels(rc.pointer("/spec/selector")).into(),
    ]
    .into()
}

fn stateful_set(ss: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_cells(ss, "/spec/template");
    vec![
        name(ss),
        format!("{}/{}", int(ss, "/status/readyReplicas"), desired(ss)).into(),
        age(ss, now),
        containers,
        images,
    ]
    .into()
}

fn daemon_set(ds: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_cells(ds, "/spec/template");
    vec![
        name(ds),
        int(ds, "/status/desiredNumberScheduled").into(),
        int(ds, "/status/currentNumberScheduled").into(),
        int(ds, "/status/numberReady").into(),
        int(ds, "/status/updatedNumberScheduled").into(),
        int(ds, "/status/numberAvailable").into(),
        format_labels(ds.pointer("/spec/template/spec/nodeSelector")).into(),
        age(ds, now),
        containers,
        images,
        format_label_selector(ds.pointer("/spec/selector")).into(),
    ]
    .into()
}

fn has_condition(obj: &Value, ty: &str) -> bool {
    list(obj, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == ty && text(c, "/status") == "True")
}

/// Upstream's job STATUS: finished states first, then Terminating, Suspended, the
/// pre-finish conditions, else Running.
fn job_status(job: &Value) -> &'static str {
    if has_condition(job, "Complete") {
        "Complete"
    } else if has_condition(job, "Failed") {
        "Failed"
    } else if job
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        "Terminating"
    } else if has_condition(job, "Suspended") {
        "Suspended"
    } else if has_condition(job, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(job, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

fn job(job: &Value, now: Timestamp) -> Row {
    let succeeded = int(job, "/status/succeeded");
    let completions = match job.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match job.pointer("/spec/parallelism").and_then(Value::as_i64) {
            Some(p) if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = timestamp(text(job, "/status/startTime"));
    let end = timestamp(text(job, "/status/completionTime")).unwrap_or(now);
    let duration = start.map_or(String::new(), |s| {
        human_duration(end.as_second() - s.as_second())
    });
    let (containers, images) = template_cells(job, "/spec/template");
    vec![
        name(job),
        job_status(job).into(),
        completions.into(),
        duration.into(),
        age(job, now),
        containers,
        images,
        format_label_selector(job.pointer("/spec/selector")).into(),
    ]
    .into()
}

fn cron_job(cj: &Value, now: Timestamp) -> Row {
    let last = text(cj, "/status/lastScheduleTime");
    let last_cell = if last.is_empty() {
        "<none>".to_string()
    } else {
        since(last, now)
    };
    let (containers, images) = template_cells(cj, "/spec/jobTemplate/spec/template");
    let timezone = text(cj, "/spec/timeZone");
    vec![
        name(cj),
        text(cj, "/spec/schedule").into(),
        if timezone.is_empty() {
            "<none>"
        } else {
            timezone
        }
        .into(),
        bool_text(cj.pointer("/spec/suspend"), "<unset>").into(),
        count(cj, "/status/active").into(),
        last_cell.into(),
        age(cj, now),
        containers,
        images,
        format_label_selector(cj.pointer("/spec/jobTemplate/spec/selector")).into(),
    ]
    .into()
}
