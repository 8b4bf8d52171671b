//! API Priority and Fairness configuration every cluster starts with: upstream's mandatory
//! objects (the `exempt` and `catch-all` priority levels and flow schemas) and its suggested
//! ones (`system`, `node-high`, `leader-election`, `workload-high`, `workload-low`,
//! `global-default` and the flow schemas routing to them), as upstream's apiserver keeps them:
//!
//! - a missing object is created, with `apf.kubernetes.io/autoupdate-spec: "true"`;
//! - a mandatory object whose spec differs is restored (the `exempt` level keeps the shares
//!   and lendable percent an administrator set, as upstream allows);
//! - a suggested object is brought back to the bootstrap spec only while its autoupdate
//!   annotation says `true` (or, without a readable annotation, while it is at generation 1,
//!   i.e. nobody changed it); with `"false"` it is left alone;
//! - an object already as wanted is not written, so a restart writes nothing.
//!
//! The objects are served as data: this server does not classify requests by them (its
//! in-flight limit is `--max-requests-inflight`). Of their status, the FlowSchemas' `Dangling`
//! condition is kept, as upstream's configuration controller keeps it.

use crate::registry::{ObjectLookup, Part, RegistryError, ResourceStore};
use crate::rest::state::ApiState;
use crate::storage::cacher::WatchEvent;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The annotation that lets the apiserver keep a bootstrap object's spec current.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
const VERSION: &str = "v1";

const MASTERS: &str = "system:masters";
const UNAUTHENTICATED: &str = "system:unauthenticated";
const AUTHENTICATED: &str = "system:authenticated";
const NODES: &str = "system:nodes";
const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const SCHEDULER: &str = "system:kube-scheduler";
const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// Whether upstream's apiserver insists on an object (mandatory) or only suggests it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Mandatory,
    Suggested,
}

fn priority_level(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn limited(shares: i64, lendable: i64, queues: i64, hand: i64, queue_length: i64) -> Value {
    json!({
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": {
                "type": "Queue",
                "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": queue_length},
            },
        },
    })
}

/// Upstream's bootstrap priority levels, mandatory ones first.
pub fn priority_levels() -> Vec<(Kind, Value)> {
    use Kind::*;
    vec![
        (
            Mandatory,
            priority_level(
                "exempt",
                json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
            ),
        ),
        (
            Mandatory,
            priority_level(
                "catch-all",
                json!({"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 5, "lendablePercent": 0,
                    "limitResponse": {"type": "Reject"}}}),
            ),
        ),
        (
            Suggested,
            priority_level("system", limited(30, 33, 64, 6, 50)),
        ),
        (
            Suggested,
            priority_level("node-high", limited(40, 25, 64, 6, 50)),
        ),
        (
            Suggested,
            priority_level("leader-election", limited(10, 0, 16, 4, 50)),
        ),
        (
            Suggested,
            priority_level("workload-high", limited(40, 50, 128, 6, 50)),
        ),
        (
            Suggested,
            priority_level("workload-low", limited(100, 90, 128, 6, 50)),
        ),
        (
            Suggested,
            priority_level("global-default", limited(20, 50, 128, 6, 50)),
        ),
    ]
}

fn groups(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "Group", "group": {"name": n}}))
        .collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": n}}))
        .collect()
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster_scope: bool,
) -> Value {
    json!({
        "verbs": verbs, "apiGroups": groups, "resources": resources,
        "namespaces": namespaces, "clusterScope": cluster_scope,
    })
}

/// Every request of the subjects, resource or not.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [resource_rule(&["*"], &["*"], &["*"], &["*"], true)],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

fn flow_schema(
    name: &str,
    level: &str,
    precedence: i64,
    distinguisher: Option<&str>,
    rule: Value,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rule],
    });
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

/// Leader election's reads and writes of its lock objects.
fn leader_election_rules(subjects: Vec<Value>, lock_namespaces: &[&str]) -> Value {
    let verbs = ["get", "create", "update"];
    json!({
        "subjects": subjects,
        "resourceRules": [
            resource_rule(&verbs, &[""], &["endpoints", "configmaps"], lock_namespaces, false),
            resource_rule(&verbs, &["coordination.k8s.io"], &["leases"], &["*"], false),
        ],
    })
}

/// Upstream's bootstrap flow schemas, mandatory ones first.
pub fn flow_schemas() -> Vec<(Kind, Value)> {
    use Kind::*;
    let by_user = Some("ByUser");
    let by_namespace = Some("ByNamespace");
    let all_users = || groups(&[UNAUTHENTICATED, AUTHENTICATED]);
    let mut leader_election_subjects = users(&[CONTROLLER_MANAGER, SCHEDULER]);
    leader_election_subjects.extend(kube_system_service_accounts(&["*"]));
    let mut endpoint_writers = users(&[CONTROLLER_MANAGER]);
    endpoint_writers.extend(kube_system_service_accounts(&[
        "endpoint-controller",
        "endpointslicemirroring-controller",
    ]));
    vec![
        (
            Mandatory,
            flow_schema("exempt", "exempt", 1, None, everything(groups(&[MASTERS]))),
        ),
        (
            Mandatory,
            flow_schema(
                "catch-all",
                "catch-all",
                10000,
                by_user,
                everything(all_users()),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "system-nodes",
                "system",
                500,
                by_user,
                everything(groups(&[NODES])),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "system-node-high",
                "node-high",
                400,
                by_user,
                json!({
                    "subjects": groups(&[NODES]),
                    "resourceRules": [
                        resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &["*"], true),
                        resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false),
                    ],
                }),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "probes",
                "exempt",
                2,
                None,
                json!({
                    "subjects": all_users(),
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
                }),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "system-leader-election",
                "leader-election",
                100,
                by_user,
                leader_election_rules(leader_election_subjects, &["kube-system"]),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "endpoint-controller",
                "workload-high",
                150,
                by_user,
                json!({
                    "subjects": endpoint_writers,
                    "resourceRules": [resource_rule(
                        &["get", "create", "update"], &[""], &["endpoints"], &["*"], false)],
                }),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "workload-leader-election",
                "leader-election",
                200,
                by_user,
                leader_election_rules(kube_system_service_accounts(&["*"]), &["*"]),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "kube-controller-manager",
                "workload-high",
                800,
                by_namespace,
                everything(users(&[CONTROLLER_MANAGER])),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "kube-scheduler",
                "workload-high",
                800,
                by_namespace,
                everything(users(&[SCHEDULER])),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "kube-system-service-accounts",
                "workload-high",
                900,
                by_namespace,
                everything(kube_system_service_accounts(&["*"])),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "service-accounts",
                "workload-low",
                9000,
                by_user,
                everything(groups(&[SERVICE_ACCOUNTS])),
            ),
        ),
        (
            Suggested,
            flow_schema(
                "global-default",
                "global-default",
                9900,
                by_user,
                everything(all_users()),
            ),
        ),
    ]
}

/// What to do with one bootstrap object given what is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Create(Value),
    /// The stored object with the bootstrap spec and the autoupdate annotation.
    Update(Value),
    Keep,
}

/// Whether the apiserver may rewrite a suggested object's spec: the annotation when it is a
/// boolean, else only an object nobody has changed (generation 1).
fn may_update_spec(existing: &Value) -> bool {
    let annotation = existing["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION].as_str();
    match annotation.map(str::to_ascii_lowercase).as_deref() {
        // Go's strconv.ParseBool spellings.
        Some("true" | "1" | "t") => true,
        Some("false" | "0" | "f") => false,
        _ => existing["metadata"]["generation"].as_i64() == Some(1),
    }
}

/// Whether every field `wanted` sets is set alike in `have` (defaulting may add others).
fn covers(have: &Value, wanted: &Value) -> bool {
    match (have, wanted) {
        (Value::Object(have), Value::Object(wanted)) => wanted
            .iter()
            .all(|(k, w)| have.get(k).is_some_and(|h| covers(h, w))),
        (Value::Array(have), Value::Array(wanted)) => {
            have.len() == wanted.len() && have.iter().zip(wanted).all(|(h, w)| covers(h, w))
        }
        (have, wanted) => have == wanted,
    }
}

/// Decides what `wanted` needs given the stored object, if any.
pub fn plan(kind: Kind, wanted: &Value, existing: Option<&Value>) -> Action {
    let Some(existing) = existing else {
        return Action::Create(wanted.clone());
    };
    let mut spec = wanted["spec"].clone();
    if kind == Kind::Mandatory && spec["type"] == "Exempt" && existing["spec"]["exempt"].is_object()
    {
        // The exempt level's shares and lendable percent are the administrator's to set.
        spec["exempt"] = existing["spec"]["exempt"].clone();
    }
    let annotated = existing["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] == "true";
    let up_to_date = covers(&existing["spec"], &spec) && annotated;
    let allowed = kind == Kind::Mandatory || may_update_spec(existing);
    if up_to_date || !allowed {
        return Action::Keep;
    }
    let mut updated = existing.clone();
    updated["spec"] = spec;
    if !updated["metadata"]["annotations"].is_object() {
        updated["metadata"]["annotations"] = json!({});
    }
    updated["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("true");
    Action::Update(updated)
}

/// Creates or restores the bootstrap objects; returns how many writes it made.
pub async fn ensure(state: &ApiState) -> anyhow::Result<usize> {
    let levels = state
        .store(GROUP, VERSION, "prioritylevelconfigurations")
        .ok_or_else(|| anyhow::anyhow!("prioritylevelconfigurations are not served"))?;
    let schemas = state
        .store(GROUP, VERSION, "flowschemas")
        .ok_or_else(|| anyhow::anyhow!("flowschemas are not served"))?;
    let mut writes = 0;
    // Levels first, so no schema ever points at a missing level.
    for (kind, wanted) in priority_levels() {
        writes += ensure_one(levels, kind, &wanted).await?;
    }
    for (kind, wanted) in flow_schemas() {
        writes += ensure_one(schemas, kind, &wanted).await?;
    }
    Ok(writes)
}

async fn ensure_one(store: &ResourceStore, kind: Kind, wanted: &Value) -> anyhow::Result<usize> {
    let name = wanted["metadata"]["name"].as_str().unwrap_or_default();
    let existing = match store.get(None, name).await {
        Ok(object) => Some(object),
        Err(RegistryError::NotFound { .. }) => None,
        Err(err) => return Err(err.into()),
    };
    match plan(kind, wanted, existing.as_ref()) {
        Action::Keep => Ok(0),
        Action::Create(object) => match store.create(None, object).await {
            // Another apiserver made it meanwhile.
            Ok(_) | Err(RegistryError::AlreadyExists { .. }) => Ok(1),
            Err(err) => Err(err.into()),
        },
        // The read's resourceVersion makes this a compare-and-swap; losing it to another writer
        // leaves their object for the next start.
        Action::Update(object) => match store.update(None, name, object, Part::Main).await {
            Ok(_) | Err(RegistryError::Conflict { .. }) => Ok(1),
            Err(err) => Err(err.into()),
        },
    }
}

/// Each FlowSchema's `Dangling` condition (whether its priority level exists) as upstream's
/// APF configuration controller words it, without its transition time.
pub fn dangling_condition(schema: &Value, levels: &HashSet<String>) -> Value {
    let level = schema["spec"]["priorityLevelConfiguration"]["name"]
        .as_str()
        .unwrap_or_default();
    let quoted = crate::http::status::go_quote(level);
    if levels.contains(level) {
        json!({"type": "Dangling", "status": "False", "reason": "Found",
               "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {quoted} and it exists")})
    } else {
        json!({"type": "Dangling", "status": "True", "reason": "NotFound",
               "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {quoted} but there is no such object")})
    }
}

/// `schema` with `wanted` as its `Dangling` condition, stamped `now`; None when it already
/// says so.
pub fn with_dangling_condition(schema: &Value, wanted: &Value, now: &str) -> Option<Value> {
    let conditions = schema["status"]["conditions"].as_array();
    let current = conditions
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Dangling");
    if current.is_some_and(|c| {
        ["status", "reason", "message"]
            .iter()
            .all(|k| c[*k] == wanted[*k])
    }) {
        return None;
    }
    let mut condition = wanted.clone();
    condition["lastTransitionTime"] = json!(now);
    let mut others: Vec<Value> = conditions
        .into_iter()
        .flatten()
        .filter(|c| c["type"] != "Dangling")
        .cloned()
        .collect();
    others.push(condition);
    let mut updated = schema.clone();
    if !updated["status"].is_object() {
        updated["status"] = json!({});
    }
    updated["status"]["conditions"] = Value::Array(others);
    Some(updated)
}

/// Keeps every FlowSchema's `Dangling` condition current, as upstream's APF configuration
/// controller does: a pass over the watch caches after every change of a FlowSchema or a
/// PriorityLevelConfiguration, writing only what changed (its own writes lead to one more pass
/// that finds nothing to do).
pub fn maintain_dangling_conditions(state: Arc<ApiState>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let (Some(schemas), Some(levels)) = (
            state.entry(GROUP, VERSION, "flowschemas").cloned(),
            state
                .entry(GROUP, VERSION, "prioritylevelconfigurations")
                .cloned(),
        ) else {
            return;
        };
        loop {
            let opened = async {
                let (_, schema_events) = schemas.cacher.snapshot_and_watch().await?;
                let (_, level_events) = levels.cacher.snapshot_and_watch().await?;
                Ok::<_, crate::storage::backend::StorageError>((schema_events, level_events))
            }
            .await;
            let (mut schema_events, mut level_events) = match opened {
                Ok(watches) => watches,
                Err(err) => {
                    tracing::warn!("watching the APF configuration: {err}; retrying");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    }
                }
            };
            loop {
                if let Err(err) = update_dangling_conditions(&state).await {
                    tracing::warn!("updating the FlowSchemas' Dangling conditions: {err:#}");
                }
                let event = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    event = schema_events.recv() => event,
                    event = level_events.recv() => event,
                };
                // A watch that ended (the cache re-listed) is opened again.
                if matches!(event, None | Some(WatchEvent::Error(_))) {
                    break;
                }
            }
        }
    });
}

async fn update_dangling_conditions(state: &ApiState) -> anyhow::Result<()> {
    let everything = |_: &Value| true;
    let levels: HashSet<String> = state
        .list(GROUP, "prioritylevelconfigurations", None, &everything)
        .iter()
        .filter_map(|l| l["metadata"]["name"].as_str().map(String::from))
        .collect();
    let Some(store) = state.store(GROUP, VERSION, "flowschemas") else {
        return Ok(());
    };
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    for schema in state.list(GROUP, "flowschemas", None, &everything) {
        let wanted = dangling_condition(&schema, &levels);
        let Some(updated) = with_dangling_condition(&schema, &wanted, &now) else {
            continue;
        };
        let name = schema["metadata"]["name"].as_str().unwrap_or_default();
        match store.update(None, name, updated, Part::Status).await {
            // Changed or gone meanwhile: that change starts the next pass.
            Ok(_) | Err(RegistryError::Conflict { .. } | RegistryError::NotFound { .. }) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(objects: &[(Kind, Value)]) -> Vec<&str> {
        objects
            .iter()
            .map(|(_, o)| o["metadata"]["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn upstreams_objects() {
        let levels = priority_levels();
        assert_eq!(
            names(&levels),
            [
                "exempt",
                "catch-all",
                "system",
                "node-high",
                "leader-election",
                "workload-high",
                "workload-low",
                "global-default"
            ]
        );
        let schemas = flow_schemas();
        assert_eq!(schemas.len(), 13);
        // Every schema points at a bootstrap level, and every object carries the annotation.
        let level_names = names(&levels);
        for (_, schema) in &schemas {
            let level = schema["spec"]["priorityLevelConfiguration"]["name"]
                .as_str()
                .unwrap();
            assert!(level_names.contains(&level), "{level}");
        }
        for (_, object) in levels.iter().chain(&schemas) {
            assert_eq!(
                object["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION],
                "true"
            );
        }
        let catch_all = &schemas[1].1;
        assert_eq!(catch_all["spec"]["matchingPrecedence"], 10000);
        assert_eq!(catch_all["spec"]["distinguisherMethod"]["type"], "ByUser");
        assert!(schemas[0].1["spec"].get("distinguisherMethod").is_none());
    }

    #[test]
    fn creation_and_idempotence() {
        let (kind, wanted) = priority_levels().remove(2);
        assert_eq!(plan(kind, &wanted, None), Action::Create(wanted.clone()));
        // As stored: with server-set metadata and a defaulted field.
        let mut stored = wanted.clone();
        stored["metadata"]["generation"] = json!(1);
        stored["metadata"]["resourceVersion"] = json!("7");
        stored["status"] = json!({});
        assert_eq!(plan(kind, &wanted, Some(&stored)), Action::Keep);
    }

    #[test]
    fn suggested_objects_follow_the_annotation() {
        let (kind, wanted) = flow_schemas().remove(12);
        assert_eq!(kind, Kind::Suggested);
        let mut changed = wanted.clone();
        changed["spec"]["matchingPrecedence"] = json!(5000);
        changed["metadata"]["generation"] = json!(2);
        // Still "true": restored.
        let Action::Update(updated) = plan(kind, &wanted, Some(&changed)) else {
            panic!("expected an update");
        };
        assert_eq!(updated["spec"], wanted["spec"]);
        assert_eq!(updated["metadata"]["generation"], 2);
        // "false": left alone.
        changed["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        assert_eq!(plan(kind, &wanted, Some(&changed)), Action::Keep);
        // No annotation: only an untouched object (generation 1) is updated.
        changed["metadata"]["annotations"] = json!({});
        assert_eq!(plan(kind, &wanted, Some(&changed)), Action::Keep);
        changed["metadata"]["generation"] = json!(1);
        assert!(matches!(
            plan(kind, &wanted, Some(&changed)),
            Action::Update(_)
        ));
    }

    #[test]
    fn dangling_conditions() {
        let (_, schema) = flow_schemas().remove(0);
        let levels: HashSet<String> = ["exempt".to_string()].into();
        let found = dangling_condition(&schema, &levels);
        assert_eq!(
            found,
            json!({"type": "Dangling", "status": "False", "reason": "Found",
                   "message": "This FlowSchema references the PriorityLevelConfiguration object named \"exempt\" and it exists"})
        );
        let updated = with_dangling_condition(&schema, &found, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(
            updated["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        // Already so: nothing to write, whatever the time.
        assert_eq!(
            with_dangling_condition(&updated, &found, "2026-01-02T00:00:00Z"),
            None
        );
        let missing = dangling_condition(&schema, &HashSet::new());
        assert_eq!(missing["status"], "True");
        assert_eq!(missing["reason"], "NotFound");
        let flipped = with_dangling_condition(&updated, &missing, "2026-01-02T00:00:00Z").unwrap();
        let conditions = flipped["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0]["status"], "True");
    }

    #[test]
    fn mandatory_objects_are_restored_whatever_the_annotation() {
        let (kind, wanted) = priority_levels().remove(1);
        assert_eq!(kind, Kind::Mandatory);
        let mut changed = wanted.clone();
        changed["spec"]["limited"]["nominalConcurrencyShares"] = json!(50);
        changed["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        let Action::Update(updated) = plan(kind, &wanted, Some(&changed)) else {
            panic!("expected an update");
        };
        assert_eq!(updated["spec"], wanted["spec"]);
        assert_eq!(
            updated["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION],
            "true"
        );
        // The exempt level keeps what the administrator set.
        let (kind, exempt) = priority_levels().remove(0);
        let mut tuned = exempt.clone();
        tuned["spec"]["exempt"]["nominalConcurrencyShares"] = json!(10);
        assert_eq!(plan(kind, &exempt, Some(&tuned)), Action::Keep);
    }
}
