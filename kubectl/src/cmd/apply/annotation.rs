//! The `kubectl.kubernetes.io/last-applied-configuration` annotation: what client-side apply
//! remembers of the last configuration, encoded as upstream's unstructured JSON encoder does
//! (keys sorted, HTML characters escaped, a trailing newline), so both kubectls agree on it.

use serde_json::{Map, Value};

pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The annotation's value on `object`, if any.
pub fn last_applied(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
}

/// Upstream's `GetModifiedConfiguration`: the configuration without its own annotation, encoded;
/// with `annotate`, the object carrying that encoding as its annotation (what apply sends).
pub fn modified_configuration(object: &Value) -> (String, Value) {
    let mut bare = object.clone();
    remove_annotation(&mut bare);
    let encoded = go_json(&bare);
    let mut annotated = bare;
    set_annotation(&mut annotated, &encoded);
    (encoded, annotated)
}

/// Drops the annotation but keeps the annotations map, even empty: upstream's accessor sets an
/// empty map, which ends up as `"annotations":{}` in the annotation.
pub fn remove_annotation(object: &mut Value) {
    set_annotation(object, "");
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED);
    }
}

pub fn set_annotation(object: &mut Value, value: &str) {
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let annotations = meta
        .as_object_mut()
        .map(|m| {
            m.entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()))
        })
        .filter(|a| a.is_object());
    if let Some(Value::Object(annotations)) = annotations {
        annotations.insert(LAST_APPLIED.to_owned(), Value::String(value.to_owned()));
    }
}

/// Go's `json.Encoder` output for a map: sorted keys, `<`, `>`, `&` escaped, newline-terminated.
pub fn go_json(value: &Value) -> String {
    let text = serde_json::to_string(&sorted(value)).unwrap_or_default();
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        // These only occur inside strings, where Go escapes them.
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

/// The value with every map's keys in sorted order, whatever order `Map` keeps.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_like_go() {
        let cases = [
            (
                json!({"b": 1, "a": {"d": "<&>", "c": [2]}}),
                "{\"a\":{\"c\":[2],\"d\":\"\\u003c\\u0026\\u003e\"},\"b\":1}\n",
            ),
            (json!({}), "{}\n"),
        ];
        for (value, want) in cases {
            assert_eq!(go_json(&value), want);
        }
    }

    #[test]
    fn modified_configuration_replaces_the_annotation() {
        let object = json!({"kind": "ConfigMap", "metadata": {"name": "x", "annotations": {LAST_APPLIED: "old"}}});
        let (encoded, annotated) = modified_configuration(&object);
        assert_eq!(
            encoded,
            "{\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"x\"}}\n"
        );
        assert_eq!(last_applied(&annotated), Some(encoded.as_str()));

        let keeps = json!({"metadata": {"annotations": {"a": "1"}}});
        let (encoded, _) = modified_configuration(&keeps);
        assert_eq!(encoded, "{\"metadata\":{\"annotations\":{\"a\":\"1\"}}}\n");
    }
}
