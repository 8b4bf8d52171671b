//! Walking JSON schemas by their keywords, so that a property *named* `$ref` (as in
//! `JSONSchemaProps`) is never mistaken for a reference.

use serde_json::{Map, Value};

/// Keywords whose value is one schema.
const SCHEMA_KEYWORDS: &[&str] = &["items", "additionalProperties", "not"];
/// Keywords whose value is a list of schemas.
const LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Keywords whose value maps names to schemas.
const MAP_KEYWORDS: &[&str] = &["properties", "patternProperties"];

/// Calls `visit` on `schema` and then on each of its subschemas, depth first.
pub fn visit_mut(schema: &mut Value, visit: &dyn Fn(&mut Map<String, Value>)) {
    let Value::Object(object) = schema else {
        return;
    };
    visit(object);
    for (key, value) in object.iter_mut() {
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            visit_mut(value, visit);
        } else if LIST_KEYWORDS.contains(&key) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|s| visit_mut(s, visit));
            }
        } else if MAP_KEYWORDS.contains(&key)
            && let Value::Object(named) = value
        {
            named.values_mut().for_each(|s| visit_mut(s, visit));
        }
    }
}

/// Applies `visit` to every schema (and subschema) of a definitions map.
pub fn rewrite_schemas(schemas: &mut Map<String, Value>, visit: &dyn Fn(&mut Map<String, Value>)) {
    for schema in schemas.values_mut() {
        visit_mut(schema, visit);
    }
}

/// Every `$ref` target in `schema` and its subschemas.
pub fn refs_in(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_refs(schema, &mut out);
    out
}

fn collect_refs(schema: &Value, out: &mut Vec<String>) {
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::String(target)) = object.get("$ref") {
        out.push(target.clone());
    }
    for (key, value) in object {
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            collect_refs(value, out);
        } else if LIST_KEYWORDS.contains(&key) {
            if let Value::Array(items) = value {
                items.iter().for_each(|s| collect_refs(s, out));
            }
        } else if MAP_KEYWORDS.contains(&key)
            && let Value::Object(named) = value
        {
            named.values().for_each(|s| collect_refs(s, out));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_property_named_ref_is_not_a_reference() {
        let schema = json!({
            "properties": {
                "$ref": {"type": "string"},
                "child": {"$ref": "#/x/A", "description": "d"},
                "list": {"type": "array", "items": {"allOf": [{"$ref": "#/x/B"}]}},
            },
        });
        assert_eq!(
            refs_in(&schema),
            vec!["#/x/A".to_owned(), "#/x/B".to_owned()]
        );
    }
}
