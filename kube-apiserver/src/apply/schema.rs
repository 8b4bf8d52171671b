//! The type facts server-side apply needs of a kind (which maps are structs, which lists are
//! associative and by which keys, what is atomic), read from OpenAPI v3 schemas: the built-in
//! definitions (with `$ref`s) or a custom resource's `openAPIV3Schema` (without).
//!
//! Where no schema speaks (untyped kinds, `x-kubernetes-preserve-unknown-fields`, embedded raw
//! objects) the shape is deduced from the value as structured-merge-diff does: maps are merged
//! key by key, lists are atomic.

use super::fieldpath::PathElement;
use crate::openapi::definitions::{Definitions, V3_REF_PREFIX};
use crate::openapi::kinds;
use serde_json::Value;

/// Where the schema of the object being applied comes from.
#[derive(Debug, Clone, Copy)]
pub enum ApplySchema<'a> {
    /// A built-in kind, looked up in the server's OpenAPI definitions.
    BuiltIn {
        group: &'a str,
        version: &'a str,
        kind: &'a str,
    },
    /// A custom resource's `openAPIV3Schema` (JSONSchemaProps, no `$ref`s).
    Custom(&'a Value),
    /// No schema: everything deduced.
    Untyped,
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Built-in structs upstream marks `+structType=atomic` / `x-kubernetes-map-type: atomic`;
/// k8s-openapi's schemas do not say so.
const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.core.v1.ConfigMapEnvSource",
    "io.k8s.api.core.v1.SecretEnvSource",
    "io.k8s.api.core.v1.ConfigMapProjection",
    "io.k8s.api.core.v1.SecretProjection",
];

/// Built-in map fields upstream marks `+mapType=atomic`: (definition, field).
const ATOMIC_FIELDS: &[(&str, &str)] = &[
    ("io.k8s.api.core.v1.ServiceSpec", "selector"),
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
];

/// A point in a schema: the (resolved) JSON schema there, or none (deduce from the value).
#[derive(Clone, Copy)]
pub struct Node<'a> {
    schema: Option<&'a Value>,
    /// For resolving `$ref`s of built-in schemas (and the ObjectMeta of custom ones).
    defs: Option<&'a Definitions>,
    /// The definition was named atomic (a `$ref` to one of [`ATOMIC_STRUCTS`]).
    atomic: bool,
    /// The name of the built-in definition the schema is, if it came through a `$ref`.
    definition: Option<&'a str>,
}

/// How a list is merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced whole.
    Atomic,
    /// Items are scalars, merged as a set.
    Set,
    /// Items are objects identified by these fields (sorted).
    Map(Vec<String>),
}

/// What a node holds, given its schema (or the value, when deduced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A map merged key by key (structs with declared fields, or string-keyed maps).
    Map,
    /// A map, struct or list replaced whole; or a scalar.
    Leaf,
    /// A list merged item by item.
    List(ListKind),
}

impl<'a> ApplySchema<'a> {
    /// The root node.
    pub fn root(self) -> Node<'a> {
        match self {
            ApplySchema::BuiltIn {
                group,
                version,
                kind,
            } => {
                let defs = crate::openapi::definitions();
                let schema = kinds::find(&defs.kinds, group, version, kind)
                    .and_then(|k| defs.schemas.get((k.name)().as_ref()));
                Node {
                    schema,
                    defs: Some(defs),
                    atomic: false,
                    definition: None,
                }
                .resolved()
            }
            ApplySchema::Custom(schema) => Node {
                schema: Some(schema),
                defs: Some(crate::openapi::definitions()),
                atomic: false,
                definition: None,
            },
            ApplySchema::Untyped => Node::deduced(),
        }
    }
}

impl<'a> Node<'a> {
    /// A node without schema.
    pub fn deduced() -> Self {
        Node {
            schema: None,
            defs: None,
            atomic: false,
            definition: None,
        }
    }

    fn with(&self, schema: Option<&'a Value>) -> Self {
        Node {
            schema,
            defs: self.defs,
            atomic: false,
            definition: None,
        }
        .resolved()
    }

    /// Follows `$ref` (also inside the `allOf` wrapper v3 uses for described references).
    fn resolved(mut self) -> Self {
        let Some(defs) = self.defs else {
            return self;
        };
        for _ in 0..16 {
            let Some(schema) = self.schema else {
                return self;
            };
            let reference = schema
                .get("$ref")
                .or_else(|| schema.get("allOf")?.as_array()?.first()?.get("$ref"))
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(V3_REF_PREFIX));
            match reference {
                Some(name) => {
                    self.atomic |= ATOMIC_STRUCTS.contains(&name);
                    self.schema = defs.schemas.get(name);
                    self.definition = defs.schemas.get_key_value(name).map(|(k, _)| k.as_str());
                }
                None => return self,
            }
        }
        self
    }

    fn extension(&self, name: &str) -> Option<&'a str> {
        self.schema?.get(name)?.as_str()
    }

    /// Whether the schema here is a struct (declares properties).
    pub fn is_struct(&self) -> bool {
        self.schema
            .and_then(|s| s.get("properties"))
            .is_some_and(Value::is_object)
    }

    /// The shape of `value` at this node.
    pub fn shape(&self, value: &Value) -> Shape {
        let Some(schema) = self.schema else {
            return deduced_shape(value);
        };
        match value {
            Value::Object(_) => {
                let atomic =
                    self.atomic || self.extension("x-kubernetes-map-type") == Some("atomic");
                // Structs, string-keyed maps and bare `type: object` (deduced) all merge by key.
                if atomic || self.is_int_or_string() {
                    Shape::Leaf
                } else {
                    Shape::Map
                }
            }
            Value::Array(_) => {
                if schema.get("items").is_none() {
                    return Shape::List(ListKind::Atomic);
                }
                Shape::List(self.list_kind())
            }
            _ => Shape::Leaf,
        }
    }

    fn is_int_or_string(&self) -> bool {
        self.schema
            .and_then(|s| s.get("x-kubernetes-int-or-string"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn list_kind(&self) -> ListKind {
        let keys = || -> Option<Vec<String>> {
            let mut keys: Vec<String> = self
                .schema?
                .get("x-kubernetes-list-map-keys")?
                .as_array()?
                .iter()
                .filter_map(|k| k.as_str().map(String::from))
                .collect();
            keys.sort();
            (!keys.is_empty()).then_some(keys)
        };
        match self.extension("x-kubernetes-list-type") {
            Some("map") => keys().map_or(ListKind::Atomic, ListKind::Map),
            Some("set") => ListKind::Set,
            Some(_) => ListKind::Atomic,
            None => {
                // Without a list type, a strategic-merge list is associative as upstream's
                // converted schemas make it.
                let merge = self
                    .extension("x-kubernetes-patch-strategy")
                    .is_some_and(|s| s.split(',').any(|p| p == "merge"));
                match self.extension("x-kubernetes-patch-merge-key") {
                    Some(key) if merge => ListKind::Map(vec![key.to_string()]),
                    None if merge => ListKind::Set,
                    _ => ListKind::Atomic,
                }
            }
        }
    }

    /// The node of field `name` of a map here, and whether it is a declared (struct) field.
    pub fn field(&self, name: &str) -> (Node<'a>, bool) {
        let Some(schema) = self.schema else {
            return (Node::deduced(), false);
        };
        if let Some(property) = schema.get("properties").and_then(|p| p.get(name)) {
            // A custom resource's metadata is the built-in ObjectMeta whatever its schema says.
            if name == "metadata"
                && !property.get("properties").is_some_and(Value::is_object)
                && let Some(meta) = self.defs.and_then(|d| d.schemas.get(OBJECT_META))
            {
                return (self.with(Some(meta)), true);
            }
            let mut node = self.with(Some(property));
            node.atomic |= self
                .definition
                .is_some_and(|d| ATOMIC_FIELDS.contains(&(d, name)));
            return (node, true);
        }
        match schema.get("additionalProperties") {
            Some(items @ Value::Object(_)) => (self.with(Some(items)), false),
            _ => (Node::deduced(), false),
        }
    }

    /// The node of the items of a list here.
    pub fn items(&self) -> Node<'a> {
        match self.schema.and_then(|s| s.get("items")) {
            Some(items) => self.with(Some(items)),
            None => Node::deduced(),
        }
    }

    /// Whether the struct here lists `name` as required.
    pub fn requires(&self, name: &str) -> bool {
        self.schema
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|n| n == name))
    }

    /// Whether `name` is a declared field of the struct here.
    pub fn declares(&self, name: &str) -> bool {
        self.schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(name))
            .is_some()
    }
}

fn deduced_shape(value: &Value) -> Shape {
    match value {
        Value::Object(_) => Shape::Map,
        Value::Array(_) => Shape::List(ListKind::Atomic),
        _ => Shape::Leaf,
    }
}

/// The path element of an item of a list of `kind`, at `index`.
pub fn item_element(kind: &ListKind, index: usize, item: &Value) -> PathElement {
    match kind {
        ListKind::Map(keys) => {
            let fields: Vec<(String, Value)> = keys
                .iter()
                .filter_map(|key| {
                    let value = match item.get(key) {
                        Some(v) if !v.is_null() => v.clone(),
                        // The one key with a schema default upstream (ports' protocol).
                        _ if key == "protocol" => Value::from("TCP"),
                        _ => return None,
                    };
                    Some((key.clone(), value))
                })
                .collect();
            if fields.is_empty() {
                PathElement::Index(index)
            } else {
                PathElement::key(&fields)
            }
        }
        ListKind::Set => PathElement::value(item),
        ListKind::Atomic => PathElement::Index(index),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Node<'static> {
        ApplySchema::BuiltIn {
            group: "apps",
            version: "v1",
            kind: "Deployment",
        }
        .root()
    }

    #[test]
    fn built_in_containers_are_keyed_by_name() {
        let (spec, declared) = deployment().field("spec");
        assert!(declared);
        let containers = spec
            .field("template")
            .0
            .field("spec")
            .0
            .field("containers")
            .0;
        assert_eq!(
            containers.shape(&json!([])),
            Shape::List(ListKind::Map(vec!["name".into()]))
        );
        let ports = containers.items().field("ports").0;
        assert_eq!(
            ports.shape(&json!([])),
            Shape::List(ListKind::Map(vec![
                "containerPort".into(),
                "protocol".into()
            ]))
        );
        // args has no list type: atomic.
        let args = containers.items().field("args").0;
        assert_eq!(args.shape(&json!(["a"])), Shape::List(ListKind::Atomic));
    }

    #[test]
    fn labels_are_a_granular_map_and_selectors_atomic() {
        let (meta, _) = deployment().field("metadata");
        let (labels, declared) = meta.field("labels");
        assert!(declared);
        assert_eq!(labels.shape(&json!({"a": "b"})), Shape::Map);
        let (app, declared) = labels.field("app");
        assert!(!declared);
        assert_eq!(app.shape(&json!("x")), Shape::Leaf);
        let selector = deployment().field("spec").0.field("selector").0;
        assert_eq!(selector.shape(&json!({"matchLabels": {}})), Shape::Leaf);
        let service = ApplySchema::BuiltIn {
            group: "",
            version: "v1",
            kind: "Service",
        }
        .root();
        let selector = service.field("spec").0.field("selector").0;
        assert_eq!(selector.shape(&json!({"app": "x"})), Shape::Leaf);
        let finalizers = meta.field("finalizers").0;
        assert_eq!(finalizers.shape(&json!(["a"])), Shape::List(ListKind::Set));
    }

    #[test]
    fn custom_and_untyped_schemas() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "items": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["id"], "items": {"type": "object"}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "atomic": {"type": "object", "x-kubernetes-map-type": "atomic"},
            }},
        }});
        let root = ApplySchema::Custom(&schema).root();
        let spec = root.field("spec").0;
        assert_eq!(
            spec.field("items").0.shape(&json!([])),
            Shape::List(ListKind::Map(vec!["id".into()]))
        );
        assert_eq!(
            spec.field("tags").0.shape(&json!([])),
            Shape::List(ListKind::Atomic)
        );
        assert_eq!(spec.field("atomic").0.shape(&json!({})), Shape::Leaf);
        // metadata is ObjectMeta: labels declared there.
        assert!(root.field("metadata").0.declares("labels"));

        let untyped = ApplySchema::Untyped.root();
        assert_eq!(untyped.shape(&json!({})), Shape::Map);
        assert_eq!(untyped.shape(&json!([1])), Shape::List(ListKind::Atomic));
    }

    #[test]
    fn item_elements() {
        let ports = ListKind::Map(vec!["containerPort".into(), "protocol".into()]);
        assert_eq!(
            item_element(&ports, 0, &json!({"containerPort": 80})).encode(),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
        );
        assert_eq!(
            item_element(&ListKind::Set, 0, &json!("x")).encode(),
            "v:\"x\""
        );
    }
}
