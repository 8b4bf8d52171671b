//! Events as upstream's `kubectl events` prints them: decoded into the typed `corev1.Event`
//! and encoded again, so fields that are not `omitempty` appear (`"firstTimestamp": null`,
//! `"source": {}`) and `-o json` follows the Go struct's field order, not the alphabet.

use serde_json::{Map, Value};

/// Adds what the typed encoding always writes and drops `managedFields` (upstream omits them
/// unless asked).
pub fn typed_event(mut event: Value) -> Value {
    let Some(obj) = event.as_object_mut() else {
        return event;
    };
    obj.insert("kind".into(), Value::String("Event".into()));
    obj.insert("apiVersion".into(), Value::String("v1".into()));
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.remove("managedFields");
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
    for key in ["involvedObject", "source"] {
        obj.entry(key).or_insert_with(|| Value::Object(Map::new()));
    }
    for key in ["firstTimestamp", "lastTimestamp", "eventTime"] {
        obj.entry(key).or_insert(Value::Null);
    }
    for key in ["reportingComponent", "reportingInstance"] {
        obj.entry(key)
            .or_insert_with(|| Value::String(String::new()));
    }
    event
}

/// The `EventList` upstream prints for `-o json|yaml|jsonpath`.
pub fn event_list(items: Vec<Value>) -> Value {
    let mut list = Map::new();
    list.insert("kind".into(), Value::String("EventList".into()));
    list.insert("apiVersion".into(), Value::String("v1".into()));
    list.insert("metadata".into(), Value::Object(Map::new()));
    list.insert("items".into(), Value::Array(items));
    Value::Object(list)
}

const LIST: &[&str] = &["kind", "apiVersion", "metadata", "items"];
const EVENT: &[&str] = &[
    "kind",
    "apiVersion",
    "metadata",
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];
const META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const REFERENCE: &[&str] = &[
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
];
const SOURCE: &[&str] = &["component", "host"];
const SERIES: &[&str] = &["count", "lastObservedTime"];

/// The Go struct field order of the object at `path` (`None`: a map, keys sorted).
fn order(path: &[&str]) -> Option<&'static [&'static str]> {
    Some(match path {
        [] => LIST,
        ["items"] => EVENT,
        ["items", "metadata"] => META,
        ["items", "involvedObject" | "related"] => REFERENCE,
        ["items", "source"] => SOURCE,
        ["items", "series"] => SERIES,
        _ => return None,
    })
}

/// `json.MarshalIndent(list, "", "    ")` of the typed list, with a final newline.
pub fn to_json(list: &Value) -> String {
    let mut out = String::new();
    write(list, &mut Vec::new(), 0, &mut out);
    out.push('\n');
    out
}

fn write<'a>(v: &'a Value, path: &mut Vec<&'a str>, indent: usize, out: &mut String) {
    let pad = |n: usize| "    ".repeat(n);
    match v {
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            match order(path) {
                Some(fields) => keys.sort_by_key(|k| {
                    (
                        fields.iter().position(|f| f == k).unwrap_or(usize::MAX),
                        (*k).clone(),
                    )
                }),
                None => keys.sort(),
            }
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&scalar(&Value::String((*k).clone())));
                out.push_str(": ");
                path.push(k.as_str());
                write(&map[*k], path, indent + 1, out);
                path.pop();
                if i + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write(item, path, indent + 1, out);
                if i + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        other => out.push_str(&scalar(other)),
    }
}

/// A scalar as Go's encoder escapes it.
fn scalar(v: &Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn struct_order_and_defaults() {
        let e = typed_event(json!({
            "type": "Normal", "reason": "R", "metadata": {"uid": "u", "name": "e",
            "managedFields": []}, "involvedObject": {"name": "p", "kind": "Pod"}
        }));
        let text = to_json(&event_list(vec![e]));
        let want = "{\n    \"kind\": \"EventList\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {},\n    \"items\": [\n        {\n            \"kind\": \"Event\",\n            \"apiVersion\": \"v1\",\n            \"metadata\": {\n                \"name\": \"e\",\n                \"uid\": \"u\",\n                \"creationTimestamp\": null\n            },\n            \"involvedObject\": {\n                \"kind\": \"Pod\",\n                \"name\": \"p\"\n            },\n            \"reason\": \"R\",\n            \"source\": {},\n            \"firstTimestamp\": null,\n            \"lastTimestamp\": null,\n            \"type\": \"Normal\",\n            \"eventTime\": null,\n            \"reportingComponent\": \"\",\n            \"reportingInstance\": \"\"\n        }\n    ]\n}\n";
        assert_eq!(text, want);
    }
}
