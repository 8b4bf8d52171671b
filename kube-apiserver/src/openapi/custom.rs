//! OpenAPI documents of custom resources, as upstream's apiextensions OpenAPI controllers
//! publish them: for each served version of every established CRD, its paths and the schema
//! of its kind (`<reversed group>.<version>.<Kind>`, from `openAPIV3Schema` with
//! `apiVersion`, `kind` and `metadata` filled in) and of its list, in the v3 document of the
//! group-version (`/openapi/v3/apis/<group>/<version>`, listed in the v3 root) and merged into
//! the v2 document (built-ins win conflicts, as upstream's static spec does).
//!
//! The CRD controller calls [`CustomDocuments::rebuild`] with every established CRD after each
//! change; the documents are built from them on the next OpenAPI request, and requests read
//! the last built snapshot.

mod schema;

use super::definitions::{Definitions, V2_REF_PREFIX, V3_REF_PREFIX, wrap_ref_siblings};
use super::documents::{Encoded, referenced, render_paths, root_of, v2_value};
use super::operation::{Flavor, PathItem};
use super::paths::{CustomSubresources, ResourceShape, custom_resource_paths};
use super::schema_walk::{refs_in, visit_mut};
use api_types::registry::Verb;
use parking_lot::RwLock;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

/// The documents of every established CRD's served group-versions.
#[derive(Default)]
pub struct CustomDocuments {
    published: RwLock<Arc<Published>>,
    /// The CRDs given since the documents were last built: they are built on the next
    /// OpenAPI request, not at start-up or on every CRD change.
    pending: parking_lot::Mutex<Option<Vec<Arc<Value>>>>,
}

/// One consistent set of documents.
#[derive(Default)]
struct Published {
    /// The v3 documents of custom group-versions, by key (`apis/<group>/<version>`); none
    /// collides with a built-in document.
    documents: BTreeMap<String, Encoded>,
    /// The v3 root listing the built-in and the custom documents; `None` when there is no
    /// custom document (the built-in root is served).
    root: Option<Encoded>,
    /// What the custom resources add to the v2 document.
    v2_paths: Map<String, Value>,
    v2_definitions: Map<String, Value>,
    /// The merged v2 document, built on the first request for it.
    v2: OnceLock<Encoded>,
}

impl Published {
    fn same_documents(&self, other: &Published) -> bool {
        self.documents.len() == other.documents.len()
            && self
                .documents
                .iter()
                .zip(&other.documents)
                .all(|((k1, d1), (k2, d2))| k1 == k2 && d1.hash == d2.hash)
            && self.v2_paths == other.v2_paths
            && self.v2_definitions == other.v2_definitions
    }
}

impl CustomDocuments {
    /// Replaces the established CRDs (full objects) the documents are built from. Versions not
    /// served, and CRDs no longer given, disappear from the documents.
    pub fn rebuild(&self, crds: &[Arc<Value>]) {
        *self.pending.lock() = Some(crds.to_vec());
    }

    /// The current documents, built first from CRDs given since the last build.
    fn snapshot(&self) -> Arc<Published> {
        let mut pending = self.pending.lock();
        if let Some(crds) = pending.take() {
            let published = if crds.is_empty() {
                Published::default()
            } else {
                build(super::definitions(), &crds)
            };
            let mut current = self.published.write();
            if !current.same_documents(&published) {
                *current = Arc::new(published);
            }
        }
        drop(pending);
        self.published.read().clone()
    }

    /// The v3 root with the custom documents, when there are any.
    pub fn v3_root(&self) -> Option<Encoded> {
        self.snapshot().root.clone()
    }

    /// The v3 document of a custom group-version (`apis/<group>/<version>`).
    pub fn v3_document(&self, key: &str) -> Option<Encoded> {
        self.snapshot().documents.get(key).cloned()
    }

    /// The v2 document with the custom resources merged in, when there are any.
    pub fn v2_document(&self) -> Option<Encoded> {
        let snapshot = self.snapshot();
        if snapshot.v2_paths.is_empty() && snapshot.v2_definitions.is_empty() {
            return None;
        }
        let doc = snapshot.v2.get_or_init(|| {
            let mut doc = v2_value(super::definitions());
            merge_absent(&mut doc["paths"], &snapshot.v2_paths);
            merge_absent(&mut doc["definitions"], &snapshot.v2_definitions);
            Encoded::new(&doc)
        });
        Some(doc.clone())
    }
}

/// Adds the entries of `extra` that `target` (an object) lacks.
fn merge_absent(target: &mut Value, extra: &Map<String, Value>) {
    if let Value::Object(target) = target {
        for (key, value) in extra {
            target.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// What one served version of a CRD publishes.
struct ServedVersion<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    list_kind: String,
    plural: &'a str,
    namespaced: bool,
    schema: Option<&'a Value>,
    /// `spec.preserveUnknownFields` (legacy CRDs): the v2 schema is then only an object.
    preserve_unknown_fields: bool,
    status: bool,
    scale: bool,
    /// `selectableFields[*].jsonPath` without the leading dot.
    selectable_fields: Vec<&'a str>,
}

impl ServedVersion<'_> {
    /// `com.example.stable.v1.CronTab` for `stable.example.com`/`v1`/`CronTab`.
    fn definition_name(&self, kind: &str) -> String {
        let reversed: Vec<&str> = self.group.split('.').rev().collect();
        format!("{}.{}.{kind}", reversed.join("."), self.version)
    }

    fn key(&self) -> String {
        format!("apis/{}/{}", self.group, self.version)
    }

    fn paths(&self, defs: &Definitions) -> Vec<PathItem> {
        let shape = ResourceShape {
            group: self.group,
            version: self.version,
            kind: self.kind,
            plural: self.plural,
            namespaced: self.namespaced,
            verbs: &Verb::ALL,
        };
        let subresources = CustomSubresources {
            status: self.status,
            scale: self
                .scale
                .then(|| defs.name_of("autoscaling", "v1", "Scale"))
                .flatten(),
        };
        custom_resource_paths(shape, self.definition_name(self.kind), &subresources)
    }

    /// The kind's and the list's definitions, references in `flavor`'s form.
    fn definitions(&self, flavor: Flavor) -> Map<String, Value> {
        let kind_name = self.definition_name(self.kind);
        let gvk =
            |kind: &str| json!([{"group": self.group, "kind": kind, "version": self.version}]);
        let mut kind = schema::kind_schema(self.schema, self.preserve_unknown_fields, flavor);
        kind["x-kubernetes-group-version-kind"] = gvk(self.kind);
        if !self.selectable_fields.is_empty() {
            let fields: Vec<Value> = self
                .selectable_fields
                .iter()
                .map(|path| json!({"fieldPath": path}))
                .collect();
            kind["x-kubernetes-selectable-fields"] = Value::Array(fields);
        }
        let mut list =
            schema::list_schema(&kind_name, self.kind, &self.list_kind, self.plural, flavor);
        list["x-kubernetes-group-version-kind"] = gvk(&self.list_kind);
        if flavor == Flavor::V3 {
            visit_mut(&mut kind, &|s| wrap_ref_siblings(s));
            visit_mut(&mut list, &|s| wrap_ref_siblings(s));
        }
        let mut out = Map::new();
        out.insert(kind_name, kind);
        out.insert(self.definition_name(&self.list_kind), list);
        out
    }
}

/// The served versions of one CRD object.
fn served_versions(crd: &Value) -> Vec<ServedVersion<'_>> {
    let spec = &crd["spec"];
    let (Some(group), Some(kind), Some(plural)) = (
        spec["group"].as_str(),
        spec["names"]["kind"].as_str(),
        spec["names"]["plural"].as_str(),
    ) else {
        return Vec::new();
    };
    let list_kind = spec["names"]["listKind"]
        .as_str()
        .filter(|k| !k.is_empty())
        .map_or_else(|| format!("{kind}List"), str::to_owned);
    let versions = spec["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .filter_map(|v| {
            // Version-level schema and subresources, or the legacy CRD-wide ones.
            let schema = [
                v.pointer("/schema/openAPIV3Schema"),
                spec.pointer("/validation/openAPIV3Schema"),
            ]
            .into_iter()
            .flatten()
            .find(|s| s.is_object());
            let subresources = if v["subresources"].is_object() {
                &v["subresources"]
            } else {
                &spec["subresources"]
            };
            Some(ServedVersion {
                group,
                version: v["name"].as_str()?,
                kind,
                list_kind: list_kind.clone(),
                plural,
                namespaced: spec["scope"].as_str() != Some("Cluster"),
                schema,
                preserve_unknown_fields: spec["preserveUnknownFields"].as_bool() == Some(true),
                status: subresources["status"].is_object(),
                scale: subresources["scale"].is_object(),
                selectable_fields: v["selectableFields"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(|f| f["jsonPath"].as_str())
                    .map(|path| path.trim_start_matches('.'))
                    .collect(),
            })
        })
        .collect()
}

/// Builds every custom document from `crds`.
fn build(defs: &Definitions, crds: &[Arc<Value>]) -> Published {
    let builtin = super::v3_documents();
    // Per group-version: the paths and the v3 definitions of its custom resources.
    let mut by_key: BTreeMap<String, (Vec<PathItem>, Map<String, Value>)> = BTreeMap::new();
    let mut v2_paths = Map::new();
    let mut v2_definitions = Map::new();
    for crd in crds {
        for served in served_versions(crd) {
            let key = served.key();
            if builtin.documents.contains_key(&key) {
                continue;
            }
            let items = served.paths(defs);
            v2_paths.extend(render_paths(&items, Flavor::V2));
            v2_definitions.extend(served.definitions(Flavor::V2));
            let entry = by_key.entry(key).or_default();
            entry.0.extend(items);
            entry.1.extend(served.definitions(Flavor::V3));
        }
    }
    let documents: BTreeMap<String, Encoded> = by_key
        .into_iter()
        .map(|(key, (items, schemas))| (key, Encoded::new(&v3_document(defs, &items, schemas))))
        .collect();
    let root = (!documents.is_empty()).then(|| {
        let all: BTreeMap<&String, &Encoded> = builtin.documents.iter().chain(&documents).collect();
        root_of(all.into_iter())
    });
    Published {
        documents,
        root,
        v2_paths,
        v2_definitions,
        v2: OnceLock::new(),
    }
}

/// The v3 document of one custom group-version: its paths, its kinds' definitions and the
/// built-in definitions they reference.
fn v3_document(defs: &Definitions, items: &[PathItem], custom: Map<String, Value>) -> Value {
    let mut roots: BTreeSet<String> = referenced(items).into_iter().collect();
    for schema in custom.values() {
        roots.extend(
            refs_in(schema)
                .into_iter()
                .filter_map(|r| r.strip_prefix(V3_REF_PREFIX).map(str::to_owned)),
        );
    }
    let names = defs.closure(roots.iter().map(String::as_str));
    let mut schemas = defs.render_v3(&names);
    schemas.extend(custom);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": render_paths(items, Flavor::V3),
        "components": {"schemas": schemas},
    })
}

/// The reference prefix of `flavor`.
fn ref_prefix(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::V2 => V2_REF_PREFIX,
        Flavor::V3 => V3_REF_PREFIX,
    }
}

#[cfg(test)]
mod tests;
