//! The disruption-budget check of `POST pods/<name>/eviction` (upstream's eviction REST):
//! an eviction of a pod covered by a PodDisruptionBudget is allowed only while the budget's
//! status (written by the controller manager's disruption controller) allows a disruption; it
//! then takes one (`disruptionsAllowed - 1`) and records the pod in `disruptedPods`, in one
//! compare-and-swap write, before the pod is deleted.

use super::state::ApiState;
use crate::http::status::ApiError;
use crate::registry::list::ListOptions;
use crate::registry::{DeleteOptions, Part, RegistryError, ResourceStore};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, StatusCause};
use api_types::labels::Selector;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// More pending evictions than this in one budget means the controller is not keeping up.
const MAX_DISRUPTED_POD_SIZE: usize = 2000;
const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// Pods that are finished, not started or already going need no budget.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed" | "Pending")
    ) || pod["metadata"]["deletionTimestamp"].is_string()
}

fn too_many_requests(cause: String) -> ApiError {
    let mut status = ApiError::too_many_requests(VIOLATION, 0).into_status();
    let details = status.details.get_or_insert_default();
    details.retry_after_seconds = None;
    details.causes = Some(vec![StatusCause {
        reason: Some("DisruptionBudget".into()),
        message: Some(cause),
        field: None,
    }]);
    ApiError::from_status(status)
}

fn rejected(err: ApiError) -> RegistryError {
    RegistryError::Rejected(Box::new(err))
}

/// The budgets whose (non-empty) selector matches the pod's labels.
async fn budgets_of(state: &ApiState, ns: &str, pod: &Value) -> Result<Vec<Value>, ApiError> {
    let Some(store) = state.store("policy", "v1", "poddisruptionbudgets") else {
        return Ok(Vec::new());
    };
    let labels: BTreeMap<String, String> =
        serde_json::from_value(pod["metadata"]["labels"].clone()).unwrap_or_default();
    let page = store.list(Some(ns), &ListOptions::default()).await?;
    Ok(page
        .items
        .into_iter()
        .filter(|pdb| {
            // A budget with a null or empty selector covers no pod here.
            let Ok(selector) =
                serde_json::from_value::<LabelSelector>(pdb["spec"]["selector"].clone())
            else {
                return false;
            };
            Selector::from_label_selector(Some(&selector))
                .is_ok_and(|s| !s.is_empty() && s.matches(&labels))
        })
        .collect())
}

/// Checks the budget covering `pod` and, when the eviction is allowed, takes one disruption
/// from it (not under dry run). Errors are the eviction's answer (429 when the budget does
/// not allow it).
pub async fn check_budget(
    state: &ApiState,
    ns: &str,
    pod: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    if can_ignore_budget(pod) {
        return Ok(());
    }
    let mut budgets = budgets_of(state, ns, pod).await?;
    if budgets.len() > 1 {
        return Err(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    let Some(budget) = budgets.pop() else {
        return Ok(());
    };
    let name = budget["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let status = &budget["status"];
    let observed = status["observedGeneration"].as_i64().unwrap_or(0);
    let generation = budget["metadata"]["generation"].as_i64().unwrap_or(0);
    if !is_ready(pod) {
        // Unhealthy pods may go when the budget is met anyway (IfHealthyBudget), or always.
        let always = budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow";
        let current = status["currentHealthy"].as_i64().unwrap_or(0);
        let desired = status["desiredHealthy"].as_i64().unwrap_or(0);
        if always || (observed >= generation && current >= desired && desired > 0) {
            return Ok(());
        }
    }
    let Some(store) = state.store("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let pod_name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let check = |pdb: &Value| -> Result<Value, RegistryError> {
        let status = &pdb["status"];
        let observed = status["observedGeneration"].as_i64().unwrap_or(0);
        let generation = pdb["metadata"]["generation"].as_i64().unwrap_or(0);
        if observed < generation {
            return Err(rejected(too_many_requests(format!(
                "The disruption budget {name} is still being processed by the server."
            ))));
        }
        let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
        if allowed < 0 {
            return Err(rejected(ApiError::forbidden(
                "policy",
                "poddisruptionbudget",
                &name,
                "pdb disruptions allowed is negative",
            )));
        }
        let disrupted = status["disruptedPods"]
            .as_object()
            .map_or(0, serde_json::Map::len);
        if disrupted > MAX_DISRUPTED_POD_SIZE {
            return Err(rejected(ApiError::forbidden(
                "policy",
                "poddisruptionbudget",
                &name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            )));
        }
        if allowed == 0 {
            return Err(rejected(too_many_requests(format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status["desiredHealthy"].as_i64().unwrap_or(0),
                status["currentHealthy"].as_i64().unwrap_or(0)
            ))));
        }
        let mut next = pdb.clone();
        next["status"]["disruptionsAllowed"] = json!(allowed - 1);
        if allowed == 1 {
            set_insufficient(&mut next);
        }
        if !next["status"]["disruptedPods"].is_object() {
            next["status"]["disruptedPods"] = json!({});
        }
        next["status"]["disruptedPods"][&pod_name] = json!(crate::registry::meta::now());
        Ok(next)
    };
    if dry_run {
        check(&budget).map(drop).map_err(ApiError::from)
    } else {
        store
            .guaranteed_update(Some(ns), &name, Part::Status, check)
            .await
            .map(drop)
            .map_err(ApiError::from)
    }
}

/// The DisruptionAllowed condition once the last allowed disruption is taken.
fn set_insufficient(pdb: &mut Value) {
    let now = crate::registry::meta::now();
    let observed = pdb["status"]["observedGeneration"].clone();
    let mut conditions: Vec<Value> = pdb["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "DisruptionAllowed");
    conditions.push(json!({
        "type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
        "message": "", "observedGeneration": observed, "lastTransitionTime": now,
    }));
    pdb["status"]["conditions"] = json!(conditions);
}

/// Records on the pod, before it is deleted, that the eviction API is taking it down (the
/// `DisruptionTarget` condition), checking the eviction's preconditions against the latest
/// pod; a resourceVersion precondition then follows the pod's new version, as upstream's
/// `addConditionAndDeletePod` does.
pub async fn mark_disruption_target(
    store: &ResourceStore,
    ns: Option<&str>,
    name: &str,
    options: &mut DeleteOptions,
) -> Result<(), ApiError> {
    let conflict = |message: String| RegistryError::Conflict {
        group: String::new(),
        resource: "pods".into(),
        name: name.to_string(),
        message,
    };
    let updated = store
        .guaranteed_update(ns, name, Part::Status, |pod| {
            let meta = &pod["metadata"];
            if let Some(uid) = options.precondition_uid.as_deref().filter(|u| !u.is_empty())
                && meta["uid"].as_str() != Some(uid)
            {
                return Err(conflict(format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta["uid"].as_str().unwrap_or_default()
                )));
            }
            if let Some(rv) = options
                .precondition_resource_version
                .as_deref()
                .filter(|v| !v.is_empty())
                && meta["resourceVersion"].as_str() != Some(rv)
            {
                return Err(conflict(format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta["resourceVersion"].as_str().unwrap_or_default()
                )));
            }
            let mut next = pod.clone();
            let mut conditions: Vec<Value> = pod["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let previous = conditions
                .iter()
                .position(|c| c["type"] == "DisruptionTarget");
            let transition = match previous.map(|i| &conditions[i]) {
                Some(c) if c["status"] == "True" => c["lastTransitionTime"].clone(),
                _ => json!(crate::registry::meta::now()),
            };
            let condition = json!({
                "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting", "lastProbeTime": null,
                "lastTransitionTime": transition,
            });
            match previous {
                Some(i) => conditions[i] = condition,
                None => conditions.push(condition),
            }
            next["status"]["conditions"] = json!(conditions);
            Ok(next)
        })
        .await?;
    if options
        .precondition_resource_version
        .as_deref()
        .is_some_and(|v| !v.is_empty())
    {
        options.precondition_resource_version = updated["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from);
    }
    Ok(())
}
