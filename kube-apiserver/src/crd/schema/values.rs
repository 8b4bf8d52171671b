//! Validation of values against a schema, with the semantics and messages of upstream's
//! OpenAPI validator (`k8s.io/kube-openapi/pkg/validation/validate`) as apiextensions turns
//! its results into field errors: `spec.replicas in body must be of type integer: "string"`.

use super::formats;
use super::node::{Additional, Node};
use api_types::validation::{BadValue, FieldError, FieldPath, go_quote};
use serde_json::{Map, Value};

/// Walks a value with a schema; errors are pathed under `base` with the dotted name that
/// upstream's validator builds (`spec.items[0].name`).
pub(crate) struct Validator<'a> {
    pub base: &'a FieldPath,
}

impl Validator<'_> {
    fn path(&self, name: &str) -> FieldPath {
        let trimmed = name.trim_start_matches('.');
        if trimmed.is_empty() {
            self.base.clone()
        } else {
            self.base.child(trimmed)
        }
    }

    /// Upstream's "composite" errors (junctors) carry no field: they land on the base path.
    fn composite(&self, message: String) -> FieldError {
        FieldError::invalid(self.base, "", message)
    }

    /// Validates `data` at `name` against `s`; `skip_meta` leaves a resource root's
    /// `apiVersion`, `kind` and `metadata` to the object-meta checks.
    pub fn validate(&self, s: &Node, data: &Value, name: &str, skip_meta: bool) -> Vec<FieldError> {
        let mut out = Vec::new();
        let types = effective_types(s);
        let format = supported_format(&s.format);
        if data.is_null() {
            if !types.is_empty() && !s.nullable {
                out.push(self.type_error(name, &types.join(","), "null"));
            }
            self.check_enum(s, data, name, &mut out);
            return out;
        }
        self.check_type(&types, format, data, name, &mut out);
        self.junctors(s, data, name, &mut out);
        match data {
            Value::String(text) => {
                if let Some(e) = self.check_string(s, text, name) {
                    out.push(e);
                }
                if !format.is_empty() && formats::known(format) && !formats::valid(format, text) {
                    out.push(FieldError::type_invalid(
                        &self.path(name),
                        text.as_str(),
                        type_message(name, format, Some(text)),
                    ));
                }
            }
            Value::Number(_) => self.check_number(s, data, name, &mut out),
            Value::Array(list) => self.check_array(s, list, name, &mut out),
            _ => {}
        }
        self.check_enum(s, data, name, &mut out);
        if let Value::Object(map) = data {
            self.check_object(s, map, name, skip_meta, &mut out);
        }
        out
    }

    fn type_error(&self, name: &str, want: &str, got: &str) -> FieldError {
        FieldError::type_invalid(&self.path(name), got, type_message(name, want, Some(got)))
    }

    fn check_type(
        &self,
        types: &[&str],
        format: &str,
        data: &Value,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        if types.is_empty() && format.is_empty() {
            return;
        }
        let (sch_type, data_format) = json_type(data);
        let is_float_int = sch_type == "number"
            && data
                .as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
            && types.contains(&"integer");
        let is_int_float = sch_type == "integer" && types.contains(&"number");
        let textual = matches!(data, Value::String(_) | Value::Array(_));
        let compatible =
            types.contains(&sch_type) || data_format == format || is_float_int || is_int_float;
        if !textual && !format.is_empty() && !compatible {
            out.push(self.type_error(name, format, data_format));
            return;
        }
        let numeric = types.contains(&"number") || types.contains(&"integer");
        // A formatted string or list is left to the format check, whatever its type says.
        if !numeric && !format.is_empty() && textual {
            return;
        }
        if !(types.contains(&sch_type) || is_float_int || is_int_float) {
            out.push(self.type_error(name, &types.join(","), sch_type));
        }
    }

    fn junctors(&self, s: &Node, data: &Value, name: &str, out: &mut Vec<FieldError>) {
        let quoted = go_quote(name);
        if !s.any_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut ok = false;
            for clause in &s.any_of {
                let errs = self.validate(clause, data, name, false);
                if errs.is_empty() {
                    ok = true;
                    break;
                }
                if best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                    best = Some(errs);
                }
            }
            if !ok {
                out.push(self.composite(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                )));
                out.extend(best.unwrap_or_default());
            }
        }
        if !s.one_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut valid = 0;
            for clause in &s.one_of {
                let errs = self.validate(clause, data, name, false);
                if errs.is_empty() {
                    valid += 1;
                } else if valid == 0 && best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                    best = Some(errs);
                }
            }
            if valid != 1 {
                let detail = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                out.push(self.composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {detail}"
                )));
                if valid == 0 {
                    out.extend(best.unwrap_or_default());
                }
            }
        }
        if !s.all_of.is_empty() {
            let mut valid = 0;
            for clause in &s.all_of {
                let errs = self.validate(clause, data, name, false);
                if errs.is_empty() {
                    valid += 1;
                }
                out.extend(errs);
            }
            if valid != s.all_of.len() {
                let none = if valid == 0 { ". None validated" } else { "" };
                out.push(self.composite(format!(
                    "{quoted} must validate all the schemas (allOf){none}"
                )));
            }
        }
        if let Some(not) = &s.not
            && self.validate(not, data, name, false).is_empty()
        {
            out.push(self.composite(format!("{quoted} must not validate the schema (not)")));
        }
    }

    /// Length and pattern: upstream stops at the first failure.
    fn check_string(&self, s: &Node, text: &str, name: &str) -> Option<FieldError> {
        let len = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = s.max_length.filter(|max| len > *max) {
            let max = usize::try_from(max).unwrap_or_default();
            return Some(FieldError::too_long(&self.path(name), max));
        }
        if let Some(min) = s.min_length.filter(|min| len < *min) {
            return Some(FieldError::invalid(
                &self.path(name),
                text,
                format!("{name} in body should be at least {min} chars long"),
            ));
        }
        let pattern = s.pattern.as_ref()?;
        let matches = pattern.regex.as_ref().is_none_or(|re| re.is_match(text));
        (!matches).then(|| {
            FieldError::invalid(
                &self.path(name),
                text,
                format!("{name} in body should match '{}'", pattern.source),
            )
        })
    }

    fn check_number(&self, s: &Node, data: &Value, name: &str, out: &mut Vec<FieldError>) {
        let int = data.as_i64();
        let value = data.as_f64().unwrap_or_default();
        let path = self.path(name);
        if let Some(factor) = s.multiple_of {
            if factor < 0.0 {
                out.push(FieldError::invalid(
                    &path,
                    BadValue::Raw(go_float(factor)),
                    format!(
                        "factor MultipleOf declared for {name} must be positive: {}",
                        go_float(factor)
                    ),
                ));
            } else if !is_multiple(int, value, factor) {
                let shown = match int {
                    Some(_) if factor.fract() == 0.0 => go_float(factor.trunc()),
                    _ => go_float(factor),
                };
                out.push(FieldError::invalid(
                    &path,
                    BadValue::from(data),
                    format!("{name} in body should be a multiple of {shown}"),
                ));
            }
        }
        if let Some(min) = s.minimum {
            let below = match int {
                Some(i) => {
                    let m = min as i64;
                    if s.exclusive_minimum { i <= m } else { i < m }
                }
                None if s.exclusive_minimum => value <= min,
                None => value < min,
            };
            if below {
                let shown = if int.is_some() {
                    (min as i64).to_string()
                } else {
                    go_float(min)
                };
                let rel = if s.exclusive_minimum {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                out.push(FieldError::invalid(
                    &path,
                    BadValue::from(data),
                    format!("{name} in body should be {rel} {shown}"),
                ));
            }
        }
        if let Some(max) = s.maximum {
            let above = match int {
                Some(i) => {
                    let m = max as i64;
                    if s.exclusive_maximum { i >= m } else { i > m }
                }
                None if s.exclusive_maximum => value >= max,
                None => value > max,
            };
            if above {
                let shown = if int.is_some() {
                    (max as i64).to_string()
                } else {
                    go_float(max)
                };
                let rel = if s.exclusive_maximum {
                    "less than"
                } else {
                    "less than or equal to"
                };
                out.push(FieldError::invalid(
                    &path,
                    BadValue::from(data),
                    format!("{name} in body should be {rel} {shown}"),
                ));
            }
        }
    }

    fn check_array(&self, s: &Node, list: &[Value], name: &str, out: &mut Vec<FieldError>) {
        if let Some(items) = &s.items {
            for (i, item) in list.iter().enumerate() {
                out.extend(self.validate(items, item, &format!("{name}[{i}]"), false));
            }
        }
        let size = list.len();
        let size_i = i64::try_from(size).unwrap_or(i64::MAX);
        if let Some(min) = s.min_items.filter(|min| size_i < *min) {
            out.push(FieldError::invalid(
                &self.path(name),
                size,
                format!("{name} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = s.max_items.filter(|max| size_i > *max) {
            out.push(FieldError::too_many(
                &self.path(name),
                size,
                usize::try_from(max).unwrap_or_default(),
            ));
        }
        if s.unique_items
            && list
                .iter()
                .enumerate()
                .any(|(i, a)| list[..i].iter().any(|b| json_equal(a, b)))
        {
            out.push(FieldError::invalid(
                &self.path(name),
                "",
                format!("{name} in body shouldn't contain duplicates"),
            ));
        }
    }

    fn check_enum(&self, s: &Node, data: &Value, name: &str, out: &mut Vec<FieldError>) {
        let Some(values) = s.enum_values.as_ref().filter(|v| !v.is_empty()) else {
            return;
        };
        if values.iter().any(|v| json_equal(v, data)) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        out.push(FieldError::not_supported(
            &self.path(name),
            data,
            &supported,
        ));
    }

    fn check_object(
        &self,
        s: &Node,
        map: &Map<String, Value>,
        name: &str,
        skip_meta: bool,
        out: &mut Vec<FieldError>,
    ) {
        let count = map.len();
        let count_i = i64::try_from(count).unwrap_or(i64::MAX);
        if let Some(min) = s.min_properties.filter(|min| count_i < *min) {
            out.push(FieldError::invalid(
                &self.path(name),
                count,
                format!("{name} in body should have at least {min} properties"),
            ));
            return;
        }
        if let Some(max) = s.max_properties.filter(|max| count_i > *max) {
            out.push(FieldError::too_many(
                &self.path(name),
                count,
                usize::try_from(max).unwrap_or_default(),
            ));
            return;
        }
        let child = |key: &str| {
            if name.is_empty() {
                key.to_string()
            } else {
                format!("{name}.{key}")
            }
        };
        match &s.additional {
            Some(Additional::Bool(false)) => {
                for key in map.keys().filter(|k| !s.properties.contains_key(*k)) {
                    out.push(FieldError::invalid(
                        &self.path(name),
                        key.as_str(),
                        format!("{name}.{key} in body is a forbidden property"),
                    ));
                }
            }
            Some(Additional::Schema(a)) => {
                for (key, value) in map.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                    out.extend(self.validate(a, value, &child(key), false));
                }
            }
            _ => {}
        }
        for (key, prop) in &s.properties {
            if skip_meta && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                // The schema may still restrict the object's name and generateName.
                if key == "metadata"
                    && let Some(meta) = map.get(key)
                {
                    for field in ["name", "generateName"] {
                        if let (Some(p), Some(v)) = (prop.properties.get(field), meta.get(field)) {
                            out.extend(self.validate(p, v, &format!("metadata.{field}"), false));
                        }
                    }
                }
                continue;
            }
            if let Some(value) = map.get(key) {
                out.extend(self.validate(prop, value, &child(key), false));
            }
        }
        for key in s.required.iter().filter(|k| !map.contains_key(*k)) {
            out.push(FieldError::required(&self.path(&child(key)), ""));
        }
    }
}

/// The types a value may have: int-or-string fields take both.
fn effective_types(s: &Node) -> Vec<&str> {
    if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        Vec::new()
    } else {
        vec![s.type_.as_str()]
    }
}

/// The formats apiextensions keeps; others are dropped before validation, as upstream strips
/// them (so `int32` on an integer is documentation only).
fn supported_format(format: &str) -> &str {
    const SUPPORTED: &[&str] = &[
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
    ];
    if SUPPORTED.contains(&format.replace('-', "").as_str()) {
        format
    } else {
        ""
    }
}

/// The JSON type of a value and the format upstream infers for it.
fn json_type(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_f64() => ("number", "double"),
        Value::Number(_) => ("integer", "int64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("", ""),
    }
}

/// `<name> in body must be of type <want>: "<got>"`.
fn type_message(name: &str, want: &str, got: Option<&str>) -> String {
    match got {
        Some(got) => format!("{name} in body must be of type {want}: {}", go_quote(got)),
        None => format!("{name} in body must be of type {want}"),
    }
}

fn is_multiple(int: Option<i64>, value: f64, factor: f64) -> bool {
    if factor == 0.0 {
        return true;
    }
    if let Some(i) = int
        && factor.fract() == 0.0
        && factor.abs() < 9.2e18
    {
        return i % (factor as i64) == 0;
    }
    let mult = value / factor;
    mult.is_finite() && mult.fract() == 0.0
}

/// JSON equality with numbers compared by value (enum values are floats upstream).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A float as Go's `%v` prints it.
pub(crate) fn go_float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
        return format!("{}", f as i128);
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let s = format!("{f:e}");
        // Rust prints `1e21`, Go `1e+21`.
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e:0>2}"),
            Some((m, e)) => format!("{m}e-{:0>2}", &e[1..]),
            None => s,
        };
    }
    format!("{f}")
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;
    use api_types::validation::ErrorList;
    use serde_json::json;

    fn check(schema: Value, data: Value) -> String {
        let mut errs = ErrorList::new();
        let node = parse(&schema, &FieldPath::root(), &mut errs);
        assert!(errs.is_empty(), "{errs}");
        let root = FieldPath::root();
        let v = Validator { base: &root };
        ErrorList::from(v.validate(&node, &data, "", true)).to_string()
    }

    fn spec(props: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
    }

    #[test]
    fn type_errors_are_worded_as_upstream() {
        assert_eq!(
            check(
                spec(json!({"replicas": {"type": "integer"}})),
                json!({"spec": {"replicas": "3"}})
            ),
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        );
        assert_eq!(
            check(
                spec(json!({"on": {"type": "boolean"}})),
                json!({"spec": {"on": null}})
            ),
            "spec.on: Invalid value: \"null\": spec.on in body must be of type boolean: \"null\""
        );
        // An integral float is an integer; a fraction is not.
        assert_eq!(
            check(
                spec(json!({"n": {"type": "integer"}})),
                json!({"spec": {"n": 3.0}})
            ),
            ""
        );
        assert!(
            check(
                spec(json!({"n": {"type": "integer"}})),
                json!({"spec": {"n": 3.5}})
            )
            .contains("must be of type integer: \"number\"")
        );
        // Integers are numbers.
        assert_eq!(
            check(
                spec(json!({"n": {"type": "number"}})),
                json!({"spec": {"n": 3}})
            ),
            ""
        );
        assert_eq!(
            check(
                spec(json!({"n": {"type": "string", "nullable": true}})),
                json!({"spec": {"n": null}})
            ),
            ""
        );
    }

    #[test]
    fn type_errors_carry_upstreams_reason() {
        let mut errs = ErrorList::new();
        let node = parse(
            &spec(json!({"n": {"type": "integer"}})),
            &FieldPath::root(),
            &mut errs,
        );
        let root = FieldPath::root();
        let found =
            Validator { base: &root }.validate(&node, &json!({"spec": {"n": "x"}}), "", true);
        assert_eq!(found[0].error_type.reason(), "FieldValueTypeInvalid");
    }

    #[test]
    fn enum_bounds_and_required() {
        assert_eq!(
            check(
                spec(json!({"size": {"type": "string", "enum": ["S", "M"]}})),
                json!({"spec": {"size": "XL"}})
            ),
            "spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\""
        );
        assert_eq!(
            check(
                spec(json!({"replicas": {"type": "integer", "maximum": 10}})),
                json!({"spec": {"replicas": 11}})
            ),
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        );
        assert_eq!(
            check(
                spec(json!({"r": {"type": "number", "minimum": 1.5, "exclusiveMinimum": true}})),
                json!({"spec": {"r": 1.5}})
            ),
            "spec.r: Invalid value: 1.5: spec.r in body should be greater than 1.5"
        );
        assert_eq!(
            check(
                json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}}}}}),
                json!({"spec": {}})
            ),
            "spec.name: Required value"
        );
        assert_eq!(
            check(
                spec(json!({"n": {"type": "integer", "multipleOf": 5}})),
                json!({"spec": {"n": 7}})
            ),
            "spec.n: Invalid value: 7: spec.n in body should be a multiple of 5"
        );
    }

    #[test]
    fn strings_arrays_and_objects() {
        assert_eq!(
            check(
                spec(json!({"s": {"type": "string", "maxLength": 3}})),
                json!({"spec": {"s": "abcd"}})
            ),
            "spec.s: Too long: may not be more than 3 bytes"
        );
        assert_eq!(
            check(
                spec(json!({"s": {"type": "string", "minLength": 2}})),
                json!({"spec": {"s": "a"}})
            ),
            "spec.s: Invalid value: \"a\": spec.s in body should be at least 2 chars long"
        );
        assert_eq!(
            check(
                spec(json!({"s": {"type": "string", "pattern": "^[a-z]+$"}})),
                json!({"spec": {"s": "A1"}})
            ),
            "spec.s: Invalid value: \"A1\": spec.s in body should match '^[a-z]+$'"
        );
        assert_eq!(
            check(
                spec(json!({"l": {"type": "array", "maxItems": 1, "items": {"type": "integer"}}})),
                json!({"spec": {"l": [1, "x"]}})
            ),
            "[spec.l[1]: Invalid value: \"string\": spec.l[1] in body must be of type integer: \"string\", spec.l: Too many: 2: must have at most 1 item]"
        );
        assert_eq!(
            check(
                spec(json!({"l": {"type": "array", "minItems": 2, "items": {"type": "integer"}}})),
                json!({"spec": {"l": [1]}})
            ),
            "spec.l: Invalid value: 1: spec.l in body should have at least 2 items"
        );
        assert_eq!(
            check(
                spec(json!({"m": {"type": "object", "maxProperties": 1,
                    "additionalProperties": {"type": "string"}}})),
                json!({"spec": {"m": {"a": "1", "b": "2"}}})
            ),
            "spec.m: Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            check(
                spec(json!({"m": {"type": "object", "additionalProperties": {"type": "string"}}})),
                json!({"spec": {"m": {"a": 1}}})
            ),
            "spec.m.a: Invalid value: \"integer\": spec.m.a in body must be of type string: \"integer\""
        );
    }

    #[test]
    fn int_or_string_and_formats() {
        let port = json!({"p": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}});
        assert_eq!(check(spec(port.clone()), json!({"spec": {"p": 80}})), "");
        assert_eq!(
            check(spec(port.clone()), json!({"spec": {"p": "http"}})),
            ""
        );
        assert!(check(spec(port), json!({"spec": {"p": true}}))
            .contains("spec.p: Invalid value: \"boolean\": spec.p in body must be of type integer,string: \"boolean\""));
        assert_eq!(
            check(
                spec(json!({"id": {"type": "string", "format": "uuid"}})),
                json!({"spec": {"id": "nope"}})
            ),
            "spec.id: Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\""
        );
        // Numeric formats are not enforced (upstream strips them).
        assert_eq!(
            check(
                spec(json!({"n": {"type": "integer", "format": "int32"}})),
                json!({"spec": {"n": 99999999999i64}})
            ),
            ""
        );
    }

    #[test]
    fn junctors() {
        let s = spec(json!({"v": {"type": "integer", "not": {"enum": [3]}}}));
        assert_eq!(
            check(s, json!({"spec": {"v": 3}})),
            "<nil>: Invalid value: \"\": \"spec.v\" must not validate the schema (not)"
        );
        let s = spec(json!({"v": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 1}]}}));
        assert_eq!(check(s.clone(), json!({"spec": {"v": 11}})), "");
        assert!(
            check(s, json!({"spec": {"v": 5}}))
                .contains("must validate at least one schema (anyOf)")
        );
        let s = spec(json!({"v": {"type": "integer", "oneOf": [{"minimum": 1}, {"minimum": 2}]}}));
        assert!(check(s, json!({"spec": {"v": 5}})).contains("Found 2 valid alternatives"));
    }

    #[test]
    fn root_metadata_name_restrictions_apply() {
        let s = json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 3}}}}});
        assert_eq!(check(s.clone(), json!({"metadata": {"name": "abc"}})), "");
        assert_eq!(
            check(s, json!({"metadata": {"name": "abcd"}})),
            "metadata.name: Too long: may not be more than 3 bytes"
        );
    }

    #[test]
    fn root_meta_is_left_alone() {
        let s = json!({"type": "object", "properties": {"metadata": {"type": "object"},
            "kind": {"type": "string"}}});
        assert_eq!(check(s, json!({"kind": 5, "metadata": "x"})), "");
    }

    #[test]
    fn go_float_formatting() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.00001), "1e-05");
    }
}
