//! Reading fields out of objects and formatting them the way upstream's printers do.

use jiff::Timestamp;
use serde_json::Value;

/// The string at a JSON pointer, or `""`.
pub fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The integer at a JSON pointer, or 0.
pub fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The list at a JSON pointer, or an empty slice.
pub fn list<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The number of entries of the list or map at a JSON pointer.
pub fn count(obj: &Value, pointer: &str) -> i64 {
    let n = match obj.pointer(pointer) {
        Some(Value::Array(a)) => a.len(),
        Some(Value::Object(m)) => m.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `value`, or `fallback` when it is empty.
pub fn or<'a>(value: &'a str, fallback: &'a str) -> &'a str {
    if value.is_empty() { fallback } else { value }
}

pub use api_types::duration::human_duration;

/// Parses an RFC 3339 timestamp as the API writes them.
pub fn timestamp(value: &str) -> Option<Timestamp> {
    value.parse().ok()
}

/// Upstream's `translateTimestampSince`: the human duration from `value` to `now`, or
/// `<unknown>` when there is no timestamp.
pub fn since(value: &str, now: Timestamp) -> String {
    match timestamp(value) {
        Some(t) => human_duration(now.as_second() - t.as_second()),
        None => "<unknown>".to_string(),
    }
}

/// The AGE cell of an object.
pub fn age(obj: &Value, now: Timestamp) -> Value {
    Value::String(since(text(obj, "/metadata/creationTimestamp"), now))
}

/// Upstream's `labels.FormatLabels`: `k=v` pairs sorted by key, or `<none>`.
pub fn format_labels(map: Option<&Value>) -> String {
    let Some(Value::Object(map)) = map else {
        return "<none>".to_string();
    };
    if map.is_empty() {
        return "<none>".to_string();
    }
    // serde_json's map is ordered by key unless `preserve_order` is on: sort to be sure.
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// Upstream's `metav1.FormatLabelSelector`: the selector in label-selector syntax, requirements
/// sorted by key, or `<none>` when it selects everything.
pub fn format_label_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return "<none>".to_string();
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(Value::Object(labels)) = selector.get("matchLabels") {
        for (k, v) in labels {
            requirements.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for expr in list(selector, "/matchExpressions") {
        let key = text(expr, "/key");
        let mut values: Vec<&str> = list(expr, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let rendered = match text(expr, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<error>".to_string(),
        };
        requirements.push((key.to_string(), rendered));
    }
    if requirements.is_empty() {
        return "<none>".to_string();
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements
        .into_iter()
        .map(|(_, r)| r)
        .collect::<Vec<_>>()
        .join(",")
}

/// The CONTAINERS and IMAGES cells of a pod template's containers.
pub fn containers_and_images(containers: &[Value]) -> (Value, Value) {
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    (names.join(",").into(), images.join(",").into())
}

/// Kubernetes' short names for access modes (`RWO`, `ROX`, `RWX`, `RWOP`), comma-joined.
pub fn access_modes(modes: &[Value]) -> String {
    let mut short: Vec<&str> = Vec::new();
    for mode in modes.iter().filter_map(Value::as_str) {
        let s = match mode {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            _ => continue,
        };
        if !short.contains(&s) {
            short.push(s);
        }
    }
    short.join(",")
}

/// A JSON boolean rendered as Go's `%v` does, or `fallback` when absent.
pub fn bool_text(value: Option<&Value>, fallback: &str) -> String {
    match value.and_then(Value::as_bool) {
        Some(true) => "True".to_string(),
        Some(false) => "False".to_string(),
        None => fallback.to_string(),
    }
}

/// An int-or-string value (such as `maxUnavailable`) as text, or `fallback` when absent.
pub fn int_or_string(value: Option<&Value>, fallback: &str) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => fallback.to_string(),
    }
}
