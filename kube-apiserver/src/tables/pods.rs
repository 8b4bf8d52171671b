//! Pods: NAME READY STATUS RESTARTS AGE, wide IP NODE NOMINATED NODE READINESS GATES, with
//! upstream's STATUS reasoning (init progress, waiting/terminated reasons, Terminating, ...).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::columns::{AGE, Column, NAME, col, wide};
use super::format::{age, human_duration, int, list, or, text, timestamp};
use super::{Printer, Row};

const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    wide("IP", "string", "IP address allocated to the pod."),
    wide("Node", "string", "The node the pod is scheduled to."),
    wide(
        "Nominated Node",
        "string",
        "The node the scheduler nominated for preemption.",
    ),
    wide(
        "Readiness Gates",
        "string",
        "Pod readiness gates that are true, of all gates.",
    ),
];

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    (group.is_empty() && resource == "pods").then_some(Printer {
        columns: COLUMNS,
        row: pod_row,
    })
}

/// The restart count and the latest `lastState.terminated.finishedAt` of some containers.
#[derive(Default)]
struct Restarts {
    count: i64,
    last: Option<Timestamp>,
}

impl Restarts {
    fn add(&mut self, status: &Value) {
        self.count += int(status, "/restartCount");
        if let Some(finished) = timestamp(text(status, "/lastState/terminated/finishedAt")) {
            self.last = Some(self.last.map_or(finished, |l| l.max(finished)));
        }
    }
}

fn pod_row(pod: &Value, now: Timestamp) -> Row {
    let init_specs = list(pod, "/spec/initContainers");
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| text(c, "/name") == name && text(c, "/restartPolicy") == "Always")
    };
    let total = list(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| text(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0usize;

    let phase = text(pod, "/status/phase");
    let mut reason = or(text(pod, "/status/reason"), phase).to_string();
    let conditions = list(pod, "/status/conditions");
    if conditions
        .iter()
        .any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let mut all = Restarts::default();
    let mut sidecars = Restarts::default();
    let mut initializing = false;
    let init_statuses = list(pod, "/status/initContainerStatuses");
    for (i, status) in init_statuses.iter().enumerate() {
        all.add(status);
        let is_sidecar = sidecar(text(status, "/name"));
        if is_sidecar {
            sidecars.add(status);
        }
        let terminated = status.pointer("/state/terminated");
        let waiting_reason = text(status, "/state/waiting/reason");
        if terminated.is_some() && int(status, "/state/terminated/exitCode") == 0 {
            continue;
        }
        if is_sidecar && status.get("started").and_then(Value::as_bool) == Some(true) {
            if status.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match text(t, "/reason") {
                "" if int(t, "/signal") != 0 => format!("Init:Signal:{}", int(t, "/signal")),
                "" => format!("Init:ExitCode:{}", int(t, "/exitCode")),
                r => format!("Init:{r}"),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .any(|c| text(c, "/type") == "Initialized" && text(c, "/status") == "True");
    let mut restarts = all;
    if !initializing || initialized {
        // Once initialized, only sidecar restarts count among the init containers.
        restarts = sidecars;
        let mut has_running = false;
        for status in list(pod, "/status/containerStatuses").iter().rev() {
            restarts.add(status);
            let waiting = text(status, "/state/waiting/reason");
            let terminated = status.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = match text(t, "/reason") {
                    "" if int(t, "/signal") != 0 => format!("Signal:{}", int(t, "/signal")),
                    "" => format!("ExitCode:{}", int(t, "/exitCode")),
                    r => r.to_string(),
                };
            } else if status.get("ready").and_then(Value::as_bool) == Some(true)
                && status.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if deleting && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_cell = match restarts.last {
        Some(last) if restarts.count != 0 => format!(
            "{} ({} ago)",
            restarts.count,
            human_duration(now.as_second() - last.as_second())
        ),
        _ => restarts.count.to_string(),
    };

    let pod_ip = list(pod, "/status/podIPs")
        .first()
        .map_or("", |ip| text(ip, "/ip"));
    let gates = list(pod, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_gates = gates
            .iter()
            .filter(|g| {
                let gate = text(g, "/conditionType");
                conditions
                    .iter()
                    .find(|c| text(c, "/type") == gate)
                    .is_some_and(|c| text(c, "/status") == "True")
            })
            .count();
        format!("{true_gates}/{}", gates.len())
    };

    Row {
        cells: vec![
            text(pod, "/metadata/name").into(),
            format!("{ready}/{total}").into(),
            reason.into(),
            restarts_cell.into(),
            age(pod, now),
            or(pod_ip, "<none>").into(),
            or(text(pod, "/spec/nodeName"), "<none>").into(),
            or(text(pod, "/status/nominatedNodeName"), "<none>").into(),
            gates_cell.into(),
        ],
        conditions: completed_condition(phase),
    }
}

/// Upstream marks finished pods with a `Completed` row condition.
fn completed_condition(phase: &str) -> Option<Value> {
    let (reason, message) = match phase {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}
