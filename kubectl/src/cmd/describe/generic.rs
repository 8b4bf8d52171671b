//! Upstream's `genericDescriber`, for kinds without a describer of their own: name,
//! namespace, labels, annotations, then every other field as indented `Key:  value` lines
//! with keys turned into words (`apiVersion` -> `API Version`).

use super::events;
use super::writer::{PrefixWriter, annotations_multiline, labels_multiline, obj, s};
use serde_json::{Map, Value};

const SKIP: &[&str] = &[
    ".metadata.managedFields",
    ".metadata.name",
    ".metadata.namespace",
    ".metadata.labels",
    ".metadata.annotations",
];

/// Describes any object.
pub fn describe(object: &Value, events: Option<&[Value]>) -> String {
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(object, "/metadata/name")));
    w.write(
        0,
        &format!("Namespace:\t{}\n", s(object, "/metadata/namespace")),
    );
    labels_multiline(&mut w, "", "Labels", obj(object, "/metadata/labels"));
    annotations_multiline(&mut w, "Annotations", obj(object, "/metadata/annotations"));
    if let Some(content) = object.as_object() {
        content_lines(&mut w, 0, content, "");
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    w.finish()
}

/// `printUnstructuredContent`: fields sorted, maps and lists nested one level deeper.
fn content_lines(w: &mut PrefixWriter, level: usize, content: &Map<String, Value>, prefix: &str) {
    let mut fields: Vec<&String> = content.keys().collect();
    fields.sort();
    for field in fields {
        let path = format!("{prefix}.{field}");
        if SKIP.contains(&path.as_str()) {
            continue;
        }
        match &content[field] {
            Value::Object(map) => {
                w.write(level, &format!("{}:\n", smart_label(field)));
                content_lines(w, level + 1, map, &path);
            }
            Value::Array(items) => {
                w.write(level, &format!("{}:\n", smart_label(field)));
                for item in items {
                    match item {
                        Value::Object(map) => content_lines(w, level + 1, map, &path),
                        other => w.write(level + 1, &format!("{}\n", go_value(other))),
                    }
                }
            }
            other => w.write(
                level,
                &format!("{}:\t{}\n", smart_label(field), go_value(other)),
            ),
        }
    }
}

/// A JSON scalar as Go's `%v` prints what the unstructured decoder made of it.
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)` with Go's exponent form).
fn go_float(f: f64) -> String {
    let exp = if f == 0.0 {
        0
    } else {
        f.abs().log10().floor() as i32
    };
    if (-4..21).contains(&exp) {
        let text = format!("{f}");
        return text;
    }
    let text = format!("{f:e}");
    match text.split_once('e') {
        Some((mantissa, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
}

/// `smartLabelFor`: camel-case split into title-cased words, known acronyms upper-cased; a
/// field with characters other than letters and `-` is left alone.
pub fn smart_label(field: &str) -> String {
    if field.chars().any(|c| !c.is_alphabetic() && c != '-') {
        return field.to_owned();
    }
    const ACRONYMS: &[&str] = &["API", "URL", "UID", "OSB", "GUID"];
    camel_split(field)
        .into_iter()
        .filter(|p| p != "_")
        .map(|part| {
            let upper = part.to_uppercase();
            if ACRONYMS.contains(&upper.as_str()) {
                upper
            } else {
                title(&part)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `strings.Title`: the first letter of each word upper-cased.
fn title(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut start = true;
    for c in word.chars() {
        if start && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        start = !(c.is_alphanumeric() || c == '_' || c == '\'');
    }
    out
}

/// fatih/camelcase's `Split`: runs of lower, upper, digit and other characters, with the last
/// upper-case letter of a run moved to a following lower-case run (`PDFLoader` -> `PDF`,
/// `Loader`).
fn camel_split(src: &str) -> Vec<String> {
    let class = |c: char| {
        if c.is_lowercase() {
            1
        } else if c.is_uppercase() {
            2
        } else if c.is_numeric() {
            3
        } else {
            4
        }
    };
    let mut runs: Vec<Vec<char>> = Vec::new();
    let mut last = 0;
    for c in src.chars() {
        let k = class(c);
        match runs.last_mut() {
            Some(run) if k == last => run.push(c),
            _ => runs.push(vec![c]),
        }
        last = k;
    }
    for i in 0..runs.len().saturating_sub(1) {
        let upper_then_lower = runs[i].first().is_some_and(|c| c.is_uppercase())
            && runs[i + 1].first().is_some_and(|c| c.is_lowercase());
        if upper_then_lower && let Some(moved) = runs[i].pop() {
            runs[i + 1].insert(0, moved);
        }
    }
    runs.into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.into_iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels() {
        for (field, want) in [
            ("apiVersion", "API Version"),
            ("kind", "Kind"),
            ("creationTimestamp", "Creation Timestamp"),
            ("uid", "UID"),
            ("holderIdentity", "Holder Identity"),
            ("leaseDurationSeconds", "Lease Duration Seconds"),
            ("PDFLoader", "PDF Loader"),
            ("x.y", "x.y"),
            ("a1", "a1"),
        ] {
            assert_eq!(smart_label(field), want, "{field}");
        }
    }

    #[test]
    fn generic_layout() {
        let obj = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l", "namespace": "ns", "uid": "u",
                "managedFields": [{"x": 1}]},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "list": ["a", 2]}
        });
        assert_eq!(
            describe(&obj, None),
            concat!(
                "Name:         l\nNamespace:    ns\nLabels:       <none>\nAnnotations:  <none>\n",
                "API Version:  coordination.k8s.io/v1\nKind:         Lease\nMetadata:\n  UID:  u\n",
                "Spec:\n  Holder Identity:         me\n  Lease Duration Seconds:  15\n",
                "  List:\n    a\n    2\n"
            )
        );
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
    }
}
