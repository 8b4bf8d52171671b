//! JSON values as the CEL values rules see, typed by the schema as upstream does: `number`s
//! are doubles even when written `3`, strings of format `byte`/`duration`/`date-time`/`date`
//! are bytes/durations/timestamps, properties are reached by their escaped names, and a
//! resource's `metadata` shows only `name` and `generateName`.

use super::escape::escape;
use super::node::Node;
use base64::Engine;
use cel::Value as CelValue;
use cel::objects::Key;
use component_base::duration::GoDuration;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// `value` (found at `node`) as a CEL value; `resource` when it is a whole object (the custom
/// resource's root or an embedded resource).
pub(super) fn to_cel(value: &Value, node: Option<&Node>, resource: bool) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => number(n, node),
        Value::String(s) => string(s, node),
        Value::Array(items) => {
            let item_node = node.and_then(|n| n.items.as_deref());
            let list = items
                .iter()
                .map(|item| to_cel(item, item_node, item_node.is_some_and(|n| n.embedded)))
                .collect();
            CelValue::List(Arc::new(list))
        }
        Value::Object(map) => object(map, node, resource),
    }
}

fn number(n: &serde_json::Number, node: Option<&Node>) -> CelValue {
    let is_number = node.is_some_and(|n| n.ty == "number");
    if !is_number {
        if let Some(i) = n.as_i64() {
            return CelValue::Int(i);
        }
        if let Some(u) = n.as_u64() {
            return CelValue::UInt(u);
        }
    }
    CelValue::Float(n.as_f64().unwrap_or_default())
}

fn string(s: &str, node: Option<&Node>) -> CelValue {
    let format = node
        .filter(|n| n.ty == "string")
        .and_then(|n| n.format.as_deref());
    let typed = match format {
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(s)
            .ok()
            .map(|b| CelValue::Bytes(Arc::new(b))),
        Some("duration") => parse_duration(s).map(CelValue::Duration),
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(CelValue::Timestamp),
        Some("date") => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| CelValue::Timestamp(d.and_utc().fixed_offset())),
        _ => None,
    };
    // A value the schema's format does not parse stays a string, as upstream's fallback.
    typed.unwrap_or_else(|| CelValue::String(Arc::new(s.to_string())))
}

/// Go's duration syntax, sign included (`-1m30s`).
fn parse_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let d: GoDuration = rest.parse().ok()?;
    let d = chrono::Duration::from_std(d.0).ok()?;
    Some(if negative { -d } else { d })
}

fn object(map: &serde_json::Map<String, Value>, node: Option<&Node>, resource: bool) -> CelValue {
    let mut out: HashMap<Key, CelValue> = HashMap::with_capacity(map.len());
    if let Some(values) = node.and_then(|n| n.additional.as_deref()) {
        // A map: keys are data, reached as self['key'], never escaped.
        for (k, v) in map {
            let child = to_cel(v, Some(values), values.embedded);
            out.insert(Key::String(Arc::new(k.clone())), child);
        }
        return CelValue::Map(out.into());
    }
    for (k, v) in map {
        let Some(name) = escape(k) else { continue };
        let child_node = node.and_then(|n| n.properties.get(k));
        let child = if resource && k == "metadata" {
            metadata(v)
        } else {
            to_cel(v, child_node, child_node.is_some_and(|n| n.embedded))
        };
        out.insert(Key::String(Arc::new(name)), child);
    }
    CelValue::Map(out.into())
}

/// What rules see of a resource's metadata: its name and generateName only.
fn metadata(v: &Value) -> CelValue {
    let mut out: HashMap<Key, CelValue> = HashMap::new();
    for key in ["name", "generateName"] {
        if let Some(s) = v.get(key).and_then(Value::as_str) {
            out.insert(
                Key::String(Arc::new(key.to_string())),
                CelValue::String(Arc::new(s.to_string())),
            );
        }
    }
    CelValue::Map(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(schema: Value) -> Node {
        Node::shape(&schema)
    }

    fn field<'a>(v: &'a CelValue, name: &str) -> &'a CelValue {
        let CelValue::Map(m) = v else {
            panic!("not a map: {v:?}")
        };
        m.map
            .get(&Key::String(Arc::new(name.to_string())))
            .unwrap_or_else(|| panic!("no {name} in {v:?}"))
    }

    #[test]
    fn numbers_follow_the_schema_type() {
        let n = node(json!({"type": "object", "properties": {
            "ratio": {"type": "number"}, "count": {"type": "integer"}}}));
        let v = to_cel(&json!({"ratio": 3, "count": 3}), Some(&n), false);
        assert_eq!(field(&v, "ratio"), &CelValue::Float(3.0));
        assert_eq!(field(&v, "count"), &CelValue::Int(3));
    }

    #[test]
    fn formats_give_typed_values() {
        let n = node(json!({"type": "object", "properties": {
            "timeout": {"type": "string", "format": "duration"},
            "at": {"type": "string", "format": "date-time"},
            "data": {"type": "string", "format": "byte"},
            "bad": {"type": "string", "format": "duration"}}}));
        let v = to_cel(
            &json!({"timeout": "1m30s", "at": "2024-01-02T03:04:05Z", "data": "aGk=", "bad": "x"}),
            Some(&n),
            false,
        );
        assert_eq!(
            field(&v, "timeout"),
            &CelValue::Duration(chrono::Duration::seconds(90))
        );
        assert!(matches!(field(&v, "at"), CelValue::Timestamp(_)));
        assert_eq!(
            field(&v, "data"),
            &CelValue::Bytes(Arc::new(b"hi".to_vec()))
        );
        assert_eq!(field(&v, "bad"), &CelValue::String(Arc::new("x".into())));
    }

    #[test]
    fn properties_are_escaped_and_map_keys_are_not() {
        let n = node(json!({"type": "object", "properties": {
            "x-y": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}));
        let v = to_cel(
            &json!({"x-y": "a", "labels": {"app.kubernetes.io/name": "b"}}),
            Some(&n),
            false,
        );
        assert_eq!(
            field(&v, "x__dash__y"),
            &CelValue::String(Arc::new("a".into()))
        );
        let labels = field(&v, "labels");
        assert_eq!(
            field(labels, "app.kubernetes.io/name"),
            &CelValue::String(Arc::new("b".into()))
        );
    }

    #[test]
    fn a_resource_shows_only_name_and_generate_name_of_its_metadata() {
        let v = to_cel(
            &json!({"apiVersion": "a/v1", "kind": "K",
                "metadata": {"name": "n", "generateName": "g", "labels": {"a": "b"}}}),
            None,
            true,
        );
        let CelValue::Map(meta) = field(&v, "metadata") else {
            panic!()
        };
        assert_eq!(meta.map.len(), 2);
        assert_eq!(field(&v, "kind"), &CelValue::String(Arc::new("K".into())));
    }
}
