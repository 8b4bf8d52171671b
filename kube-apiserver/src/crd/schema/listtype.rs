//! Uniqueness in `x-kubernetes-list-type: set` and `map` lists (upstream's
//! `schema/listtype/validation.go`): repeated items or keys are `Duplicate value`.

use super::node::Node;
use api_types::validation::{BadValue, FieldError, FieldPath};
use serde_json::{Map, Value};

/// Checks every set and map list in `object` (an object at `path` described by `s`).
pub(crate) fn validate(path: &FieldPath, s: &Node, object: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk_object(path, s, object, &mut errs);
    errs
}

fn walk_object(
    path: &FieldPath,
    s: &Node,
    object: &Map<String, Value>,
    errs: &mut Vec<FieldError>,
) {
    for (k, v) in object {
        if let Some(prop) = s.properties.get(k) {
            walk(&path.child(k.as_str()), prop, v, errs);
        } else if let Some(a) = s.additional_schema() {
            walk(&path.key(k.as_str()), a, v, errs);
        }
    }
}

fn walk(path: &FieldPath, s: &Node, value: &Value, errs: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => walk_object(path, s, map, errs),
        Value::Array(list) => walk_array(path, s, list, errs),
        _ => {}
    }
}

fn walk_array(path: &FieldPath, s: &Node, list: &[Value], errs: &mut Vec<FieldError>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for i in first_repeats(list.iter().map(canonical)) {
                errs.push(FieldError::duplicate(
                    &path.index(i),
                    BadValue::from(&list[i]),
                ));
            }
        }
        Some("map") => list_map(path, s, list, errs),
        _ => {}
    }
    if let Some(items) = &s.items {
        for (i, item) in list.iter().enumerate() {
            walk(&path.index(i), items, item, errs);
        }
    }
}

/// The index of each value's second appearance (later repeats are not reported again).
fn first_repeats(keys: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, key) in keys.enumerate() {
        let count = seen.entry(key).or_insert(0);
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

/// A value's identity for uniqueness: its JSON, numbers compared by value.
fn canonical(v: &Value) -> String {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).to_string(),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn list_map(path: &FieldPath, s: &Node, list: &[Value], errs: &mut Vec<FieldError>) {
    for (i, item) in list.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            errs.push(FieldError::invalid(
                &path.index(i),
                BadValue::from(item),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    let items = s.items.as_deref();
    let keys = list.iter().map(|item| {
        let mut key = Map::new();
        for k in &s.list_map_keys {
            let found = item.get(k).cloned().or_else(|| {
                items
                    .and_then(|i| i.properties.get(k))
                    .and_then(|p| p.default.clone())
            });
            if let Some(v) = found {
                key.insert(k.clone(), v);
            }
        }
        key
    });
    let keys: Vec<Map<String, Value>> = keys.collect();
    for i in first_repeats(keys.iter().map(|k| canonical(&Value::Object(k.clone())))) {
        errs.push(FieldError::duplicate(
            &path.index(i),
            BadValue::json(&Value::Object(keys[i].clone())),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;
    use api_types::validation::ErrorList;
    use serde_json::json;

    fn run(schema: Value, data: Value) -> String {
        let mut errs = ErrorList::new();
        let node = parse(&schema, &FieldPath::root(), &mut errs);
        ErrorList::from(validate(
            &FieldPath::root(),
            &node,
            data.as_object().unwrap(),
        ))
        .to_string()
    }

    #[test]
    fn sets_and_maps_report_duplicates() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"],
                                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        }}}});
        assert_eq!(
            run(
                schema.clone(),
                json!({"spec": {"tags": ["a", "b", "a", "a"]}})
            ),
            "spec.tags[2]: Duplicate value: \"a\""
        );
        assert_eq!(
            run(
                schema.clone(),
                json!({"spec": {"ports": [{"name": "x", "port": 1}, {"name": "x", "port": 2}]}})
            ),
            "spec.ports[1]: Duplicate value: {\"name\":\"x\"}"
        );
        assert_eq!(
            run(
                schema,
                json!({"spec": {"ports": [{"name": "x"}, {"name": "y"}], "tags": ["a", "b"]}})
            ),
            ""
        );
    }
}
