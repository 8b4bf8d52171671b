//! The apiserver's own kinds: componentstatuses and the API Priority and Fairness
//! configuration (flowschemas, prioritylevelconfigurations), with upstream's columns.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::columns::{AGE, Column, NAME, col};
use super::format::{age, text};
use super::{Printer, Row, RowFn};

const COMPONENT_STATUS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the component conditions"),
    col("Message", "string", "Message of the component conditions"),
    col("Error", "string", "Error of the component conditions"),
];

const FLOW_SCHEMA: &[Column] = &[
    NAME,
    col(
        "PriorityLevel",
        "string",
        "`name` is the name of the priority level configuration being referenced Required.",
    ),
    col(
        "MatchingPrecedence",
        "string",
        "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.",
    ),
    col(
        "DistinguisherMethod",
        "string",
        "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
    ),
    AGE,
    col(
        "MissingPL",
        "string",
        "references a broken or non-existent PriorityLevelConfiguration",
    ),
];

const PRIORITY_LEVEL: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.",
    ),
    col(
        "NominalConcurrencyShares",
        "string",
        "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level.",
    ),
    col(
        "Queues",
        "string",
        "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.",
    ),
    col(
        "HandSize",
        "string",
        "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.",
    ),
    col(
        "QueueLengthLimit",
        "string",
        "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.",
    ),
    AGE,
];

/// The printer of one of these resources.
pub(crate) fn printer(group: &str, resource: &str) -> Option<Printer> {
    let (columns, row): (&'static [Column], RowFn) = match (group, resource) {
        ("", "componentstatuses") => (COMPONENT_STATUS, component_status_row),
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => (FLOW_SCHEMA, flow_schema_row),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => {
            (PRIORITY_LEVEL, priority_level_row)
        }
        _ => return None,
    };
    Some(Printer { columns, row })
}

/// Healthy when the `Healthy` condition is `True`, Unhealthy for any other status, Unknown
/// without the condition.
fn component_status_row(obj: &Value, _now: Timestamp) -> Row {
    let healthy = obj["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if c["status"] == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            c["message"].as_str().unwrap_or_default(),
            c["error"].as_str().unwrap_or_default(),
        ),
        None => ("Unknown", "", ""),
    };
    vec![
        json!(text(obj, "/metadata/name")),
        json!(status),
        json!(message),
        json!(error),
    ]
    .into()
}

/// MISSINGPL is the `Dangling` condition's status, `?` until something has set it.
fn flow_schema_row(obj: &Value, now: Timestamp) -> Row {
    let spec = &obj["spec"];
    let method = spec["distinguisherMethod"]["type"]
        .as_str()
        .unwrap_or("<none>");
    let missing = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Dangling")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("?");
    vec![
        json!(text(obj, "/metadata/name")),
        spec["priorityLevelConfiguration"]["name"].clone(),
        json!(spec["matchingPrecedence"].as_i64().unwrap_or(0)),
        json!(method),
        age(obj, now),
        json!(missing),
    ]
    .into()
}

/// Only limited levels have shares and queues; exempt ones show `<none>`.
fn priority_level_row(obj: &Value, now: Timestamp) -> Row {
    let spec = &obj["spec"];
    let none = || json!("<none>");
    let limited = spec.get("limited").filter(|l| l.is_object());
    let shares = limited
        .map(|l| json!(l["nominalConcurrencyShares"].as_i64().unwrap_or(0)))
        .unwrap_or_else(none);
    let queuing = limited
        .map(|l| &l["limitResponse"]["queuing"])
        .filter(|q| q.is_object());
    let field = |name: &str| {
        queuing
            .map(|q| json!(q[name].as_i64().unwrap_or(0)))
            .unwrap_or_else(none)
    };
    vec![
        json!(text(obj, "/metadata/name")),
        spec["type"].clone(),
        shares,
        field("queues"),
        field("handSize"),
        field("queueLengthLimit"),
        age(obj, now),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(group: &str, resource: &str, obj: Value) -> Vec<Value> {
        let printer = printer(group, resource).expect("printer");
        (printer.row)(&obj, Timestamp::UNIX_EPOCH).cells
    }

    #[test]
    fn component_statuses() {
        let printer = printer("", "componentstatuses").expect("printer");
        let names: Vec<&str> = printer.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Status", "Message", "Error"]);
        let row = cells(
            "",
            "componentstatuses",
            json!({"metadata": {"name": "scheduler"}, "conditions": [
                {"type": "Healthy", "status": "False", "message": "Get \"https://127.0.0.1:10259/healthz\": refused", "error": ""}]}),
        );
        assert_eq!(
            row,
            [
                json!("scheduler"),
                json!("Unhealthy"),
                json!("Get \"https://127.0.0.1:10259/healthz\": refused"),
                json!("")
            ]
        );
        let row = cells(
            "",
            "componentstatuses",
            json!({"metadata": {"name": "etcd-0"}}),
        );
        assert_eq!(row[1], "Unknown");
    }

    #[test]
    fn flow_schemas() {
        let printer = printer("flowcontrol.apiserver.k8s.io", "flowschemas").expect("printer");
        let names: Vec<&str> = printer.columns.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Name",
                "PriorityLevel",
                "MatchingPrecedence",
                "DistinguisherMethod",
                "Age",
                "MissingPL"
            ]
        );
        let row = cells(
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            json!({"metadata": {"name": "exempt"}, "spec": {
                "priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1}}),
        );
        assert_eq!(row[1], "exempt");
        assert_eq!(row[2], 1);
        assert_eq!(row[3], "<none>");
        assert_eq!(row[5], "?");
        let row = cells(
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            json!({"metadata": {"name": "global-default"}, "spec": {
                "priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9900,
                "distinguisherMethod": {"type": "ByUser"}},
                "status": {"conditions": [{"type": "Dangling", "status": "False"}]}}),
        );
        assert_eq!(row[3], "ByUser");
        assert_eq!(row[5], "False");
    }

    #[test]
    fn priority_levels() {
        let row = cells(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            json!({"metadata": {"name": "workload-low"}, "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 100, "lendablePercent": 90,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}}),
        );
        assert_eq!(
            &row[..6],
            &[
                json!("workload-low"),
                json!("Limited"),
                json!(100),
                json!(128),
                json!(6),
                json!(50)
            ]
        );
        let row = cells(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            json!({"metadata": {"name": "catch-all"}, "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}}),
        );
        assert_eq!(
            &row[1..6],
            &[
                json!("Limited"),
                json!(5),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let row = cells(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}}),
        );
        assert_eq!(
            &row[1..6],
            &[
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }
}
