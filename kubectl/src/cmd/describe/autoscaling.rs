//! `describeHorizontalPodAutoscalerV2`: the metrics as `current / target` lines (each
//! spec metric paired with the status metric at the same index), replicas, behavior and
//! conditions.

use super::events;
use super::quantity::Sum;
use super::writer::{
    PrefixWriter, annotations_multiline, arr, int, labels_multiline, obj, rfc1123z, s,
};
use serde_json::Value;

/// `Quantity.String()` of the quantity at `pointer` (Go's zero quantity, `0`, when unset).
fn quantity(v: Option<&Value>, pointer: &str) -> String {
    let mut sum = Sum::default();
    if let Some(text) = v.and_then(|v| v.pointer(pointer)).and_then(Value::as_str) {
        sum.add(text);
    }
    sum.canonical()
}

/// `describeHorizontalPodAutoscalerV2`.
pub fn describe(hpa: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(hpa, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(hpa, "/metadata/namespace")),
    );
    labels_multiline(&mut w, "", "Labels", obj(hpa, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(hpa, "/metadata/annotations"));
    w.write(
        0,
        &format!(
            "CreationTimestamp:\t{}\n",
            rfc1123z(s(hpa, "/metadata/creationTimestamp"))
        ),
    );
    let kind = s(hpa, "/spec/scaleTargetRef/kind");
    w.write(
        0,
        &format!(
            "Reference:\t{kind}/{}\n",
            s(hpa, "/spec/scaleTargetRef/name")
        ),
    );
    w.write(0, "Metrics:\t( current / target )\n");
    let current = arr(hpa, "/status/currentMetrics");
    for (i, metric) in arr(hpa, "/spec/metrics").iter().enumerate() {
        metric_line(&mut w, metric, current.get(i));
    }
    let min = match hpa.pointer("/spec/minReplicas").and_then(Value::as_i64) {
        Some(n) => n.to_string(),
        None => "<unset>".to_owned(),
    };
    w.write(0, &format!("Min replicas:\t{min}\n"));
    w.write(
        0,
        &format!("Max replicas:\t{}\n", int(hpa, "/spec/maxReplicas")),
    );
    if let Some(behavior) = hpa.pointer("/spec/behavior").filter(|v| v.is_object()) {
        w.write(0, "Behavior:\n");
        direction(&mut w, "Scale Up", behavior.get("scaleUp"));
        direction(&mut w, "Scale Down", behavior.get("scaleDown"));
    }
    w.write(0, &format!("{kind} pods:\t"));
    w.write(
        0,
        &format!(
            "{} current / {} desired\n",
            int(hpa, "/status/currentReplicas"),
            int(hpa, "/status/desiredReplicas")
        ),
    );
    let conditions = arr(hpa, "/status/conditions");
    if !conditions.is_empty() {
        w.write(0, "Conditions:\n");
        w.write(1, "Type\tStatus\tReason\tMessage\n");
        w.write(1, "----\t------\t------\t-------\n");
        for c in conditions {
            w.write(
                1,
                &format!(
                    "{}\t{}\t{}\t{}\n",
                    s(c, "/type"),
                    s(c, "/status"),
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

/// One metric's line; `status` is the status metric at the same index, used only when it is
/// of the same source.
fn metric_line(w: &mut PrefixWriter, metric: &Value, status: Option<&Value>) {
    let unknown = || "<unknown>".to_owned();
    let ty = s(metric, "/type");
    // The status metric's source object (`resource`, `pods`, ...), when it has one.
    let source = |field: &str| status.and_then(|c| c.get(field)).filter(|v| v.is_object());
    match ty {
        "External" => {
            let name = s(metric, "/external/metric/name");
            let current = source("external");
            if metric.pointer("/external/target/averageValue").is_some() {
                let now =
                    current.map_or_else(unknown, |c| quantity(Some(c), "/current/averageValue"));
                let target = quantity(Some(metric), "/external/target/averageValue");
                w.write(
                    1,
                    &format!("{name:?} (target average value):\t{now} / {target}\n"),
                );
            } else {
                let now = current.map_or_else(unknown, |c| quantity(Some(c), "/current/value"));
                let target = quantity(Some(metric), "/external/target/value");
                w.write(1, &format!("{name:?} (target value):\t{now} / {target}\n"));
            }
        }
        "Pods" => {
            let name = s(metric, "/pods/metric/name");
            let now =
                source("pods").map_or_else(unknown, |c| quantity(Some(c), "/current/averageValue"));
            let target = quantity(Some(metric), "/pods/target/averageValue");
            w.write(1, &format!("{name:?} on pods:\t{now} / {target}\n"));
        }
        "Object" => {
            w.write(
                1,
                &format!(
                    "\"{}\" on {}/{} ",
                    s(metric, "/object/metric/name"),
                    s(metric, "/object/describedObject/kind"),
                    s(metric, "/object/describedObject/name")
                ),
            );
            let current = source("object");
            if s(metric, "/object/target/type") == "AverageValue" {
                let now =
                    current.map_or_else(unknown, |c| quantity(Some(c), "/current/averageValue"));
                let target = quantity(Some(metric), "/object/target/averageValue");
                w.write(0, &format!("(target average value):\t{now} / {target}\n"));
            } else {
                let now = current.map_or_else(unknown, |c| quantity(Some(c), "/current/value"));
                let target = quantity(Some(metric), "/object/target/value");
                w.write(0, &format!("(target value):\t{now} / {target}\n"));
            }
        }
        "Resource" | "ContainerResource" => {
            let field = if ty == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let spec = metric.get(field);
            let name = spec.map(|v| s(v, "/name")).unwrap_or("");
            if ty == "Resource" {
                w.write(1, &format!("resource {name} on pods"));
            } else {
                let container = spec.map(|v| s(v, "/container")).unwrap_or("");
                w.write(
                    1,
                    &format!("resource {name} of container \"{container}\" on pods"),
                );
            }
            let current = source(field);
            if spec
                .and_then(|v| v.pointer("/target/averageValue"))
                .is_some()
            {
                let now =
                    current.map_or_else(unknown, |c| quantity(Some(c), "/current/averageValue"));
                let target = quantity(spec, "/target/averageValue");
                w.write(0, &format!(":\t{now} / {target}\n"));
            } else {
                let now = current
                    .filter(|c| c.pointer("/current/averageUtilization").is_some())
                    .map_or_else(unknown, |c| {
                        format!(
                            "{}% ({})",
                            int(c, "/current/averageUtilization"),
                            quantity(Some(c), "/current/averageValue")
                        )
                    });
                let target = spec
                    .and_then(|v| v.pointer("/target/averageUtilization"))
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                w.write(
                    1,
                    &format!("(as a percentage of request):\t{now} / {target}\n"),
                );
            }
        }
        other => w.write(1, &format!("<unknown metric type {other:?}>\n")),
    }
}

/// `printDirectionBehavior`: nothing for an unset direction.
fn direction(w: &mut PrefixWriter, title: &str, rules: Option<&Value>) {
    let Some(rules) = rules.filter(|v| v.is_object()) else {
        return;
    };
    w.write(1, &format!("{title}:\n"));
    if let Some(window) = rules
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
    {
        w.write(2, &format!("Stabilization Window: {window} seconds\n"));
    }
    let policies = arr(rules, "/policies");
    if !policies.is_empty() {
        let select = rules
            .get("selectPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Max");
        w.write(2, &format!("Select Policy: {select}\n"));
        w.write(2, "Policies:\n");
        for p in policies {
            w.write(
                3,
                &format!(
                    "- Type: {}\tValue: {}\tPeriod: {} seconds\n",
                    s(p, "/type"),
                    int(p, "/value"),
                    int(p, "/periodSeconds")
                ),
            );
        }
    }
}
