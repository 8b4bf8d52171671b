//! `LimitRanger`: the LimitRange objects of a namespace give its containers default requests
//! and limits (mutating phase, pod creates) and bound what containers, pods and claims may ask
//! (validating phase), as upstream's `plugin/pkg/admission/limitranger`.

use super::quantity::{Quantity, ResourceList, resource_list};
use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::registry::meta;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::{Map, Value};

/// The annotation that tells which defaults the plugin filled in.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

#[derive(Debug, Default)]
pub struct LimitRanger;

/// One `spec.limits[]` entry of a LimitRange.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitItem {
    pub kind: String,
    pub min: ResourceList,
    pub max: ResourceList,
    pub default: ResourceList,
    pub default_request: ResourceList,
    pub max_limit_request_ratio: ResourceList,
}

impl LimitItem {
    /// Reads an item, with upstream's API defaulting of Container items applied (max fills a
    /// missing default, the default then min fill a missing defaultRequest), so a LimitRange
    /// stored without that defaulting behaves as upstream's would.
    pub fn from_json(item: &Value) -> Self {
        let mut it = LimitItem {
            kind: item["type"].as_str().unwrap_or_default().to_string(),
            min: resource_list(&item["min"]),
            max: resource_list(&item["max"]),
            default: resource_list(&item["default"]),
            default_request: resource_list(&item["defaultRequest"]),
            max_limit_request_ratio: resource_list(&item["maxLimitRequestRatio"]),
        };
        if it.kind == "Container" {
            for (k, v) in &it.max {
                it.default.entry(k.clone()).or_insert(*v);
            }
            for (k, v) in it.default.iter().chain(&it.min) {
                it.default_request.entry(k.clone()).or_insert(*v);
            }
        }
        it
    }
}

/// The items of a LimitRange object.
pub fn limit_items(limit_range: &Value) -> Vec<LimitItem> {
    limit_range["spec"]["limits"]
        .as_array()
        .map(|items| items.iter().map(LimitItem::from_json).collect())
        .unwrap_or_default()
}

/// Fills missing requests and limits of every container and init container from the
/// Container items of one LimitRange, and records what it set in the annotation. Returns
/// whether the pod changed.
pub fn apply_defaults(pod: &mut Value, items: &[LimitItem]) -> bool {
    let mut requests = ResourceList::new();
    let mut limits = ResourceList::new();
    for item in items.iter().filter(|i| i.kind == "Container") {
        requests.extend(item.default_request.iter().map(|(k, v)| (k.clone(), *v)));
        limits.extend(item.default.iter().map(|(k, v)| (k.clone(), *v)));
    }
    if requests.is_empty() && limits.is_empty() {
        return false;
    }
    let mut notes = Vec::new();
    for (field, label) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(containers) = pod["spec"][field].as_array_mut() else {
            continue;
        };
        for container in containers {
            merge_container(container, &requests, &limits, label, &mut notes);
        }
    }
    if notes.is_empty() {
        return false;
    }
    if let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(Map::new());
        }
        annotations[ANNOTATION] =
            Value::String(format!("LimitRanger plugin set: {}", notes.join("; ")));
    }
    true
}

fn merge_container(
    container: &mut Value,
    requests: &ResourceList,
    limits: &ResourceList,
    label: &str,
    notes: &mut Vec<String>,
) {
    let name = container["name"].as_str().unwrap_or_default().to_string();
    let Some(c) = container.as_object_mut() else {
        return;
    };
    let resources = c
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    if !resources.is_object() {
        *resources = Value::Object(Map::new());
    }
    let resources = resources.as_object_mut().expect("made an object above");
    for key in ["limits", "requests"] {
        if !resources.get(key).is_some_and(Value::is_object) {
            resources.insert(key.into(), Value::Object(Map::new()));
        }
    }
    // Upstream defaults a pod's requests from its limits when it decodes the request, before
    // admission; ours defaults after the mutating phase, so do it here first or the
    // LimitRange's defaultRequest would win over the container's own limit.
    let own_limits = resources["limits"].as_object().cloned().unwrap_or_default();
    let reqs = resources["requests"].as_object_mut().expect("object");
    for (k, v) in own_limits {
        reqs.entry(k).or_insert(v);
    }
    let mut set_limits = Vec::new();
    let lims = resources["limits"].as_object_mut().expect("object");
    for (k, v) in limits {
        if !lims.contains_key(k) {
            lims.insert(k.clone(), Value::String(v.canonical()));
            set_limits.push(k.as_str());
        }
    }
    let mut set_requests = Vec::new();
    let reqs = resources["requests"].as_object_mut().expect("object");
    for (k, v) in requests {
        if !reqs.contains_key(k) {
            reqs.insert(k.clone(), Value::String(v.canonical()));
            set_requests.push(k.as_str());
        }
    }
    // Upstream's empty lists are omitted when it serializes the pod.
    resources.retain(|_, v| !v.as_object().is_some_and(Map::is_empty));
    // The lists come from sorted maps, so they are already in upstream's sorted order.
    if !set_requests.is_empty() {
        notes.push(format!(
            "{} request for {label} {name}",
            set_requests.join(", ")
        ));
    }
    if !set_limits.is_empty() {
        notes.push(format!(
            "{} limit for {label} {name}",
            set_limits.join(", ")
        ));
    }
}

fn container_lists(container: &Value) -> (ResourceList, ResourceList) {
    let r = &container["resources"];
    (resource_list(&r["requests"]), resource_list(&r["limits"]))
}

fn is_sidecar(container: &Value) -> bool {
    container["restartPolicy"].as_str() == Some("Always")
}

fn add_into(total: &mut ResourceList, list: &ResourceList) {
    for (k, v) in list {
        let sum = total.get(k).map_or(*v, |t| t.add(v));
        total.insert(k.clone(), sum);
    }
}

fn max_into(total: &mut ResourceList, list: &ResourceList) {
    for (k, v) in list {
        if total.get(k).is_none_or(|t| v > t) {
            total.insert(k.clone(), *v);
        }
    }
}

/// What a pod asks as a whole (`requests` or `limits`): the sum of its containers and
/// sidecars, or the largest init container together with the sidecars started before it
/// when that is more.
pub fn pod_total(pod: &Value, which: &str) -> ResourceList {
    let list = |c: &Value| resource_list(&c["resources"][which]);
    let mut total = ResourceList::new();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        add_into(&mut total, &list(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let own = list(c);
        let mut with_sidecars = sidecars.clone();
        add_into(&mut with_sidecars, &own);
        max_into(&mut init_peak, &with_sidecars);
        if is_sidecar(c) {
            add_into(&mut sidecars, &own);
        }
    }
    add_into(&mut total, &sidecars);
    max_into(&mut total, &init_peak);
    total
}

fn min_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let Some(req) = requests.get(resource) else {
        return Some(format!(
            "minimum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if req.milli_value() < enforced.milli_value() {
        return Some(format!(
            "minimum {resource} usage per {kind} is {enforced}, but request is {req}"
        ));
    }
    match limits.get(resource) {
        Some(lim) if lim.milli_value() < enforced.milli_value() => Some(format!(
            "minimum {resource} usage per {kind} is {enforced}, but limit is {lim}"
        )),
        _ => None,
    }
}

fn max_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let Some(lim) = limits.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if lim.milli_value() > enforced.milli_value() {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but limit is {lim}"
        ));
    }
    match requests.get(resource) {
        Some(req) if req.milli_value() > enforced.milli_value() => Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but request is {req}"
        )),
        _ => None,
    }
}

/// Claims have no limits: their maximum bounds the request.
fn max_request_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
) -> Option<String> {
    match requests.get(resource) {
        None => Some(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No request is specified"
        )),
        Some(req) if req.milli_value() > enforced.milli_value() => Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but request is {req}"
        )),
        _ => None,
    }
}

fn ratio_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let req = requests
        .get(resource)
        .map(Quantity::milli_value)
        .filter(|v| *v != 0);
    let Some(req) = req else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {enforced}, but no request is specified or request is 0"
        ));
    };
    let lim = limits
        .get(resource)
        .map(Quantity::milli_value)
        .filter(|v| *v != 0);
    let Some(lim) = lim else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"
        ));
    };
    // lim / req > enforced, kept in integers: lim * 1000 > enforced(milli) * req.
    if lim * 1000 > enforced.milli_value() * req {
        let ratio = lim as f64 / req as f64;
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {enforced}, but provided ratio is {ratio:.6}"
        ));
    }
    None
}

fn check_bounds(
    item: &LimitItem,
    requests: &ResourceList,
    limits: &ResourceList,
    errors: &mut Vec<String>,
) {
    let kind = item.kind.as_str();
    for (k, v) in &item.min {
        errors.extend(min_constraint(kind, k, v, requests, limits));
    }
    for (k, v) in &item.max {
        errors.extend(max_constraint(kind, k, v, requests, limits));
    }
    for (k, v) in &item.max_limit_request_ratio {
        errors.extend(ratio_constraint(kind, k, v, requests, limits));
    }
}

/// Every way the pod breaks the Container and Pod items.
pub fn pod_violations(pod: &Value, items: &[LimitItem]) -> Vec<String> {
    let mut errors = Vec::new();
    for item in items {
        match item.kind.as_str() {
            "Container" => {
                for field in ["containers", "initContainers"] {
                    for c in pod["spec"][field].as_array().into_iter().flatten() {
                        let (requests, limits) = container_lists(c);
                        check_bounds(item, &requests, &limits, &mut errors);
                    }
                }
            }
            "Pod" => {
                let requests = pod_total(pod, "requests");
                let limits = pod_total(pod, "limits");
                check_bounds(item, &requests, &limits, &mut errors);
            }
            _ => {}
        }
    }
    errors
}

/// Every way the claim breaks the PersistentVolumeClaim items.
pub fn claim_violations(claim: &Value, items: &[LimitItem]) -> Vec<String> {
    let requests = resource_list(&claim["spec"]["resources"]["requests"]);
    let mut errors = Vec::new();
    for item in items.iter().filter(|i| i.kind == "PersistentVolumeClaim") {
        for (k, v) in &item.min {
            errors.extend(min_constraint(
                &item.kind,
                k,
                v,
                &requests,
                &ResourceList::new(),
            ));
        }
        for (k, v) in &item.max {
            errors.extend(max_request_constraint(&item.kind, k, v, &requests));
        }
    }
    errors
}

/// Upstream's aggregate error text: one message alone, several bracketed and
/// comma-separated, repeats dropped.
pub fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The LimitRanges of the namespace, in name order so repeated runs act alike.
fn limit_ranges(state: &ApiState, namespace: &str) -> Vec<std::sync::Arc<Value>> {
    let mut ranges = state.list("", "limitranges", Some(namespace), &|_| true);
    ranges.sort_by(|a, b| {
        meta::meta_str(a, "name")
            .unwrap_or_default()
            .cmp(meta::meta_str(b, "name").unwrap_or_default())
    });
    ranges
}

/// Pods only on create (their containers' resources cannot change on update), claims on
/// create and update, never subresources.
fn applies(attrs: &Attributes) -> bool {
    if !attrs.subresource.is_empty() || attrs.namespace.is_empty() {
        return false;
    }
    match attrs.operation {
        Operation::Create => attrs.is("", "pods") || attrs.is("", "persistentvolumeclaims"),
        Operation::Update => attrs.is("", "persistentvolumeclaims"),
        _ => false,
    }
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if !applies(attrs) || !attrs.is("", "pods") || old.is_some_and(meta::is_terminating) {
            return Ok(());
        }
        for range in limit_ranges(state, &attrs.namespace) {
            apply_defaults(object, &limit_items(&range));
        }
        Ok(())
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        let Some(object) = object else {
            return Ok(());
        };
        if !applies(attrs) || old.is_some_and(meta::is_terminating) {
            return Ok(());
        }
        let pods = attrs.is("", "pods");
        for range in limit_ranges(state, &attrs.namespace) {
            let items = limit_items(&range);
            let errors = if pods {
                pod_violations(object, &items)
            } else {
                claim_violations(object, &items)
            };
            if !errors.is_empty() {
                let name = object_name(attrs, Some(object));
                return Err(forbidden(attrs, name, &aggregate(&errors)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(limits: Value) -> Vec<LimitItem> {
        limit_items(&json!({"spec": {"limits": limits}}))
    }

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[test]
    fn container_items_get_upstream_api_defaults() {
        let it = &items(json!([{
            "type": "Container",
            "max": {"cpu": "2", "memory": "1Gi"},
            "min": {"cpu": "100m"},
            "default": {"memory": "512Mi"},
        }]))[0];
        assert_eq!(it.default["cpu"].canonical(), "2");
        assert_eq!(it.default["memory"].canonical(), "512Mi");
        assert_eq!(it.default_request["memory"].canonical(), "512Mi");
        // The default limit (from max) fills the request before min would.
        assert_eq!(it.default_request["cpu"].canonical(), "2");
        // Pod items are not defaulted.
        let pod_item = &items(json!([{"type": "Pod", "max": {"cpu": "2"}}]))[0];
        assert!(pod_item.default.is_empty());
    }

    #[test]
    fn defaults_fill_only_what_is_missing_and_are_annotated() {
        let lr = items(json!([{
            "type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
        }]));
        let mut p = json!({
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {"name": "a"},
                    {"name": "b", "resources": {"limits": {"cpu": "1"}}},
                ],
                "initContainers": [{"name": "i", "resources": {"requests": {"memory": "1Gi"}}}],
            }
        });
        assert!(apply_defaults(&mut p, &lr));
        let a = &p["spec"]["containers"][0]["resources"];
        assert_eq!(a["limits"], json!({"cpu": "500m", "memory": "256Mi"}));
        assert_eq!(a["requests"], json!({"cpu": "100m", "memory": "128Mi"}));
        let b = &p["spec"]["containers"][1]["resources"];
        assert_eq!(b["limits"], json!({"cpu": "1", "memory": "256Mi"}));
        // The container's own limit is its request, as upstream's pod defaulting makes it.
        assert_eq!(b["requests"], json!({"cpu": "1", "memory": "128Mi"}));
        let i = &p["spec"]["initContainers"][0]["resources"];
        assert_eq!(i["requests"], json!({"cpu": "100m", "memory": "1Gi"}));
        assert_eq!(
            p["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container a; \
             cpu, memory limit for container a; memory request for container b; \
             memory limit for container b; cpu request for init container i; \
             cpu, memory limit for init container i"
        );
        // A second pass has nothing left to set.
        let before = p.clone();
        assert!(!apply_defaults(&mut p, &lr));
        assert_eq!(p, before);
    }

    #[test]
    fn container_bounds_with_upstream_messages() {
        let lr = items(json!([{
            "type": "Container",
            "max": {"cpu": "500m"},
            "min": {"memory": "64Mi"},
        }]));
        let p = pod(json!([{"name": "c", "resources": {
            "limits": {"cpu": "1", "memory": "1Gi"},
            "requests": {"cpu": "1", "memory": "32Mi"},
        }}]));
        assert_eq!(
            aggregate(&pod_violations(&p, &lr)),
            "[minimum memory usage per Container is 64Mi, but request is 32Mi, \
             maximum cpu usage per Container is 500m, but limit is 1]"
        );
        let p = pod(json!([{"name": "c", "resources": {
            "limits": {"cpu": "500m"}, "requests": {"cpu": "200m", "memory": "64Mi"},
        }}]));
        assert!(pod_violations(&p, &lr).is_empty());
        let p = pod(json!([{"name": "c"}]));
        assert_eq!(
            aggregate(&pod_violations(&p, &lr)),
            "[minimum memory usage per Container is 64Mi.  No request is specified, \
             maximum cpu usage per Container is 500m.  No limit is specified]"
        );
    }

    #[test]
    fn ratio_and_pod_totals() {
        let lr = items(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "10"}}]));
        let p = pod(json!([{"name": "c", "resources": {
            "limits": {"cpu": "1"}, "requests": {"cpu": "10m"},
        }}]));
        assert_eq!(
            aggregate(&pod_violations(&p, &lr)),
            "cpu max limit to request ratio per Container is 10, but provided ratio is 100.000000"
        );
        let p = pod(json!([{"name": "c", "resources": {
            "limits": {"cpu": "1"}, "requests": {"cpu": "100m"},
        }}]));
        assert!(pod_violations(&p, &lr).is_empty());

        let lr = items(json!([{"type": "Pod", "max": {"cpu": "1"}}]));
        let mut p = pod(json!([
            {"name": "a", "resources": {"limits": {"cpu": "600m"}}},
            {"name": "b", "resources": {"limits": {"cpu": "600m"}}},
        ]));
        assert_eq!(
            aggregate(&pod_violations(&p, &lr)),
            "maximum cpu usage per Pod is 1, but limit is 1200m"
        );
        p["spec"]["initContainers"] = json!([
            {"name": "s", "restartPolicy": "Always", "resources": {"limits": {"cpu": "1"}}},
            {"name": "i", "resources": {"limits": {"cpu": "3"}}},
        ]);
        // The sidecar keeps running beside the init container after it.
        assert_eq!(pod_total(&p, "limits")["cpu"].canonical(), "4");
    }

    #[test]
    fn claim_bounds() {
        let lr = items(json!([{
            "type": "PersistentVolumeClaim",
            "min": {"storage": "1Gi"},
            "max": {"storage": "2Gi"},
        }]));
        let claim = |s: &str| json!({"spec": {"resources": {"requests": {"storage": s}}}});
        assert!(claim_violations(&claim("1Gi"), &lr).is_empty());
        assert_eq!(
            aggregate(&claim_violations(&claim("5Gi"), &lr)),
            "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
        );
        assert_eq!(
            aggregate(&claim_violations(&claim("500Mi"), &lr)),
            "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
        );
    }
}

#[cfg(test)]
mod through_the_store {
    use super::*;
    use crate::admission::plugins::resource_quota::through_the_store::store_with;
    use crate::test_support::{test_state, wait_cached};
    use serde_json::json;

    #[tokio::test]
    async fn pods_get_defaults_and_oversized_ones_are_refused() {
        let test = test_state().await;
        let state = test.state.clone();
        state
            .store("", "v1", "limitranges")
            .unwrap()
            .create(
                Some("ns"),
                json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                       "spec": {"limits": [{"type": "Container",
                                            "max": {"cpu": "500m"},
                                            "defaultRequest": {"cpu": "100m"}}]}}),
            )
            .await
            .expect("limit range");
        wait_cached(&state, "", "limitranges", Some("ns"), "lr").await;
        let pod = |name: &str, resources: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                   "spec": {"containers": [{"name": "c", "image": "busybox",
                                            "resources": resources}]}})
        };
        let store = |name: &str| {
            store_with(
                &state,
                Box::new(LimitRanger),
                "pods",
                Operation::Create,
                name,
            )
        };

        let created = store("small")
            .create(Some("ns"), pod("small", json!({})))
            .await
            .expect("a pod without resources gets the defaults");
        let resources = &created["spec"]["containers"][0]["resources"];
        assert_eq!(resources["limits"]["cpu"], "500m");
        assert_eq!(resources["requests"]["cpu"], "100m");
        assert_eq!(
            created["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container c; cpu limit for container c"
        );

        let refused = store("big")
            .create(Some("ns"), pod("big", json!({"limits": {"cpu": "1"}})))
            .await
            .expect_err("over the maximum");
        let refused = ApiError::from(refused);
        assert_eq!(refused.code(), 403);
        assert_eq!(
            refused.message(),
            "pods \"big\" is forbidden: maximum cpu usage per Container is 500m, but limit is 1"
        );
    }
}
