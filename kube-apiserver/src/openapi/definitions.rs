//! The schema definitions of every served kind, generated once from k8s-openapi's `schemars`
//! implementations and decorated with what k8s-openapi does not carry: the
//! `x-kubernetes-group-version-kind` of each kind, the `<Kind>List` types, and the patch/list
//! facts of the strategic-merge table.
//!
//! k8s-openapi already names its schemas as upstream does (`io.k8s.api.core.v1.Pod`,
//! `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`), so no renaming is needed; the generator
//! is pointed at `#/components/schemas/` and the v2 rendering rewrites that prefix.

use super::kinds::{self, KindSchema};
use super::patch_facts;
use super::schema_walk::{refs_in, rewrite_schemas};
use api_types::k8s_openapi::{
    self,
    schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings},
};
use api_types::registry;
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, VecDeque};

/// Where the generator puts references; the v3 location, rewritten for v2.
pub const V3_REF_PREFIX: &str = "#/components/schemas/";
/// Where Swagger 2.0 documents keep definitions.
pub const V2_REF_PREFIX: &str = "#/definitions/";

/// Definition names of the meta types every document's operations use.
pub mod meta {
    pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
    pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
    pub const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
    pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
    pub const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
    pub const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
    pub const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
    pub const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
    pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
    pub const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
    pub const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
}

/// Every definition, with references in the v3 form, plus the kind table they came from.
pub struct Definitions {
    /// Definition name -> schema.
    pub schemas: Map<String, Value>,
    /// The kinds with a schema.
    pub kinds: Vec<KindSchema>,
}

impl Definitions {
    /// Generates every definition. Takes tens of milliseconds (debug build); callers cache it.
    pub fn build() -> Definitions {
        let kinds = kinds::all();
        let mut generator = SchemaSettings::draft07()
            .with(|s| {
                s.definitions_path = "/components/schemas".into();
                s.meta_schema = None;
                // Our own rendering decides the v2/v3 shapes; schemars' transforms would
                // rewrite `$ref` siblings for draft-07 instead.
                s.transforms = Vec::new();
            })
            .into_generator();
        for kind in &kinds {
            (kind.add)(&mut generator);
        }
        add_meta_types(&mut generator);
        let mut schemas = generator.take_definitions(false);
        schemas.values_mut().for_each(metadata_is_optional);

        add_group_version_kinds(&mut schemas, &kinds);
        add_lists(&mut schemas, &kinds);
        patch_facts::annotate(&mut schemas, &kinds);
        Definitions { schemas, kinds }
    }

    /// The definition name of `group`/`version`/`kind`, if we have its schema.
    pub fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<String> {
        kinds::find(&self.kinds, group, version, kind).map(|k| (k.name)().into_owned())
    }

    /// The names reachable from `roots` (the roots included, unknown names skipped), sorted.
    pub fn closure<'a>(&self, roots: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<String> = roots.into_iter().map(str::to_owned).collect();
        while let Some(name) = queue.pop_front() {
            let Some(schema) = self.schemas.get(&name) else {
                continue;
            };
            if !seen.insert(name) {
                continue;
            }
            for target in refs_in(schema) {
                if let Some(target) = target.strip_prefix(V3_REF_PREFIX)
                    && !seen.contains(target)
                {
                    queue.push_back(target.to_owned());
                }
            }
        }
        seen
    }

    /// The definitions called `names`, rendered as OpenAPI v3 (`$ref` with siblings wrapped
    /// in `allOf`, upstream's v3 shapes of Quantity and IntOrString).
    pub fn render_v3(&self, names: &BTreeSet<String>) -> Map<String, Value> {
        let mut out = self.select(names);
        rewrite_schemas(&mut out, &|schema| wrap_ref_siblings(schema));
        override_shape(
            &mut out,
            meta::QUANTITY,
            json!({
                "oneOf": [{"type": "string"}, {"type": "number"}],
            }),
        );
        override_shape(
            &mut out,
            meta::INT_OR_STRING,
            json!({
                "format": "int-or-string",
                "oneOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": true,
            }),
        );
        out
    }

    /// The definitions called `names`, rendered as Swagger 2.0 (`#/definitions/` references,
    /// siblings kept next to `$ref` as upstream's v2 document has them).
    pub fn render_v2(&self, names: &BTreeSet<String>) -> Map<String, Value> {
        let mut out = self.select(names);
        rewrite_schemas(&mut out, &|schema| {
            if let Some(Value::String(target)) = schema.get_mut("$ref")
                && let Some(name) = target.strip_prefix(V3_REF_PREFIX)
            {
                *target = format!("{V2_REF_PREFIX}{name}");
            }
        });
        override_shape(&mut out, meta::QUANTITY, json!({"type": "string"}));
        override_shape(
            &mut out,
            meta::INT_OR_STRING,
            json!({
                "type": "string",
                "format": "int-or-string",
                "x-kubernetes-int-or-string": true,
            }),
        );
        out
    }

    fn select(&self, names: &BTreeSet<String>) -> Map<String, Value> {
        names
            .iter()
            .filter_map(|n| Some((n.clone(), self.schemas.get(n)?.clone())))
            .collect()
    }
}

/// The meta types operations refer to; the kinds pull in the rest (ObjectMeta, Time, ...).
fn add_meta_types(generator: &mut SchemaGenerator) {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta_v1;
    use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
    fn add<T: JsonSchema>(generator: &mut SchemaGenerator) {
        let _ = generator.subschema_for::<T>();
    }
    add::<meta_v1::DeleteOptions>(generator);
    add::<meta_v1::Status>(generator);
    add::<meta_v1::WatchEvent<RawExtension>>(generator);
    add::<meta_v1::Patch>(generator);
    add::<meta_v1::APIResourceList>(generator);
    add::<meta_v1::APIVersions>(generator);
    add::<meta_v1::APIGroupList>(generator);
    add::<meta_v1::APIGroup>(generator);
    add::<meta_v1::ListMeta>(generator);
}

/// Appends `{group, kind, version}` to a definition's `x-kubernetes-group-version-kind` list.
fn push_gvk(schemas: &mut Map<String, Value>, name: &str, group: &str, version: &str, kind: &str) {
    let Some(Value::Object(schema)) = schemas.get_mut(name) else {
        return;
    };
    let entry = json!({"group": group, "kind": kind, "version": version});
    let list = schema
        .entry("x-kubernetes-group-version-kind")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(items) = list
        && !items.contains(&entry)
    {
        items.push(entry);
    }
}

/// Upstream marks every top-level kind with its group-version-kind; kubectl explain finds the
/// schema of a resource by it. DeleteOptions and WatchEvent are registered in every served
/// group-version; Status only in core v1.
fn add_group_version_kinds(schemas: &mut Map<String, Value>, kinds: &[KindSchema]) {
    for kind in kinds {
        push_gvk(schemas, &(kind.name)(), kind.group, kind.version, kind.kind);
    }
    for group in registry::groups() {
        for version in group.versions {
            push_gvk(
                schemas,
                meta::DELETE_OPTIONS,
                group.name,
                version,
                "DeleteOptions",
            );
            push_gvk(
                schemas,
                meta::WATCH_EVENT,
                group.name,
                version,
                "WatchEvent",
            );
        }
    }
    push_gvk(schemas, meta::STATUS, "", "v1", "Status");
}

/// The definition name of a kind's list type: upstream names it after the kind
/// (`io.k8s.api.apps.v1.DeploymentList`).
pub fn list_name(item: &str) -> String {
    format!("{item}List")
}

/// k8s-openapi models lists with one generic `List<T>` that has no schema, so the
/// `<Kind>List` definitions of every listable resource are written here.
fn add_lists(schemas: &mut Map<String, Value>, kinds: &[KindSchema]) {
    for resource in registry::all().iter().filter(|r| r.is_listable()) {
        let Some(kind) = kinds::find(kinds, resource.group, resource.version, resource.kind) else {
            continue;
        };
        let item = (kind.name)();
        let name = list_name(&item);
        if schemas.contains_key(&name) {
            continue;
        }
        let list = json!({
            "description": format!("{}List is a list of {} objects.", kind.kind, kind.kind),
            "type": "object",
            "properties": {
                "apiVersion": {
                    "description": "APIVersion defines the versioned schema of this representation of an object. Servers convert recognized schemas to the latest internal value and may reject unrecognized values.",
                    "type": "string",
                },
                "items": {
                    "description": format!("List of {}.", resource.plural),
                    "type": "array",
                    "items": {"$ref": format!("{V3_REF_PREFIX}{item}")},
                },
                "kind": {
                    "description": "Kind is a string value representing the REST resource this object represents, in CamelCase.",
                    "type": "string",
                },
                "metadata": {
                    "$ref": format!("{V3_REF_PREFIX}{}", meta::LIST_META),
                    "description": "Standard list metadata.",
                },
            },
            "required": ["items"],
        });
        schemas.insert(name.clone(), list);
        push_gvk(
            schemas,
            &name,
            kind.group,
            kind.version,
            &format!("{}List", kind.kind),
        );
    }
}

/// k8s-openapi lists `metadata` as required because its Rust field is not an `Option`;
/// upstream's types all mark it optional (kubectl explain would print `-required-`).
fn metadata_is_optional(schema: &mut Value) {
    let Some(Value::Array(required)) = schema.get_mut("required") else {
        return;
    };
    required.retain(|field| field != "metadata");
    if required.is_empty()
        && let Value::Object(schema) = schema
    {
        schema.remove("required");
    }
}

/// OpenAPI v3.0 ignores the siblings of `$ref`; upstream wraps the reference in `allOf` so the
/// description (and anything else next to it) stays meaningful.
pub(crate) fn wrap_ref_siblings(schema: &mut Map<String, Value>) {
    if schema.len() < 2 || !matches!(schema.get("$ref"), Some(Value::String(_))) {
        return;
    }
    if let Some(reference) = schema.remove("$ref") {
        schema.insert(
            "allOf".to_owned(),
            Value::Array(vec![json!({"$ref": reference})]),
        );
    }
}

/// Replaces the type keywords of `name` with `shape`, keeping its description.
fn override_shape(schemas: &mut Map<String, Value>, name: &str, shape: Value) {
    let Some(Value::Object(schema)) = schemas.get_mut(name) else {
        return;
    };
    for key in ["type", "format", "oneOf", "x-kubernetes-int-or-string"] {
        schema.remove(key);
    }
    if let Value::Object(shape) = shape {
        schema.extend(shape);
    }
}
