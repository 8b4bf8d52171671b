//! Human-readable output from the server's `Table` (`meta.k8s.io/v1`): the columns the server
//! chose (priority 0, or all with `-o wide`), decorated as upstream's table printer does
//! (NAMESPACE first with `-A`, a `kind/` prefix when several types print, `-L` columns,
//! LABELS with `--show-labels`).

use serde_json::Value;

/// How to decorate the server's table.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    pub wide: bool,
    pub no_headers: bool,
    pub show_labels: bool,
    pub label_columns: Vec<String>,
    pub with_namespace: bool,
    /// `pod`, `deployment.apps`: prefixed to names when several types print.
    pub kind_prefix: Option<String>,
}

/// The rows (header first unless `no_headers` or `header` is false) of one table.
pub fn rows(table: &Value, options: &TableOptions, header: bool) -> Vec<Vec<String>> {
    let columns: Vec<&Value> = table
        .get("columnDefinitions")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let shown: Vec<usize> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            options.wide || c.get("priority").and_then(Value::as_i64).unwrap_or(0) == 0
        })
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    if header && !options.no_headers {
        let mut cells = Vec::new();
        if options.with_namespace {
            cells.push("NAMESPACE".to_owned());
        }
        for &i in &shown {
            let name = columns[i].get("name").and_then(Value::as_str).unwrap_or("");
            cells.push(name.to_uppercase());
        }
        cells.extend(label_headers(&options.label_columns));
        if options.show_labels {
            cells.push("LABELS".to_owned());
        }
        out.push(cells);
    }
    for row in table
        .get("rows")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let empty = Vec::new();
        let values = row.get("cells").and_then(Value::as_array).unwrap_or(&empty);
        let meta = row.pointer("/object/metadata");
        let mut cells = Vec::new();
        if options.with_namespace {
            let ns = meta
                .and_then(|m| m.get("namespace"))
                .and_then(Value::as_str);
            cells.push(ns.unwrap_or("").to_owned());
        }
        for (n, &i) in shown.iter().enumerate() {
            let mut text = values.get(i).map(cell_text).unwrap_or_default();
            let is_name = columns[i].get("format").and_then(Value::as_str) == Some("name");
            if let Some(prefix) = &options.kind_prefix
                && (is_name || n == 0)
            {
                text = format!("{prefix}/{text}");
            }
            cells.push(text);
        }
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object);
        for key in &options.label_columns {
            let value = labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            cells.push(value.unwrap_or("").to_owned());
        }
        if options.show_labels {
            cells.push(format_labels(labels));
        }
        out.push(cells);
    }
    out
}

/// `-L a/b,c` headers: the last path segment, upper-cased.
fn label_headers(labels: &[String]) -> Vec<String> {
    labels
        .iter()
        .map(|l| l.rsplit('/').next().unwrap_or(l).to_uppercase())
        .collect()
}

/// `k=v,k2=v2` sorted by key, `<none>` when empty.
pub fn format_labels(labels: Option<&serde_json::Map<String, Value>>) -> String {
    let Some(labels) = labels.filter(|l| !l.is_empty()) else {
        return "<none>".to_owned();
    };
    labels
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect::<Vec<_>>()
        .join(",")
}

/// A cell as upstream prints it: text up to the first line break (then `...`), numbers and
/// booleans as Go formats them, nothing for null.
fn cell_text(cell: &Value) -> String {
    match cell {
        Value::Null => String::new(),
        Value::String(s) => match s.find(['\n', '\r', '\u{c}']) {
            Some(i) => format!("{}...", &s[..i]),
            None => s.clone(),
        },
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(cell_text).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", cell_text(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table() -> Value {
        json!({
            "kind": "Table",
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "priority": 0},
                {"name": "Data", "type": "integer", "priority": 0},
                {"name": "Node", "type": "string", "priority": 1},
            ],
            "rows": [
                {"cells": ["a", 1, "n1"], "object": {"metadata": {"name": "a", "namespace": "ns", "labels": {"b": "2", "a": "1"}}}},
                {"cells": ["b\nmore", null, "n2"], "object": {"metadata": {"name": "b", "namespace": "ns"}}},
            ]
        })
    }

    #[test]
    fn decorations() {
        let plain = rows(&table(), &TableOptions::default(), true);
        assert_eq!(
            plain,
            vec![vec!["NAME", "DATA"], vec!["a", "1"], vec!["b...", ""]]
        );
        let decorated = rows(
            &table(),
            &TableOptions {
                wide: true,
                show_labels: true,
                label_columns: vec!["example.com/a".into()],
                with_namespace: true,
                kind_prefix: Some("configmap".into()),
                no_headers: false,
            },
            true,
        );
        assert_eq!(
            decorated[0],
            vec!["NAMESPACE", "NAME", "DATA", "NODE", "A", "LABELS"]
        );
        assert_eq!(
            decorated[1],
            vec!["ns", "configmap/a", "1", "n1", "", "a=1,b=2"]
        );
        assert_eq!(decorated[2][5], "<none>");
        let no_headers = rows(
            &table(),
            &TableOptions {
                no_headers: true,
                ..Default::default()
            },
            true,
        );
        assert_eq!(no_headers.len(), 2);
    }
}
