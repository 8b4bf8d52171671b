//! The `plaintext` layout of `kubectl explain` over an OpenAPI v3 document: what upstream's
//! template prints (FIELD line, DESCRIPTION wrapped at 76, FIELDS with type guesses, `-required-`,
//! enums), following `$ref`, `allOf`, `items` and `additionalProperties`, with cycle detection
//! along the path.

use serde_json::Value;
use std::collections::BTreeSet;

/// The document and the mode a rendering works in.
pub struct Explainer<'a> {
    pub doc: &'a Value,
    pub recursive: bool,
}

fn prop<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// A map-valued `additionalProperties` (a boolean one does not count).
fn additional(v: &Value) -> Option<&Value> {
    prop(v, "additionalProperties").filter(|a| a.is_object())
}

fn sorted_keys(v: Option<&Value>) -> Vec<String> {
    let mut keys: Vec<String> = v
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

/// go-wordwrap's `WrapString`: breaks at spaces so lines stay within `limit` characters,
/// keeps existing newlines, never splits a word.
pub fn wrap(text: &str, limit: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut word, mut space) = (String::new(), String::new());
    let (mut current, mut word_len, mut space_len) = (0usize, 0usize, 0usize);
    for c in text.chars() {
        if c == '\n' {
            out.push_str(&space);
            out.push_str(&word);
            out.push('\n');
            (space, word) = (String::new(), String::new());
            (space_len, word_len, current) = (0, 0, 0);
        } else if c.is_whitespace() && c != '\u{a0}' {
            if space.is_empty() || !word.is_empty() {
                current += space_len + word_len;
                out.push_str(&space);
                out.push_str(&word);
                (space, word) = (String::new(), String::new());
                (space_len, word_len) = (0, 0);
            }
            space.push(c);
            space_len += 1;
        } else {
            word.push(c);
            word_len += 1;
            if current + space_len + word_len > limit && word_len < limit {
                out.push('\n');
                current = 0;
                space.clear();
                space_len = 0;
            }
        }
    }
    if word.is_empty() {
        if current + space_len <= limit {
            out.push_str(&space);
        }
    } else {
        out.push_str(&space);
        out.push_str(&word);
    }
    out
}

/// sprig's `indent`: every line, including an empty last one, gets the padding.
pub fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

fn enum_text(v: &Value) -> String {
    match v {
        Value::String(s) if s.is_empty() => "\"\"".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Explainer<'_> {
    fn resolve(&self, reference: &str) -> Option<&Value> {
        let name = reference.strip_prefix("#/components/schemas/")?;
        self.doc.pointer("/components/schemas")?.get(name)
    }

    fn resolved<'s>(&'s self, schema: &'s Value) -> &'s Value {
        prop(schema, "$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.resolve(r))
            .unwrap_or(schema)
    }

    pub fn type_guess(&self, schema: &Value) -> String {
        if let Some(items) = prop(schema, "items") {
            return format!("[]{}", self.type_guess(items));
        }
        if let Some(ap) = additional(schema) {
            return format!("map[string]{}", self.type_guess(ap));
        }
        if let Some(all) = prop(schema, "allOf").and_then(Value::as_array)
            && prop(schema, "properties").is_none()
            && all.len() == 1
        {
            return self.type_guess(&all[0]);
        }
        let type_of = |s: &Value| prop(s, "type").and_then(Value::as_str).map(str::to_owned);
        if let Some(reference) = prop(schema, "$ref").and_then(Value::as_str) {
            let target = self.resolve(reference);
            return match target.and_then(type_of) {
                Some(t) if t != "object" => t,
                _ => {
                    let name = reference.rsplit('/').next().unwrap_or("");
                    let last = name.rsplit('.').next().unwrap_or("");
                    if last.is_empty() {
                        "Object".into()
                    } else {
                        last.into()
                    }
                }
            };
        }
        match type_of(schema).as_deref() {
            Some("object") | None | Some("") => "Object".into(),
            Some(t) => t.into(),
        }
    }

    fn extract_enum(&self, schema: &Value, long: bool, limit: i64, indent_amount: usize) -> String {
        let Some(values) = prop(schema, "enum").and_then(Value::as_array) else {
            return String::new();
        };
        if values.is_empty() {
            return String::new();
        }
        let mut out = if long {
            "ENUM:".to_owned()
        } else {
            format!("\n{}enum: ", " ".repeat(indent_amount))
        };
        for (i, v) in values.iter().enumerate() {
            if limit > -1 && i as i64 >= limit {
                out.push_str(", ....");
                break;
            }
            if i > 0 && !long {
                out.push_str(", ");
            } else if long {
                out.push_str("\n    ");
            }
            out.push_str(&enum_text(v));
        }
        out
    }

    fn description(&self, schema: &Value) -> String {
        let s = self.resolved(schema);
        let mut out = String::new();
        if let Some(d) = prop(s, "description")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
        {
            out.push_str(d);
            out.push('\n');
        }
        for sub in prop(s, "allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push_str(&self.description(sub));
        }
        if let Some(items) = prop(s, "items") {
            out.push_str(&self.description(items));
        }
        if let Some(ap) = additional(s) {
            out.push_str(&self.description(ap));
        }
        out
    }

    /// The EXTERNAL DOCS block: its heading at `head`, the text wrapped at `width` at `body`.
    fn external_docs(&self, schema: &Value, head: usize, width: usize, body: usize) -> String {
        let Some(docs) = prop(schema, "externalDocs") else {
            return String::new();
        };
        let mut out = format!("{}\n", indent("EXTERNAL DOCS:", head));
        if let Some(d) = prop(docs, "description")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
        {
            out += &format!("{}\n", indent(&wrap(d, width), body));
        }
        if let Some(u) = prop(docs, "url")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        {
            out += &format!("{}\n", indent(&format!("URL: {u}"), body));
        }
        out
    }

    fn field_detail(&self, parent: &Value, name: &str, level: usize) -> String {
        let indent_amount = level * 2;
        let field = parent
            .pointer(&format!(
                "/properties/{}",
                name.replace('~', "~0").replace('/', "~1")
            ))
            .unwrap_or(&Value::Null);
        let mut out = format!(
            "{}\t<{}>",
            indent(name, indent_amount),
            self.type_guess(field)
        );
        let required = prop(parent, "required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)));
        if required {
            out.push_str(" -required-");
        }
        out += &self.extract_enum(field, false, 4, indent_amount);
        out.push('\n');
        if !self.recursive {
            let desc = prop(field, "description")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
                .unwrap_or("<no description>");
            out += &format!(
                "{}\n",
                indent(&wrap(desc, 78 - indent_amount), indent_amount + 2)
            );
            if prop(field, "externalDocs").is_some() {
                out += "\n";
                out += &self.external_docs(
                    field,
                    indent_amount + 2,
                    76 - indent_amount,
                    indent_amount + 4,
                );
            }
            out.push('\n');
        }
        out
    }

    fn field_list(&self, schema: &Value, level: usize, history: &BTreeSet<String>) -> String {
        let reference = prop(schema, "$ref").and_then(Value::as_str).unwrap_or("");
        if !reference.is_empty() && history.contains(reference) {
            return String::new();
        }
        let mut history = history.clone();
        history.insert(reference.to_owned());
        let s = self.resolved(schema);
        let mut out = String::new();
        for name in sorted_keys(prop(s, "properties")) {
            out += &self.field_detail(s, &name, level);
            if self.recursive {
                let sub = s["properties"][&name].clone();
                out += &self.field_list(&sub, level + 1, &history);
            }
        }
        for sub in prop(s, "allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out += &self.field_list(sub, level, &history);
        }
        if let Some(items) = prop(s, "items") {
            out += &self.field_list(items, level, &history);
        }
        if let Some(ap) = additional(s) {
            out += &self.field_list(ap, level, &history);
        }
        out
    }

    /// The body below the header, or `None` when the path leads nowhere.
    pub fn output(&self, schema: &Value, path: &[String], history: &BTreeSet<String>) -> String {
        let reference = prop(schema, "$ref").and_then(Value::as_str).unwrap_or("");
        let mut next = history.clone();
        next.insert(reference.to_owned());
        let s = self.resolved(schema);
        if path.is_empty() {
            let desc = self.description(s);
            let desc = if desc.is_empty() {
                "<empty>".to_owned()
            } else {
                desc
            };
            let mut out = format!("DESCRIPTION:\n{}\n", indent(&wrap(&desc, 76), 4));
            let docs = self.external_docs(s, 0, 76, 4);
            if !docs.is_empty() {
                out += "\n";
                out += &docs;
            }
            let fields = self.field_list(s, 1, &BTreeSet::new());
            if !fields.is_empty() {
                out += "FIELDS:\n";
                out += &fields;
            }
            return out;
        }
        if !reference.is_empty() && history.contains(reference) {
            return String::new();
        }
        if let Some(sub) = s.get("properties").and_then(|p| p.get(&path[0])) {
            let mut out = String::new();
            if path.len() == 1 {
                out += &format!("FIELD: {} <{}>\n", path[0], self.type_guess(sub));
                out += &self.extract_enum(sub, true, -1, 0);
                out += "\n\n";
            }
            return out + &self.output(sub, &path[1..], &BTreeSet::new());
        }
        if let Some(items) = prop(s, "items") {
            return self.output(items, path, &next);
        }
        if let Some(ap) = additional(s) {
            return self.output(ap, path, &next);
        }
        for sub in prop(s, "allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let out = self.output(sub, path, &next);
            if !out.is_empty() {
                return out;
            }
        }
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrapping() {
        assert_eq!(wrap("aaa bbb ccc", 7), "aaa bbb\nccc");
        assert_eq!(wrap("one\ntwo three", 5), "one\ntwo\nthree");
        assert_eq!(
            wrap("averyveryverylongword x", 5),
            "averyveryverylongword\nx"
        );
        assert_eq!(indent("a\nb\n", 2), "  a\n  b\n  ");
    }

    #[test]
    fn types_and_fields() {
        let doc = json!({"components": {"schemas": {
            "io.k8s.T": {"type": "object", "description": "A T.", "required": ["a"], "properties": {
                "a": {"type": "string", "description": "The a.", "enum": ["", "X"]},
                "b": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.U"}},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "s": {"allOf": [{"$ref": "#/components/schemas/io.k8s.U"}], "description": "An s."}}},
            "io.k8s.U": {"type": "object", "description": "A U.", "properties": {"x": {"type": "integer"}}}}}});
        let e = Explainer {
            doc: &doc,
            recursive: false,
        };
        let t = &doc["components"]["schemas"]["io.k8s.T"];
        assert_eq!(e.type_guess(&t["properties"]["b"]), "[]U");
        assert_eq!(e.type_guess(&t["properties"]["m"]), "map[string]string");
        assert_eq!(e.type_guess(&t["properties"]["s"]), "U");
        let out = e.output(t, &[], &BTreeSet::new());
        assert!(out.starts_with("DESCRIPTION:\n    A T.\n    \nFIELDS:\n  a\t<string> -required-\n  enum: \"\", X\n    The a.\n\n"), "{out}");
        let field = e.output(t, &["s".into(), "x".into()], &BTreeSet::new());
        assert!(
            field.starts_with("FIELD: x <integer>\n\n\nDESCRIPTION:\n    <empty>\n"),
            "{field}"
        );
        let r = Explainer {
            doc: &doc,
            recursive: true,
        };
        assert!(
            r.output(t, &[], &BTreeSet::new())
                .contains("  s\t<U>\n    x\t<integer>\n")
        );
    }
}
