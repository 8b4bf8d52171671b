//! Pruning of fields a structural schema does not specify (upstream's
//! `schema/pruning/algorithm.go`): the removed fields' paths are returned as the warnings name
//! them (`spec.foo`, `spec.items[0].bar`). An unknown field is removed whole, so however deep
//! it is nested costs nothing; recursion follows the schema, never the data alone.

use super::node::{Additional, Node};
use serde_json::Value;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes `value` as a resource root (its `apiVersion`, `kind`, `metadata` are kept).
pub(crate) fn prune_root(value: &mut Value, s: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = String::new();
    prune_object_or_list(value, Some(s), true, &mut path, &mut out);
    out
}

/// Prunes `value` against `s` (no resource root).
pub(crate) fn prune_value(value: &mut Value, s: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = String::new();
    prune(value, Some(s), &mut path, &mut out);
    out
}

fn prune(x: &mut Value, s: Option<&Node>, path: &mut String, out: &mut Vec<String>) {
    if let Some(s) = s.filter(|s| s.preserve_unknown) {
        skip_prune(x, s, path, out);
        return;
    }
    prune_object_or_list(x, s, s.is_some_and(|s| s.embedded), path, out);
}

fn prune_object_or_list(
    x: &mut Value,
    s: Option<&Node>,
    keep_meta: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    if let Some(s) = s.filter(|s| s.preserve_unknown) {
        // A preserving root still prunes under its specified fields.
        skip_prune_with(x, s, keep_meta, path, out);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    record(path, &k, out);
                }
                map.clear();
                return;
            };
            let mut removed = Vec::new();
            for (k, v) in map.iter_mut() {
                if keep_meta && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let len = path.len();
                append_key(path, k);
                if let Some(prop) = s.properties.get(k) {
                    prune(v, Some(prop), path, out);
                } else if let Some(additional) = &s.additional {
                    let a = match additional {
                        Additional::Schema(a) => Some(a.as_ref()),
                        Additional::Bool(_) => None,
                    };
                    prune(v, a, path, out);
                } else {
                    removed.push(k.clone());
                }
                path.truncate(len);
            }
            for k in removed {
                map.remove(&k);
                record(path, &k, out);
            }
        }
        Value::Array(list) => {
            let items = s.and_then(|s| s.items.as_deref());
            for (i, v) in list.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                prune(v, items, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Node, path: &mut String, out: &mut Vec<String>) {
    skip_prune_with(x, s, s.embedded, path, out);
}

/// Under `x-kubernetes-preserve-unknown-fields` unknown fields stay, but specified ones are
/// still pruned inside.
fn skip_prune_with(
    x: &mut Value,
    s: &Node,
    keep_meta: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    match x {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if keep_meta && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let len = path.len();
                append_key(path, k);
                if let Some(prop) = s.properties.get(k) {
                    prune(v, Some(prop), path, out);
                } else if let Some(a) = s.additional_schema() {
                    prune(v, Some(a), path, out);
                }
                path.truncate(len);
            }
        }
        Value::Array(list) => {
            if let Some(items) = &s.items {
                for (i, v) in list.iter_mut().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    skip_prune(v, items, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

fn append_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn record(path: &str, key: &str, out: &mut Vec<String>) {
    let mut p = path.to_string();
    append_key(&mut p, key);
    out.push(p);
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;
    use api_types::validation::{ErrorList, FieldPath};
    use serde_json::json;

    fn node(v: Value) -> Node {
        let mut errs = ErrorList::new();
        parse(&v, &FieldPath::root(), &mut errs)
    }

    #[test]
    fn unknown_fields_are_removed_and_named() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"known": {"type": "object", "properties": {}}}},
            }}}}),
        );
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "whatever": 1},
            "spec": {"foo": 1, "items": [{"a": "x", "bar": 2}], "labels": {"k": "v"},
                     "raw": {"anything": {"deep": 1}, "known": {"gone": true}}},
            "status": {"x": 1},
        });
        let mut pruned = prune_root(&mut obj, &s);
        pruned.sort();
        assert_eq!(
            pruned,
            vec![
                "spec.foo",
                "spec.items[0].bar",
                "spec.raw.known.gone",
                "status"
            ]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "whatever": 1},
                   "spec": {"items": [{"a": "x"}], "labels": {"k": "v"},
                            "raw": {"anything": {"deep": 1}, "known": {}}}})
        );
    }

    #[test]
    fn deep_unknown_objects_are_removed_at_the_top() {
        let s = node(json!({"type": "object", "properties": {"spec": {"type": "object"}}}));
        let mut deep = json!({"leaf": true});
        for i in 0..40 {
            deep = json!({ format!("l{i}"): deep });
        }
        let mut obj = json!({"spec": {"unknown": deep}});
        assert_eq!(prune_root(&mut obj, &s), vec!["spec.unknown"]);
        assert_eq!(obj, json!({"spec": {}}));
    }

    #[test]
    fn embedded_resources_keep_type_meta() {
        let s = node(
            json!({"type": "object", "properties": {"t": {"type": "object",
            "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}}}),
        );
        let mut obj =
            json!({"t": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}, "x": 1}});
        assert_eq!(prune_root(&mut obj, &s), vec!["t.x"]);
        assert_eq!(obj["t"]["kind"], "Pod");
    }
}
