//! The `ResourceInfo` of a custom resource version. The rest of the server handles resources
//! as `&'static ResourceInfo` (discovery, admission, RBAC and the store all share the built-in
//! table's shape), so a CRD's names are interned and its infos leaked once per distinct shape:
//! re-creating the same CRD reuses them, so memory grows only with distinct definitions.

use api_types::registry::{GroupVersion, ResourceInfo, Subresource, Verb};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// Every verb: custom resources support them all, as upstream serves them.
const VERBS: &[Verb] = &Verb::ALL;
const SUB_VERBS: &[Verb] = &[Verb::Get, Verb::Patch, Verb::Update];

static STRINGS: LazyLock<Mutex<HashSet<&'static str>>> =
    LazyLock::new(|| Mutex::new(HashSet::new()));

/// The shape of one info, as the key of the leaked ones.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Shape {
    group: String,
    version: String,
    kind: String,
    plural: String,
    singular: String,
    namespaced: bool,
    short_names: Vec<String>,
    categories: Vec<String>,
    status: bool,
    scale: bool,
    storage_version: String,
}

static INFOS: LazyLock<Mutex<HashMap<Shape, &'static ResourceInfo>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn intern(s: &str) -> &'static str {
    let mut strings = STRINGS.lock();
    if let Some(found) = strings.get(s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    strings.insert(leaked);
    leaked
}

fn intern_all(items: &[String]) -> &'static [&'static str] {
    let interned: Vec<&'static str> = items.iter().map(|s| intern(s)).collect();
    Box::leak(interned.into_boxed_slice())
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The info of `version` (one entry of `spec.versions`) of `crd`, named by the CRD's
/// accepted names (`status.acceptedNames`, falling back to `spec.names`).
pub fn resource_info(crd: &Value, version: &Value, storage_version: &str) -> &'static ResourceInfo {
    let spec = &crd["spec"];
    let names = if crd["status"]["acceptedNames"]["plural"].is_string() {
        &crd["status"]["acceptedNames"]
    } else {
        &spec["names"]
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let kind = text(&names["kind"]);
    let plural = text(&names["plural"]);
    let singular = match text(&names["singular"]) {
        s if s.is_empty() => kind.to_lowercase(),
        s => s,
    };
    let shape = Shape {
        group: text(&spec["group"]),
        version: text(&version["name"]),
        kind,
        plural,
        singular,
        namespaced: spec["scope"] != "Cluster",
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
        status: version["subresources"]["status"].is_object(),
        scale: version["subresources"]["scale"].is_object(),
        storage_version: storage_version.to_string(),
    };
    let mut infos = INFOS.lock();
    if let Some(info) = infos.get(&shape) {
        return info;
    }
    let info = leak(&shape);
    infos.insert(shape, info);
    info
}

fn leak(shape: &Shape) -> &'static ResourceInfo {
    let kind = intern(&shape.kind);
    let mut subresources = Vec::new();
    // Discovery lists subresources alphabetically: scale before status.
    if shape.scale {
        subresources.push(Subresource {
            name: "scale",
            kind: "Scale",
            group_version: Some(GroupVersion::new("autoscaling", "v1")),
            verbs: SUB_VERBS,
        });
    }
    if shape.status {
        subresources.push(Subresource {
            name: "status",
            kind,
            group_version: None,
            verbs: SUB_VERBS,
        });
    }
    let group = intern(&shape.group);
    Box::leak(Box::new(ResourceInfo {
        group,
        version: intern(&shape.version),
        kind,
        plural: intern(&shape.plural),
        singular: intern(&shape.singular),
        namespaced: shape.namespaced,
        verbs: VERBS,
        short_names: intern_all(&shape.short_names),
        categories: intern_all(&shape.categories),
        subresources: Box::leak(subresources.into_boxed_slice()),
        storage: Some(GroupVersion::new(group, intern(&shape.storage_version))),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Value {
        json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                          "shortNames": ["ct"], "categories": ["all"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}},
                ],
            },
        })
    }

    #[test]
    fn info_carries_names_scope_and_subresources() {
        let crd = crd();
        let info = resource_info(&crd, &crd["spec"]["versions"][0], "v1");
        assert_eq!(
            (info.group, info.version, info.kind, info.plural),
            ("stable.example.com", "v1", "CronTab", "crontabs")
        );
        assert!(info.namespaced);
        assert_eq!(info.short_names, &["ct"]);
        assert_eq!(info.categories, &["all"]);
        let subs: Vec<&str> = info.subresources.iter().map(|s| s.name).collect();
        assert_eq!(subs, ["scale", "status"]);
        assert!(info.supports(Verb::DeleteCollection));
    }

    #[test]
    fn the_same_shape_is_leaked_once() {
        let crd = crd();
        let a = resource_info(&crd, &crd["spec"]["versions"][0], "v1");
        let b = resource_info(&crd, &crd["spec"]["versions"][0], "v1");
        assert!(std::ptr::eq(a, b));
        let mut cluster = crd.clone();
        cluster["spec"]["scope"] = json!("Cluster");
        let c = resource_info(&cluster, &cluster["spec"]["versions"][0], "v1");
        assert!(!c.namespaced);
        assert!(!std::ptr::eq(a, c));
    }
}
