//! The aggregated discovery document (`APIGroupDiscoveryList`, apidiscovery.k8s.io v2 or
//! v2beta1) turned into the legacy documents the cache and the mapper hold, as client-go's
//! `SplitGroupsAndResources` converts it: a stale group-version is left out (its resources
//! are unknown), the first version left is the preferred one, and each subresource becomes a
//! `parent/sub` resource carrying its parent's singular name and scope and its own kind.

use serde_json::{Map, Value, json};

/// What upstream's kubectl 1.33 sends for `/api` and `/apis`.
pub const ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// An aggregated document in the legacy shapes.
pub struct Split {
    /// `APIGroupList` entries, in the server's order.
    pub groups: Vec<Value>,
    /// `(group/version, APIResourceList)`, in the server's order.
    pub lists: Vec<(String, Value)>,
}

/// The groups and each group-version's `APIResourceList` of an aggregated document; `None`
/// when `doc` is not one (a server that only knows the legacy form).
pub fn split(doc: &Value) -> Option<Split> {
    if doc.get("kind").and_then(Value::as_str) != Some("APIGroupDiscoveryList") {
        return None;
    }
    let mut groups = Vec::new();
    let mut lists = Vec::new();
    for item in doc
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut versions = Vec::new();
        for v in item
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if v.get("freshness").and_then(Value::as_str) == Some("Stale") {
                continue;
            }
            let version = v.get("version").and_then(Value::as_str).unwrap_or("");
            let gv = if name.is_empty() {
                version.to_owned()
            } else {
                format!("{name}/{version}")
            };
            versions.push(json!({"groupVersion": gv, "version": version}));
            let resources: Vec<Value> = v
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(resource_and_subresources)
                .collect();
            let list = json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": resources,
            });
            lists.push((gv, list));
        }
        let mut group = Map::new();
        group.insert("name".into(), json!(name));
        if let Some(first) = versions.first() {
            group.insert("preferredVersion".into(), first.clone());
        }
        group.insert("versions".into(), Value::Array(versions));
        groups.push(Value::Object(group));
    }
    Some(Split { groups, lists })
}

/// One `APIResourceDiscovery` as legacy `APIResource`s: the resource (unless it has no
/// singular name, which upstream treats as an error, while still serving its subresources)
/// and then its subresources.
fn resource_and_subresources(r: &Value) -> Vec<Value> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let name = text(r, "resource");
    let singular = text(r, "singularResource");
    let namespaced = r.get("scope").and_then(Value::as_str) == Some("Namespaced");
    let mut out = Vec::new();
    let mut parent = Map::new();
    parent.insert("name".into(), json!(name));
    parent.insert("singularName".into(), json!(singular));
    parent.insert("namespaced".into(), json!(namespaced));
    if let Some(kind) = r.get("responseKind") {
        put_group_version_kind(&mut parent, kind);
    }
    parent.insert("verbs".into(), verbs(r));
    for key in ["shortNames", "categories"] {
        if let Some(list) = r.get(key).and_then(Value::as_array)
            && !list.is_empty()
        {
            parent.insert(key.into(), Value::Array(list.clone()));
        }
    }
    if !singular.is_empty() {
        out.push(Value::Object(parent));
    }
    for s in r
        .get("subresources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // Upstream drops a subresource without a response kind.
        let Some(kind) = s.get("responseKind") else {
            continue;
        };
        let mut sub = Map::new();
        sub.insert(
            "name".into(),
            json!(format!("{name}/{}", text(s, "subresource"))),
        );
        sub.insert("singularName".into(), json!(singular));
        sub.insert("namespaced".into(), json!(namespaced));
        put_group_version_kind(&mut sub, kind);
        sub.insert("verbs".into(), verbs(s));
        out.push(Value::Object(sub));
    }
    out
}

/// `group` and `version` only when set (Go's omitempty), `kind` always.
fn put_group_version_kind(obj: &mut Map<String, Value>, gvk: &Value) {
    for key in ["group", "version"] {
        if let Some(v) = gvk.get(key).and_then(Value::as_str)
            && !v.is_empty()
        {
            obj.insert(key.into(), json!(v));
        }
    }
    let kind = gvk.get("kind").and_then(Value::as_str).unwrap_or("");
    obj.insert("kind".into(), json!(kind));
}

fn verbs(v: &Value) -> Value {
    v.get("verbs")
        .filter(|v| v.is_array())
        .cloned()
        .unwrap_or_else(|| json!([]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_documents_are_not_split() {
        assert!(split(&json!({"kind": "APIGroupList", "groups": []})).is_none());
        assert!(split(&json!({"kind": "APIVersions", "versions": ["v1"]})).is_none());
    }

    #[test]
    fn aggregated_groups_and_resources_convert_as_client_go() {
        let doc = json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [
                {"metadata": {"name": "autoscaling"}, "versions": [
                    {"version": "v3", "freshness": "Stale"},
                    {"version": "v2", "freshness": "Current", "resources": [
                        {"resource": "horizontalpodautoscalers", "singularResource": "horizontalpodautoscaler",
                         "scope": "Namespaced", "responseKind": {"group": "", "version": "", "kind": "HorizontalPodAutoscaler"},
                         "verbs": ["get", "list"], "shortNames": ["hpa"], "categories": ["all"],
                         "subresources": [
                            {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "HorizontalPodAutoscaler"}, "verbs": ["get"]},
                            {"subresource": "nokind", "verbs": ["get"]},
                         ]},
                    ]},
                    {"version": "v1", "freshness": "Current"},
                ]},
                {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": [
                    {"resource": "deployments", "singularResource": "deployment", "scope": "Namespaced",
                     "responseKind": {"kind": "Deployment"}, "verbs": ["get"],
                     "subresources": [{"subresource": "scale",
                        "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch"]}]},
                    {"resource": "legacy", "scope": "Cluster", "responseKind": {"kind": "Legacy"}, "verbs": [],
                     "subresources": [{"subresource": "status", "responseKind": {"kind": "Legacy"}, "verbs": ["get"]}]},
                ]}]},
            ],
        });
        let Split { groups, lists } = split(&doc).unwrap();
        assert_eq!(
            groups[0],
            json!({"name": "autoscaling",
                   "versions": [{"groupVersion": "autoscaling/v2", "version": "v2"}, {"groupVersion": "autoscaling/v1", "version": "v1"}],
                   "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}})
        );
        let gvs: Vec<&str> = lists.iter().map(|(gv, _)| gv.as_str()).collect();
        assert_eq!(gvs, ["autoscaling/v2", "autoscaling/v1", "apps/v1"]);
        assert_eq!(
            lists[0].1["resources"],
            json!([
                {"name": "horizontalpodautoscalers", "singularName": "horizontalpodautoscaler", "namespaced": true,
                 "kind": "HorizontalPodAutoscaler", "verbs": ["get", "list"], "shortNames": ["hpa"], "categories": ["all"]},
                {"name": "horizontalpodautoscalers/status", "singularName": "horizontalpodautoscaler", "namespaced": true,
                 "kind": "HorizontalPodAutoscaler", "verbs": ["get"]},
            ])
        );
        assert_eq!(lists[1].1["resources"], json!([]));
        assert_eq!(lists[1].1["groupVersion"], "autoscaling/v1");
        assert_eq!(
            lists[2].1["resources"],
            json!([
                {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": ["get"]},
                {"name": "deployments/scale", "singularName": "deployment", "namespaced": true,
                 "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch"]},
                {"name": "legacy/status", "singularName": "", "namespaced": false, "kind": "Legacy", "verbs": ["get"]},
            ])
        );
    }

    #[test]
    fn the_core_group_has_no_name() {
        let doc = json!({"kind": "APIGroupDiscoveryList", "items": [
            {"metadata": {"creationTimestamp": null}, "versions": [{"version": "v1", "resources": [
                {"resource": "pods", "singularResource": "pod", "scope": "Namespaced", "responseKind": {"kind": "Pod"}, "verbs": ["list"]}]}]}]});
        let Split { groups, lists } = split(&doc).unwrap();
        assert_eq!(groups[0]["name"], "");
        assert_eq!(groups[0]["preferredVersion"]["groupVersion"], "v1");
        assert_eq!(lists[0].0, "v1");
        assert_eq!(lists[0].1["resources"][0]["name"], "pods");
    }
}
