//! Discovery documents built from `api_types::registry`: the legacy `/api`, `/apis`,
//! `/apis/<group>`, `/api/v1` and `/apis/<group>/<version>` documents (`APIVersions`,
//! `APIGroupList`, `APIGroup`, `APIResourceList`) and the aggregated `apidiscovery.k8s.io`
//! `APIGroupDiscoveryList` that kubectl 1.33 asks for first.
//!
//! Field names and omissions follow the Go types (`omitempty` fields are left out when empty,
//! the others always present) because clients decode them strictly by name.

use api_types::registry::{self, ApiGroup, ResourceInfo, Subresource};
use http::{HeaderValue, Method, Response, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::crd::registry::{CrdRegistry, CustomGroup};
use crate::http::negotiation::{Conversion, EndpointRestrictions, negotiate_output};
use crate::http::response::{Body, encode};
use crate::http::status::ApiError;
use std::sync::Arc;

/// `/api`: the legacy core group's versions (`APIVersions`, which upstream sends without
/// `apiVersion`). `server_address` is the `host:port` clients should use
/// (`serverAddressByClientCIDRs` is a required field).
pub fn api_versions(server_address: &str) -> Value {
    let versions: Vec<&str> = registry::group("")
        .map(|g| g.versions.to_vec())
        .unwrap_or_default();
    json!({
        "kind": "APIVersions",
        "versions": versions,
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    })
}

fn group_version_for_discovery(group: &str, version: &str) -> Value {
    json!({
        "groupVersion": registry::api_version(group, version),
        "version": version,
    })
}

/// One `APIGroup` (what `/apis/<group>` returns and `/apis` lists).
fn api_group_object(g: &ApiGroup) -> Value {
    group_object(g.name, g.versions)
}

/// An `APIGroup` of `name` serving `versions` (most preferred first).
fn group_object<S: AsRef<str>>(name: &str, versions: &[S]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| group_version_for_discovery(name, v.as_ref()))
        .collect();
    let mut obj = Map::new();
    obj.insert("name".into(), json!(name));
    obj.insert("versions".into(), Value::Array(list));
    if let Some(preferred) = versions.first() {
        obj.insert(
            "preferredVersion".into(),
            group_version_for_discovery(name, preferred.as_ref()),
        );
    }
    Value::Object(obj)
}

/// `/apis`: every named group with its versions and preferred version (`APIGroupList`).
pub fn api_group_list() -> Value {
    let groups: Vec<Value> = registry::groups()
        .iter()
        .filter(|g| !g.is_core())
        .map(api_group_object)
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`: one named group (`APIGroup`); `None` for unknown groups and for core.
pub fn api_group(name: &str) -> Option<Value> {
    let g = registry::group(name).filter(|g| !g.is_core())?;
    Some(with_group_kind(api_group_object(g)))
}

/// Puts `kind: APIGroup` and `apiVersion: v1` first, as upstream prints them.
fn with_group_kind(mut v: Value) -> Value {
    if let Value::Object(obj) = &mut v {
        // `kind` and `apiVersion` first, as upstream prints them.
        let mut out = Map::new();
        out.insert("kind".into(), json!("APIGroup"));
        out.insert("apiVersion".into(), json!("v1"));
        out.append(obj);
        return Value::Object(out);
    }
    v
}

fn verbs(v: &[registry::Verb]) -> Vec<&'static str> {
    v.iter().map(|v| v.as_str()).collect()
}

/// One `APIResource` of a main resource.
fn api_resource(r: &ResourceInfo) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), json!(r.plural));
    obj.insert("singularName".into(), json!(r.singular));
    obj.insert("namespaced".into(), json!(r.namespaced));
    obj.insert("kind".into(), json!(r.kind));
    obj.insert("verbs".into(), json!(verbs(r.verbs)));
    if !r.short_names.is_empty() {
        obj.insert("shortNames".into(), json!(r.short_names));
    }
    if !r.categories.is_empty() {
        obj.insert("categories".into(), json!(r.categories));
    }
    Value::Object(obj)
}

/// One `APIResource` of a subresource (`pods/status`): `singularName` is empty, and `group`
/// and `version` are set when its kind lives elsewhere (`deployments/scale` is autoscaling/v1).
fn api_subresource(r: &ResourceInfo, s: &Subresource) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), json!(format!("{}/{}", r.plural, s.name)));
    obj.insert("singularName".into(), json!(""));
    obj.insert("namespaced".into(), json!(r.namespaced));
    if let Some(gv) = s.group_version {
        obj.insert("group".into(), json!(gv.group));
        obj.insert("version".into(), json!(gv.version));
    }
    obj.insert("kind".into(), json!(s.kind));
    obj.insert("verbs".into(), json!(verbs(s.verbs)));
    Value::Object(obj)
}

/// `/api/v1` or `/apis/<group>/<version>`: the resources and subresources served there
/// (`APIResourceList`); `None` when the group-version is not served. The core list carries no
/// `apiVersion`, as upstream's.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let g = registry::group(group)?;
    if !g.versions.contains(&version) {
        return None;
    }
    Some(resource_list_of(
        group,
        version,
        registry::resources_in(group, version),
    ))
}

fn resource_list_of<'a>(
    group: &str,
    version: &str,
    infos: impl IntoIterator<Item = &'a ResourceInfo>,
) -> Value {
    let mut resources = Vec::new();
    for r in infos {
        resources.push(api_resource(r));
        resources.extend(r.subresources.iter().map(|s| api_subresource(r, s)));
    }
    let mut obj = Map::new();
    obj.insert("kind".into(), json!("APIResourceList"));
    if !group.is_empty() {
        obj.insert("apiVersion".into(), json!("v1"));
    }
    obj.insert(
        "groupVersion".into(),
        json!(registry::api_version(group, version)),
    );
    obj.insert("resources".into(), Value::Array(resources));
    Value::Object(obj)
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// One `APIResourceDiscovery`. As upstream's conversion from the legacy list, `responseKind`
/// carries a group and version only when they differ from the resource's own.
fn resource_discovery(r: &ResourceInfo) -> Value {
    let mut obj = Map::new();
    obj.insert("resource".into(), json!(r.plural));
    obj.insert("responseKind".into(), gvk("", "", r.kind));
    obj.insert(
        "scope".into(),
        json!(if r.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    obj.insert("singularResource".into(), json!(r.singular));
    obj.insert("verbs".into(), json!(verbs(r.verbs)));
    if !r.short_names.is_empty() {
        obj.insert("shortNames".into(), json!(r.short_names));
    }
    if !r.categories.is_empty() {
        obj.insert("categories".into(), json!(r.categories));
    }
    if !r.subresources.is_empty() {
        let subs: Vec<Value> = r
            .subresources
            .iter()
            .map(|s| {
                let (g, v) = s
                    .group_version
                    .map_or(("", ""), |gv| (gv.group, gv.version));
                json!({
                    "subresource": s.name,
                    "responseKind": gvk(g, v, s.kind),
                    "verbs": verbs(s.verbs),
                })
            })
            .collect();
        obj.insert("subresources".into(), Value::Array(subs));
    }
    Value::Object(obj)
}

/// One `APIGroupDiscovery`: the group's versions, most preferred first, each with its
/// resources and `freshness: Current`.
fn group_discovery(g: &ApiGroup) -> Value {
    group_discovery_of(g.name, g.versions, |v| {
        registry::resources_in(g.name, v).collect()
    })
}

/// The `APIGroupDiscovery` of `name` serving `versions`, each with `resources(version)`.
fn group_discovery_of<S: AsRef<str>>(
    name: &str,
    versions: &[S],
    resources: impl Fn(&str) -> Vec<&ResourceInfo>,
) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let v = v.as_ref();
            let resources: Vec<Value> = resources(v).into_iter().map(resource_discovery).collect();
            let mut obj = Map::new();
            obj.insert("version".into(), json!(v));
            if !resources.is_empty() {
                obj.insert("resources".into(), Value::Array(resources));
            }
            obj.insert("freshness".into(), json!("Current"));
            Value::Object(obj)
        })
        .collect();
    // ObjectMeta's name is omitempty (so the core group's metadata has no name); Go prints
    // the zero creationTimestamp as null.
    let mut meta = Map::new();
    if !name.is_empty() {
        meta.insert("name".into(), json!(name));
    }
    meta.insert("creationTimestamp".into(), Value::Null);
    json!({"metadata": meta, "versions": versions})
}

/// The aggregated discovery document (`APIGroupDiscoveryList` in `apidiscovery.k8s.io/<version>`,
/// `v2` or `v2beta1`, which share their shape): the core group for `/api` (`legacy`), every
/// named group in priority order for `/apis`.
pub fn aggregated_discovery(legacy: bool, version: &str) -> Value {
    let items: Vec<Value> = registry::groups()
        .iter()
        .filter(|g| g.is_core() == legacy)
        .map(group_discovery)
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// Serves the discovery paths; everything else is left to the caller (`None`).
#[derive(Clone)]
pub struct DiscoveryHandler {
    server_address: String,
    /// The custom resources served besides the built-in ones.
    crds: Option<Arc<CrdRegistry>>,
}

impl DiscoveryHandler {
    /// A handler advertising `server_address` (`host:port`) in `/api`.
    pub fn new(server_address: impl Into<String>) -> Self {
        DiscoveryHandler {
            server_address: server_address.into(),
            crds: None,
        }
    }

    /// The same handler listing the custom resources of `crds` too (after the built-in
    /// groups, as upstream orders CRD groups after its own).
    pub fn with_crds(mut self, crds: Arc<CrdRegistry>) -> Self {
        self.crds = Some(crds);
        self
    }

    fn custom_groups(&self) -> Vec<CustomGroup> {
        self.crds.as_ref().map(|c| c.groups()).unwrap_or_default()
    }

    fn custom_group(&self, name: &str) -> Option<Value> {
        let group = self.custom_groups().into_iter().find(|g| g.name == name)?;
        Some(with_group_kind(group_object(&group.name, &group.versions)))
    }

    fn custom_resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let infos = self.crds.as_ref()?.resources_in(group, version);
        (!infos.is_empty()).then(|| resource_list_of(group, version, infos))
    }

    /// Appends the custom groups to `/apis` (aggregated or legacy form).
    fn with_custom_groups(&self, mut doc: Value, aggregated: bool) -> Value {
        let key = if aggregated { "items" } else { "groups" };
        let Some(list) = doc[key].as_array_mut() else {
            return doc;
        };
        for group in self.custom_groups() {
            list.push(if aggregated {
                group_discovery_of(&group.name, &group.versions, |v| {
                    self.crds
                        .as_ref()
                        .map(|c| c.resources_in(&group.name, v))
                        .unwrap_or_default()
                })
            } else {
                group_object(&group.name, &group.versions)
            });
        }
        doc
    }

    /// Whether `path` is one of the discovery paths (any group or version, served or not).
    pub fn is_discovery_path(path: &str) -> bool {
        let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        matches!(
            segs.as_slice(),
            ["api"] | ["api", _] | ["apis"] | ["apis", _] | ["apis", _, _]
        )
    }

    /// Answers a GET (or HEAD) of a discovery path with the document the `Accept` header
    /// negotiates, a 404 Status for an unknown group or version, a 406 when nothing acceptable
    /// can be produced; `None` for other methods and paths.
    pub fn serve<B>(&self, req: &http::Request<B>) -> Option<Response<Body>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return None;
        }
        let path = req.uri().path().trim_end_matches('/');
        let segs: Vec<&str> = path.split('/').skip(1).collect();
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        let root = matches!(segs.as_slice(), ["api"] | ["apis"]);
        let restrictions = if root {
            EndpointRestrictions::DISCOVERY
        } else {
            EndpointRestrictions::NONE
        };
        if !Self::is_discovery_path(path) {
            return None;
        }
        let media = match negotiate_output(accept, restrictions) {
            Ok(m) => m,
            Err(e) => return Some(e.into_response()),
        };
        let doc = match (segs.as_slice(), media.conversion) {
            (["api"], Conversion::AggregatedDiscovery { version }) => {
                Some(aggregated_discovery(true, version))
            }
            (["apis"], Conversion::AggregatedDiscovery { version }) => {
                Some(self.with_custom_groups(aggregated_discovery(false, version), true))
            }
            (["api"], _) => Some(api_versions(&self.server_address)),
            (["apis"], _) => Some(self.with_custom_groups(api_group_list(), false)),
            (["api", version], _) => api_resource_list("", version),
            (["apis", group], _) => api_group(group).or_else(|| self.custom_group(group)),
            (["apis", group, version], _) => api_resource_list(group, version)
                .or_else(|| self.custom_resource_list(group, version)),
            _ => None,
        };
        let Some(doc) = doc else {
            // Upstream's mux answers unknown groups and versions with a plain 404.
            return Some(ApiError::path_not_found().into_response());
        };
        let mut resp = encode(StatusCode::OK, &doc, &media);
        if root {
            // The answer depends on Accept; caches must keep both forms apart.
            resp.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
        }
        Some(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
    use std::collections::BTreeSet;

    /// The JSON field names of upstream's Go types (required ones first, then optional).
    fn check_fields(obj: &Value, required: &[&str], optional: &[&str], what: &str) {
        let map = obj
            .as_object()
            .unwrap_or_else(|| panic!("{what} is not an object"));
        for key in required {
            assert!(map.contains_key(*key), "{what} lacks {key}: {obj}");
        }
        for key in map.keys() {
            assert!(
                required.contains(&key.as_str()) || optional.contains(&key.as_str()),
                "{what} has unexpected field {key}"
            );
        }
    }

    fn strings(v: &Value) -> Vec<&str> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn legacy_documents_decode_as_upstream_types() {
        let v: metav1::APIVersions =
            serde_json::from_value(api_versions("10.0.0.1:6443")).expect("APIVersions");
        assert_eq!(v.versions, vec!["v1".to_string()]);
        assert_eq!(
            v.server_address_by_client_cidrs[0].server_address,
            "10.0.0.1:6443"
        );
        let groups: metav1::APIGroupList =
            serde_json::from_value(api_group_list()).expect("APIGroupList");
        let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
        let want: Vec<&str> = registry::groups()
            .iter()
            .filter(|g| !g.is_core())
            .map(|g| g.name)
            .collect();
        assert_eq!(names, want);
        let autoscaling = groups
            .groups
            .iter()
            .find(|g| g.name == "autoscaling")
            .expect("autoscaling");
        assert_eq!(
            autoscaling
                .preferred_version
                .as_ref()
                .map(|p| p.group_version.as_str()),
            Some("autoscaling/v2")
        );
        assert_eq!(autoscaling.versions.len(), 2);
        let apps: metav1::APIGroup =
            serde_json::from_value(api_group("apps").expect("apps")).expect("APIGroup");
        assert_eq!(apps.versions[0].group_version, "apps/v1");
        assert!(api_group("").is_none());
        assert!(api_group("nope.example.com").is_none());
        for g in registry::groups() {
            for v in g.versions {
                let list: metav1::APIResourceList =
                    serde_json::from_value(api_resource_list(g.name, v).expect("served"))
                        .expect("APIResourceList");
                assert_eq!(list.group_version, registry::api_version(g.name, v));
            }
        }
        assert!(api_resource_list("apps", "v1beta1").is_none());
        assert!(api_resource_list("", "v2").is_none());
    }

    #[test]
    fn legacy_field_names_match_upstream() {
        check_fields(
            &api_versions("h:1"),
            &["kind", "versions", "serverAddressByClientCIDRs"],
            &["apiVersion"],
            "APIVersions",
        );
        let list = api_group_list();
        check_fields(
            &list,
            &["kind", "apiVersion", "groups"],
            &[],
            "APIGroupList",
        );
        for g in list["groups"].as_array().expect("groups") {
            check_fields(
                g,
                &["name", "versions"],
                &["preferredVersion", "serverAddressByClientCIDRs"],
                "APIGroup",
            );
            for v in g["versions"].as_array().expect("versions") {
                check_fields(
                    v,
                    &["groupVersion", "version"],
                    &[],
                    "GroupVersionForDiscovery",
                );
            }
        }
        let core = api_resource_list("", "v1").expect("core");
        check_fields(
            &core,
            &["kind", "groupVersion", "resources"],
            &[],
            "core APIResourceList",
        );
        let apps = api_resource_list("apps", "v1").expect("apps");
        check_fields(
            &apps,
            &["kind", "apiVersion", "groupVersion", "resources"],
            &[],
            "APIResourceList",
        );
        for list in [&core, &apps] {
            for r in list["resources"].as_array().expect("resources") {
                check_fields(
                    r,
                    &["name", "singularName", "namespaced", "kind", "verbs"],
                    &[
                        "group",
                        "version",
                        "shortNames",
                        "categories",
                        "storageVersionHash",
                    ],
                    "APIResource",
                );
            }
        }
    }

    #[test]
    fn legacy_lists_hold_every_resource_and_subresource() {
        for r in registry::all() {
            let list = api_resource_list(r.group, r.version).expect("served");
            let resources = list["resources"].as_array().expect("resources");
            let find = |name: &str| {
                resources
                    .iter()
                    .find(|e| e["name"] == name)
                    .unwrap_or_else(|| panic!("{name} missing from {}", r.api_version()))
            };
            let e = find(r.plural);
            assert_eq!(e["singularName"], r.singular);
            assert_eq!(e["namespaced"], r.namespaced);
            assert_eq!(e["kind"], r.kind);
            assert_eq!(strings(&e["verbs"]), verbs(r.verbs), "{}", r.plural);
            assert_eq!(
                strings(&e["shortNames"]),
                r.short_names.to_vec(),
                "{}",
                r.plural
            );
            assert_eq!(
                strings(&e["categories"]),
                r.categories.to_vec(),
                "{}",
                r.plural
            );
            for s in r.subresources {
                let e = find(&format!("{}/{}", r.plural, s.name));
                assert_eq!(e["kind"], s.kind);
                assert_eq!(e["singularName"], "");
                assert_eq!(strings(&e["verbs"]), verbs(s.verbs));
                let gv = s.group_version.map(|gv| (gv.group, gv.version));
                assert_eq!(
                    e.get("group")
                        .and_then(Value::as_str)
                        .zip(e.get("version").and_then(Value::as_str)),
                    gv,
                    "{}/{}",
                    r.plural,
                    s.name
                );
            }
        }
        // Spot checks of well-known entries.
        let core = api_resource_list("", "v1").expect("core");
        let names = strings(&Value::Array(
            core["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .map(|r| r["name"].clone())
                .collect(),
        ))
        .into_iter()
        .map(str::to_string)
        .collect::<BTreeSet<_>>();
        for want in [
            "pods",
            "pods/status",
            "pods/log",
            "pods/eviction",
            "namespaces/finalize",
        ] {
            assert!(names.contains(want), "{want}");
        }
        let apps = api_resource_list("apps", "v1").expect("apps");
        let scale = apps["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .expect("deployments/scale");
        assert_eq!(
            scale,
            &json!({"name": "deployments/scale", "singularName": "", "namespaced": true,
                    "group": "autoscaling", "version": "v1", "kind": "Scale",
                    "verbs": ["get", "patch", "update"]})
        );
    }

    #[test]
    fn aggregated_documents_hold_every_resource() {
        for version in ["v2", "v2beta1"] {
            let api = aggregated_discovery(true, version);
            let apis = aggregated_discovery(false, version);
            for doc in [&api, &apis] {
                assert_eq!(doc["kind"], "APIGroupDiscoveryList");
                assert_eq!(doc["apiVersion"], format!("apidiscovery.k8s.io/{version}"));
            }
            assert_eq!(api["items"].as_array().expect("items").len(), 1);
            for r in registry::all() {
                let doc = if r.group.is_empty() { &api } else { &apis };
                let group = doc["items"]
                    .as_array()
                    .expect("items")
                    .iter()
                    .find(|g| {
                        g["metadata"]
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            == r.group
                    })
                    .unwrap_or_else(|| panic!("group {:?} missing", r.group));
                let ver = group["versions"]
                    .as_array()
                    .expect("versions")
                    .iter()
                    .find(|v| v["version"] == r.version)
                    .unwrap_or_else(|| panic!("{} missing", r.api_version()));
                assert_eq!(ver["freshness"], "Current");
                let e = ver["resources"]
                    .as_array()
                    .expect("resources")
                    .iter()
                    .find(|e| e["resource"] == r.plural)
                    .unwrap_or_else(|| panic!("{} missing", r.plural));
                assert_eq!(e["singularResource"], r.singular);
                assert_eq!(
                    e["scope"],
                    if r.namespaced {
                        "Namespaced"
                    } else {
                        "Cluster"
                    }
                );
                assert_eq!(
                    e["responseKind"],
                    json!({"group": "", "version": "", "kind": r.kind})
                );
                assert_eq!(strings(&e["verbs"]), verbs(r.verbs));
                assert_eq!(strings(&e["shortNames"]), r.short_names.to_vec());
                assert_eq!(strings(&e["categories"]), r.categories.to_vec());
                let subs: Vec<&str> = e
                    .get("subresources")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|s| s["subresource"].as_str()).collect())
                    .unwrap_or_default();
                let want: Vec<&str> = r.subresources.iter().map(|s| s.name).collect();
                assert_eq!(subs, want, "{}", r.plural);
            }
            // Versions are listed most preferred first.
            let autoscaling = apis["items"]
                .as_array()
                .expect("items")
                .iter()
                .find(|g| g["metadata"]["name"] == "autoscaling")
                .expect("autoscaling");
            let versions: Vec<&str> = autoscaling["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .filter_map(|v| v["version"].as_str())
                .collect();
            assert_eq!(versions, ["v2", "v1"]);
        }
    }

    #[test]
    fn aggregated_field_names_match_upstream() {
        for doc in [
            aggregated_discovery(true, "v2"),
            aggregated_discovery(false, "v2"),
        ] {
            check_fields(
                &doc,
                &["kind", "apiVersion", "items"],
                &["metadata"],
                "APIGroupDiscoveryList",
            );
            for g in doc["items"].as_array().expect("items") {
                check_fields(
                    g,
                    &["metadata"],
                    &["kind", "apiVersion", "versions"],
                    "APIGroupDiscovery",
                );
                for v in g["versions"].as_array().expect("versions") {
                    check_fields(
                        v,
                        &["version"],
                        &["resources", "freshness"],
                        "APIVersionDiscovery",
                    );
                    for r in v["resources"].as_array().into_iter().flatten() {
                        check_fields(
                            r,
                            &["resource", "scope", "singularResource", "verbs"],
                            &["responseKind", "shortNames", "categories", "subresources"],
                            "APIResourceDiscovery",
                        );
                        check_fields(
                            &r["responseKind"],
                            &["group", "version", "kind"],
                            &[],
                            "GroupVersionKind",
                        );
                        for s in r["subresources"].as_array().into_iter().flatten() {
                            check_fields(
                                s,
                                &["subresource", "verbs"],
                                &["responseKind", "acceptedTypes"],
                                "APISubresourceDiscovery",
                            );
                        }
                    }
                }
            }
        }
        let api = aggregated_discovery(true, "v2");
        // The core group's name is empty, so omitted.
        assert!(api["items"][0]["metadata"].get("name").is_none());
        let pods = api["items"][0]["versions"][0]["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["resource"] == "pods")
            .expect("pods");
        let eviction = pods["subresources"]
            .as_array()
            .expect("subresources")
            .iter()
            .find(|s| s["subresource"] == "eviction")
            .expect("eviction");
        assert_eq!(
            eviction,
            &json!({"subresource": "eviction",
                    "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                    "verbs": ["create"]})
        );
    }

    fn get(path: &str, accept: Option<&str>) -> Option<Response<Body>> {
        let mut req = http::Request::get(path);
        if let Some(a) = accept {
            req = req.header(header::ACCEPT, a);
        }
        DiscoveryHandler::new("127.0.0.1:6443").serve(&req.body(()).expect("request"))
    }

    async fn body_json(resp: Response<Body>) -> Value {
        use http_body_util::BodyExt;
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        serde_json::from_slice(&bytes).expect("json")
    }

    #[tokio::test]
    async fn handler_negotiates_aggregated_or_legacy() {
        const KUBECTL: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        let resp = get("/apis", Some(KUBECTL)).expect("served");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        assert_eq!(resp.headers()[header::VARY], "Accept");
        assert_eq!(body_json(resp).await, aggregated_discovery(false, "v2"));

        let resp = get("/api", Some(KUBECTL)).expect("served");
        assert_eq!(body_json(resp).await, aggregated_discovery(true, "v2"));

        let resp = get("/apis/", Some("application/json, */*")).expect("served");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(body_json(resp).await, api_group_list());

        let resp = get("/api", None).expect("served");
        assert_eq!(body_json(resp).await, api_versions("127.0.0.1:6443"));

        let resp = get("/apis/apps/v1", Some(KUBECTL)).expect("served");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body_json(resp).await,
            api_resource_list("apps", "v1").expect("apps")
        );

        let resp = get("/api/v1", Some("application/yaml")).expect("served");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/yaml");

        let resp = get("/apis/apps", None).expect("served");
        assert_eq!(body_json(resp).await["kind"], "APIGroup");

        let resp = get("/apis/nope.example.com/v1", None).expect("served");
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            body_json(resp).await["message"],
            "the server could not find the requested resource"
        );

        let resp = get("/apis", Some("application/vnd.kubernetes.protobuf")).expect("served");
        assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);

        assert!(get("/api/v1/pods", None).is_none());
        assert!(get("/healthz", None).is_none());
        let post = http::Request::post("/apis").body(()).expect("request");
        assert!(DiscoveryHandler::new("h:1").serve(&post).is_none());
    }
}
