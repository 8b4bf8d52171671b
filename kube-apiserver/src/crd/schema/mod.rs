//! Structural schemas of custom resources: a version's `openAPIV3Schema` checked to be
//! structural (as upstream's apiextensions-apiserver requires for v1 CRDs), and what a
//! structural schema does to objects: validation with the OpenAPI validator's semantics and
//! messages, pruning of unknown fields, and defaulting.
//!
//! | file | concern |
//! |---|---|
//! | `node.rs` | the schema read into a typed tree; forbidden keywords |
//! | `structural.rs` | structural invariants and completeness; list/map types; where defaults may be |
//! | `values.rs`, `formats.rs` | value validation (types, formats, bounds, enum, junctors, ...) |
//! | `listtype.rs`, `embedded.rs` | set/map list uniqueness; embedded resources' type meta and metadata |
//! | `prune.rs`, `defaults.rs` | pruning; defaulting and the CRD-time check of defaults |

mod defaults;
mod embedded;
mod formats;
mod listtype;
mod node;
mod prune;
mod structural;
mod values;

use api_types::validation::{ErrorList, FieldPath};
use node::Node;
use serde_json::Value;

/// A version's `openAPIV3Schema`, checked to be structural.
#[derive(Debug, Clone)]
pub struct Structural {
    raw: Value,
    root: Node,
}

impl Structural {
    /// Parses and checks `schema` (a JSONSchemaProps); errors are pathed from the schema's
    /// root (`properties[spec].type`).
    pub fn new(schema: &Value) -> Result<Self, ErrorList> {
        Self::new_at(schema, &FieldPath::root())
    }

    /// As [`Structural::new`], with errors pathed under `path` (where the schema sits in its
    /// CRD, e.g. `spec.versions[0].schema.openAPIV3Schema`). Checks, in upstream's order: the
    /// structural rules, then (only when those hold) that defaults validate and are pruned,
    /// then the per-keyword rules of CRD schemas.
    pub fn new_at(schema: &Value, path: &FieldPath) -> Result<Self, ErrorList> {
        let mut keyword_errs = ErrorList::new();
        let root = node::parse(schema, path, &mut keyword_errs);
        let mut errs = structural::check_structural(&root, path);
        if errs.is_empty() {
            errs.extend(defaults::validate(path, &root));
        }
        errs.append(keyword_errs);
        errs.append(structural::check_openapi(&root, path));
        if errs.is_empty() {
            Ok(Self {
                raw: schema.clone(),
                root,
            })
        } else {
            Err(errs)
        }
    }

    /// The schema as given.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Validates a whole object against the schema: types, formats, bounds, enums, required
    /// fields, junctors, set/map list uniqueness and embedded resources. The root's
    /// `apiVersion`, `kind` and `metadata` are left to the object-meta checks.
    pub fn validate(&self, object: &Value) -> ErrorList {
        let root = FieldPath::root();
        let validator = values::Validator { base: &root };
        let mut errs: ErrorList = validator.validate(&self.root, object, "", true).into();
        if let Value::Object(map) = object {
            let mut body = map.clone();
            for key in ["apiVersion", "kind", "metadata"] {
                body.remove(key);
            }
            errs.extend(listtype::validate(&root, &self.root, &body));
            errs.extend(embedded::validate(&root, &self.root, &body));
        }
        errs
    }

    /// Removes fields the schema does not know (the root's `apiVersion`, `kind` and
    /// `metadata` stay); returns their paths (`spec.foo`, `spec.items[0].bar`), sorted.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        let mut pruned = prune::prune_root(object, &self.root);
        pruned.sort();
        pruned
    }

    /// The type of the field a `.spec.foo`-style path names (no array steps), as
    /// `selectableFields` need; the error says why the path names no field.
    pub fn field_type(&self, json_path: &str) -> Result<&str, String> {
        let Some(rest) = json_path.strip_prefix('.') else {
            let first = json_path
                .chars()
                .next()
                .map(String::from)
                .unwrap_or_default();
            return Err(format!("expected [ or . but got: {first}"));
        };
        let mut node = &self.root;
        for step in rest.split('.') {
            node = match node.properties.get(step).or(node.additional_schema()) {
                Some(next) if !step.is_empty() => next,
                _ => return Err("does not refer to a valid field".into()),
            };
        }
        Ok(node.type_.as_str())
    }

    /// Fills the schema's defaults where fields are absent (or null and not nullable), and
    /// drops nulls of non-nullable fields without a default.
    pub fn apply_defaults(&self, object: &mut Value) {
        defaults::apply(object, &self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "string", "enum": ["S", "M"]},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "required": ["name"],
                                            "properties": {"name": {"type": "string"},
                                                           "port": {"x-kubernetes-int-or-string": true}}}},
                    }
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }
        })
    }

    #[test]
    fn structural_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Structural>();
    }

    #[test]
    fn a_good_schema_round_trips() {
        let s = Structural::new(&widget_schema()).expect("structural");
        assert_eq!(s.raw(), &widget_schema());
    }

    #[test]
    fn non_structural_schema_is_refused_with_paths() {
        let bad = json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}});
        let errs = Structural::new_at(
            &bad,
            &FieldPath::from_names(&["spec", "versions"])
                .index(0)
                .child("schema")
                .child("openAPIV3Schema"),
        )
        .unwrap_err();
        assert_eq!(
            errs.to_string(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        );
        assert!(
            Structural::new(&json!({"type": "object", "additionalProperties": {"type": "string"}}))
                .is_err()
        );
    }

    #[test]
    fn objects_are_validated_pruned_and_defaulted() {
        let s = Structural::new(&widget_schema()).unwrap();
        let mut obj = json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": "S", "colour": "red",
                     "ports": [{"name": "a", "port": 80}, {"name": "b", "port": "http"}]},
            "status": {"anything": 1},
        });
        assert_eq!(s.prune(&mut obj), vec!["spec.colour"]);
        s.apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["replicas"], 1);
        assert!(s.validate(&obj).is_empty(), "{}", s.validate(&obj));

        let bad = json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": "XL", "replicas": 11,
                     "ports": [{"name": "a"}, {"name": "a"}]},
        });
        assert_eq!(
            s.validate(&bad).to_string(),
            "[spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10, \
             spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\", \
             spec.ports[1]: Duplicate value: {\"name\":\"a\"}]"
        );
        let missing = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                             "metadata": {"name": "w"}, "spec": {}});
        assert_eq!(
            s.validate(&missing).to_string(),
            "spec.size: Required value"
        );
    }

    #[test]
    fn field_types_by_path() {
        let s = Structural::new(&widget_schema()).unwrap();
        assert_eq!(s.field_type(".spec.size"), Ok("string"));
        assert_eq!(s.field_type(".spec.replicas"), Ok("integer"));
        assert_eq!(
            s.field_type(".spec.nope"),
            Err("does not refer to a valid field".into())
        );
        assert_eq!(
            s.field_type("spec"),
            Err("expected [ or . but got: s".into())
        );
    }

    #[test]
    fn wrong_types_everywhere_do_not_panic() {
        let s = Structural::new(&widget_schema()).unwrap();
        for obj in [
            json!(null),
            json!([1, 2]),
            json!("x"),
            json!({"spec": "x"}),
            json!({"spec": {"ports": {"a": 1}}}),
            json!({"spec": {"ports": [1, null, "x"]}}),
        ] {
            let mut o = obj.clone();
            s.prune(&mut o);
            s.apply_defaults(&mut o);
            let _ = s.validate(&o);
        }
        let errs = s.validate(&json!({"spec": {"size": 3, "replicas": "2"}}));
        assert!(
            errs.to_string()
                .contains("spec.replicas in body must be of type integer: \"string\""),
            "{errs}"
        );
        assert!(
            errs.to_string()
                .contains("spec.size in body must be of type string: \"integer\""),
            "{errs}"
        );
    }
}
