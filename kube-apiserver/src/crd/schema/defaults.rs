//! Structural defaulting (upstream's `schema/defaulting`): `default` values are applied
//! top-down where a field is absent (or null and not nullable), so a defaulted object gets
//! its own properties' defaults too; and the CRD-time check that every default validates and
//! is already pruned.

use super::node::{Additional, Node};
use super::prune::prune_value;
use super::values::Validator;
use api_types::validation::{BadValue, FieldError, FieldPath};
use serde_json::Value;

/// Removes nulls of non-nullable fields that have no default (they would only fail
/// validation), then applies defaults.
pub(crate) fn apply(x: &mut Value, s: &Node) {
    prune_nulls(x, s);
    default(x, s);
}

fn non_nullable_null(x: &Value, s: &Node) -> bool {
    x.is_null() && !s.nullable
}

fn prune_nulls(x: &mut Value, s: &Node) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let schema = s.properties.get(k).or(s.additional_schema());
                !schema.is_some_and(|p| v.is_null() && !p.nullable && p.default.is_none())
            });
            for (k, v) in map.iter_mut() {
                if let Some(p) = s.properties.get(k).or(s.additional_schema()) {
                    prune_nulls(v, p);
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = &s.items {
                for v in list {
                    prune_nulls(v, items);
                }
            }
        }
        _ => {}
    }
}

fn default(x: &mut Value, s: &Node) {
    match x {
        Value::Object(map) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                if map.get(k).is_none_or(|v| non_nullable_null(v, prop)) {
                    map.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default(v, prop);
                } else if let Some(Additional::Schema(a)) = &s.additional {
                    if non_nullable_null(v, a)
                        && let Some(d) = &a.default
                    {
                        *v = d.clone();
                    }
                    default(v, a);
                }
            }
        }
        Value::Array(list) => {
            let Some(items) = &s.items else { return };
            for v in list.iter_mut() {
                if non_nullable_null(v, items)
                    && let Some(d) = &items.default
                {
                    *v = d.clone();
                }
                default(v, items);
            }
        }
        _ => {}
    }
}

/// Every default must be pruned already and valid against its own schema. Defaults inside
/// resource metadata are forbidden by the schema checks and not looked at again here.
pub(crate) fn validate(path: &FieldPath, root: &Node) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(path, root, true, &mut errs);
    errs
}

fn walk(path: &FieldPath, s: &Node, resource_root: bool, errs: &mut Vec<FieldError>) {
    if let Some(d) = &s.default {
        let at = path.child("default");
        let mut pruned = d.clone();
        if !prune_value(&mut pruned, s).is_empty() {
            errs.push(FieldError::invalid(
                &at,
                BadValue::from(d),
                "must not have unknown fields",
            ));
        }
        let validator = Validator { base: &at };
        errs.extend(validator.validate(s, d, "", false));
        if let Value::Object(map) = d {
            errs.extend(super::embedded::validate(&at, s, map));
        }
    }
    // additionalProperties are not followed: defaults there would be ambiguous to prune.
    if let Some(items) = &s.items {
        walk(&path.child("items"), items, false, errs);
    }
    for (k, p) in &s.properties {
        let meta = (resource_root || s.embedded)
            && matches!(k.as_str(), "metadata" | "apiVersion" | "kind");
        if !meta {
            walk(&path.child("properties").key(k.as_str()), p, false, errs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;
    use api_types::validation::ErrorList;
    use serde_json::json;

    fn node(v: Value) -> Node {
        let mut errs = ErrorList::new();
        let n = parse(&v, &FieldPath::root(), &mut errs);
        assert!(errs.is_empty(), "{errs}");
        n
    }

    #[test]
    fn defaults_apply_top_down_where_absent_or_null() {
        let s = node(json!({"type": "object", "properties": {"spec": {
        "type": "object", "default": {},
        "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "auto"},
            "opt": {"type": "string", "nullable": true, "default": "x"},
            "gone": {"type": "string"},
            "list": {"type": "array", "items": {"type": "object",
                     "properties": {"p": {"type": "integer", "default": 80}}}},
        }}}}));
        let mut empty = json!({});
        apply(&mut empty, &s);
        assert_eq!(
            empty,
            json!({"spec": {"replicas": 1, "mode": "auto", "opt": "x"}})
        );

        let mut obj = json!({"spec": {"replicas": 3, "mode": null, "opt": null, "gone": null,
                                      "list": [{}, {"p": 1}]}});
        apply(&mut obj, &s);
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 3, "mode": "auto", "opt": null,
                            "list": [{"p": 80}, {"p": 1}]}})
        );
    }

    #[test]
    fn defaults_must_validate_and_be_pruned() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": "one"},
                "cfg": {"type": "object", "properties": {"a": {"type": "string"}},
                        "default": {"a": "x", "b": 1}},
                "size": {"type": "string", "enum": ["S"], "default": "S"},
            }}}}),
        );
        let text = ErrorList::from(validate(&FieldPath::new("schema"), &s)).to_string();
        for want in [
            "schema.properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
            "schema.properties[spec].properties[cfg].default: Invalid value: {\"a\":\"x\",\"b\":1}: must not have unknown fields",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
        assert!(!text.contains("size"), "{text}");
    }
}
