//! A `JSONSchemaProps` read into a typed tree. Reading reports what upstream's OpenAPI schema
//! validation forbids outright (`$ref`, `items` arrays, unknown types, ...) at the keyword's
//! path; everything else about structurality is checked on the tree (`structural.rs`).

use api_types::validation::{BadValue, ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The JSON types a schema may name, sorted as upstream lists them.
pub(crate) const OPENAPI_TYPES: &[&str] =
    &["array", "boolean", "integer", "number", "object", "string"];

/// `additionalProperties`: a bool or a schema.
#[derive(Debug, Clone)]
pub(crate) enum Additional {
    Bool(bool),
    Schema(Box<Node>),
}

/// A compiled `pattern`.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub source: String,
    pub regex: Option<regex::Regex>,
}

/// One schema (or one clause under `allOf`/`anyOf`/`oneOf`/`not`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub type_: String,
    pub nullable: bool,
    pub format: String,
    pub has_title: bool,
    pub has_description: bool,
    pub has_external_docs: bool,
    pub default: Option<Value>,
    pub properties: BTreeMap<String, Node>,
    pub additional: Option<Additional>,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enum_values: Option<Vec<Value>>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub pattern: Option<Pattern>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    pub has_validations: bool,
}

impl Node {
    /// The `additionalProperties` schema, when it is one (not a bool).
    pub fn additional_schema(&self) -> Option<&Node> {
        match &self.additional {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }
}

/// Reads `value` (a `JSONSchemaProps`) found at `path`, collecting what cannot be accepted.
pub(crate) fn parse(value: &Value, path: &FieldPath, errs: &mut ErrorList) -> Node {
    let mut node = Node::default();
    let Some(map) = value.as_object() else {
        errs.push(FieldError::invalid(
            path,
            BadValue::from(value),
            "must be an object",
        ));
        return node;
    };
    for (key, v) in map {
        read_keyword(&mut node, key, v, path, errs);
    }
    node
}

fn read_keyword(node: &mut Node, key: &str, v: &Value, path: &FieldPath, errs: &mut ErrorList) {
    let at = path.child(key);
    match key {
        "type" => {
            if let Some(t) = string(v, &at, errs) {
                if !t.is_empty() && !OPENAPI_TYPES.contains(&t.as_str()) {
                    errs.push(FieldError::not_supported(&at, t.as_str(), OPENAPI_TYPES));
                }
                if t == "null" {
                    errs.push(FieldError::forbidden(
                        &at,
                        "type cannot be set to null, use nullable as an alternative",
                    ));
                }
                node.type_ = t;
            }
        }
        "nullable" => node.nullable = boolean(v, &at, errs),
        "format" => node.format = string(v, &at, errs).unwrap_or_default(),
        "title" => node.has_title = string(v, &at, errs).is_some_and(|s| !s.is_empty()),
        "description" => node.has_description = string(v, &at, errs).is_some_and(|s| !s.is_empty()),
        "externalDocs" => node.has_external_docs = !v.is_null(),
        "default" => node.default = (!v.is_null()).then(|| v.clone()),
        "example" => {}
        "properties" => {
            if let Some(props) = object(v, &at, errs) {
                for (name, schema) in props {
                    let child = parse(schema, &at.key(name.as_str()), errs);
                    node.properties.insert(name.clone(), child);
                }
            }
        }
        "additionalProperties" => match v {
            Value::Bool(b) => node.additional = Some(Additional::Bool(*b)),
            Value::Object(_) => {
                node.additional = Some(Additional::Schema(Box::new(parse(v, &at, errs))))
            }
            Value::Null => {}
            other => errs.push(FieldError::invalid(
                &at,
                BadValue::from(other),
                "must be a boolean or a schema",
            )),
        },
        "items" => match v {
            Value::Object(_) => node.items = Some(Box::new(parse(v, &at, errs))),
            Value::Array(_) => errs.push(FieldError::forbidden(
                &at,
                "items must be a schema object and not an array",
            )),
            Value::Null => {}
            other => errs.push(FieldError::invalid(
                &at,
                BadValue::from(other),
                "must be a schema",
            )),
        },
        "required" => {
            if let Some(list) = array(v, &at, errs) {
                for (i, item) in list.iter().enumerate() {
                    if let Some(s) = string(item, &at.index(i), errs) {
                        node.required.push(s);
                    }
                }
            }
        }
        "enum" => node.enum_values = array(v, &at, errs).cloned(),
        "maximum" => node.maximum = number(v, &at, errs),
        "minimum" => node.minimum = number(v, &at, errs),
        "multipleOf" => node.multiple_of = number(v, &at, errs),
        "exclusiveMaximum" => node.exclusive_maximum = boolean(v, &at, errs),
        "exclusiveMinimum" => node.exclusive_minimum = boolean(v, &at, errs),
        "maxLength" => node.max_length = integer(v, &at, errs),
        "minLength" => node.min_length = integer(v, &at, errs),
        "maxItems" => node.max_items = integer(v, &at, errs),
        "minItems" => node.min_items = integer(v, &at, errs),
        "maxProperties" => node.max_properties = integer(v, &at, errs),
        "minProperties" => node.min_properties = integer(v, &at, errs),
        "uniqueItems" => node.unique_items = boolean(v, &at, errs),
        "pattern" => {
            if let Some(source) = string(v, &at, errs).filter(|s| !s.is_empty()) {
                let regex = match regex::Regex::new(&source) {
                    Ok(re) => Some(re),
                    Err(err) => {
                        let detail = format!(
                            "must be a valid regular expression, but isn't: {}",
                            first_line(&err.to_string())
                        );
                        errs.push(FieldError::invalid(&at, source.as_str(), detail));
                        None
                    }
                };
                node.pattern = Some(Pattern { source, regex });
            }
        }
        "allOf" => node.all_of = clauses(v, &at, errs),
        "anyOf" => node.any_of = clauses(v, &at, errs),
        "oneOf" => node.one_of = clauses(v, &at, errs),
        "not" if !v.is_null() => node.not = Some(Box::new(parse(v, &at, errs))),
        "x-kubernetes-preserve-unknown-fields" => {
            if v == &Value::Bool(false) {
                errs.push(FieldError::invalid(&at, false, "must be true or undefined"));
            }
            node.preserve_unknown = boolean(v, &at, errs);
        }
        "x-kubernetes-embedded-resource" => node.embedded = boolean(v, &at, errs),
        "x-kubernetes-int-or-string" => node.int_or_string = boolean(v, &at, errs),
        "x-kubernetes-list-type" => node.list_type = string(v, &at, errs),
        "x-kubernetes-map-type" => node.map_type = string(v, &at, errs),
        "x-kubernetes-list-map-keys" => {
            if let Some(list) = array(v, &at, errs) {
                for (i, item) in list.iter().enumerate() {
                    if let Some(s) = string(item, &at.index(i), errs) {
                        node.list_map_keys.push(s);
                    }
                }
            }
        }
        "x-kubernetes-validations" => {
            node.has_validations = v.as_array().is_some_and(|a| !a.is_empty())
        }
        "id" if !v.as_str().unwrap_or_default().is_empty() => {
            errs.push(FieldError::forbidden(&at, "id is not supported"))
        }
        "additionalItems" if !v.is_null() => errs.push(FieldError::forbidden(
            &at,
            "additionalItems is not supported",
        )),
        "patternProperties" if v.as_object().is_some_and(|m| !m.is_empty()) => errs.push(
            FieldError::forbidden(&at, "patternProperties is not supported"),
        ),
        "definitions" if v.as_object().is_some_and(|m| !m.is_empty()) => {
            errs.push(FieldError::forbidden(&at, "definitions is not supported"))
        }
        "dependencies" if !v.is_null() => {
            errs.push(FieldError::forbidden(&at, "dependencies is not supported"))
        }
        "$ref" if !v.is_null() => errs.push(FieldError::forbidden(&at, "$ref is not supported")),
        // Unknown keywords are dropped, as upstream's decoding of JSONSchemaProps drops them.
        _ => {}
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn clauses(v: &Value, at: &FieldPath, errs: &mut ErrorList) -> Vec<Node> {
    let Some(list) = array(v, at, errs) else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .map(|(i, s)| parse(s, &at.index(i), errs))
        .collect()
}

fn string(v: &Value, at: &FieldPath, errs: &mut ErrorList) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => {
            errs.push(FieldError::invalid(
                at,
                BadValue::from(other),
                "must be a string",
            ));
            None
        }
    }
}

fn boolean(v: &Value, at: &FieldPath, errs: &mut ErrorList) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Null => false,
        other => {
            errs.push(FieldError::invalid(
                at,
                BadValue::from(other),
                "must be a boolean",
            ));
            false
        }
    }
}

fn number(v: &Value, at: &FieldPath, errs: &mut ErrorList) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Null => None,
        other => {
            errs.push(FieldError::invalid(
                at,
                BadValue::from(other),
                "must be a number",
            ));
            None
        }
    }
}

fn integer(v: &Value, at: &FieldPath, errs: &mut ErrorList) -> Option<i64> {
    match v {
        Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
        Value::Null => None,
        other => {
            errs.push(FieldError::invalid(
                at,
                BadValue::from(other),
                "must be an integer",
            ));
            None
        }
    }
}

fn array<'a>(v: &'a Value, at: &FieldPath, errs: &mut ErrorList) -> Option<&'a Vec<Value>> {
    match v {
        Value::Array(a) => Some(a),
        Value::Null => None,
        other => {
            errs.push(FieldError::invalid(
                at,
                BadValue::from(other),
                "must be an array",
            ));
            None
        }
    }
}

fn object<'a>(
    v: &'a Value,
    at: &FieldPath,
    errs: &mut ErrorList,
) -> Option<&'a Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        Value::Null => None,
        other => {
            errs.push(FieldError::invalid(
                at,
                BadValue::from(other),
                "must be an object",
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> (Node, ErrorList) {
        let mut errs = ErrorList::new();
        let node = parse(&v, &FieldPath::new("s"), &mut errs);
        (node, errs)
    }

    #[test]
    fn reads_keywords() {
        let (n, errs) = read(json!({
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "integer", "maximum": 3, "default": 1}},
            "additionalProperties": false,
            "x-kubernetes-list-map-keys": ["k"],
            "pattern": "^a+$",
        }));
        assert!(errs.is_empty(), "{errs}");
        assert_eq!(n.type_, "object");
        assert_eq!(n.required, vec!["a"]);
        assert_eq!(n.properties["a"].maximum, Some(3.0));
        assert_eq!(n.properties["a"].default, Some(json!(1)));
        assert!(matches!(n.additional, Some(Additional::Bool(false))));
        assert_eq!(n.list_map_keys, vec!["k"]);
        assert!(n.pattern.unwrap().regex.unwrap().is_match("aa"));
    }

    #[test]
    fn forbidden_keywords_are_reported_at_their_path() {
        let (_, errs) = read(json!({
            "$ref": "#/x",
            "items": [{"type": "string"}],
            "type": "null",
            "properties": {"b": {"type": "int"}},
            "pattern": "(",
            "x-kubernetes-preserve-unknown-fields": false,
        }));
        let text = errs.to_string();
        for want in [
            "s.$ref: Forbidden: $ref is not supported",
            "s.items: Forbidden: items must be a schema object and not an array",
            "s.type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "s.type: Forbidden: type cannot be set to null, use nullable as an alternative",
            "s.properties[b].type: Unsupported value: \"int\"",
            "s.pattern: Invalid value: \"(\": must be a valid regular expression, but isn't:",
            "s.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
    }

    #[test]
    fn wrong_json_types_are_invalid_not_panics() {
        let (_, errs) = read(json!({"type": 5, "maxLength": "x", "required": "a"}));
        assert_eq!(errs.len(), 3, "{errs}");
        let (_, errs) = read(json!("nope"));
        assert_eq!(
            errs.to_string(),
            "s: Invalid value: \"nope\": must be an object"
        );
    }
}
