//! The values a template sees: what Go's `json.Unmarshal` (apimachinery's, integers as
//! int64) makes of the object, plus the ones functions and literals make.

use serde_json::{Map, Value};
use std::borrow::Cow;

#[derive(Debug, Clone)]
pub enum Val<'a> {
    /// Go's invalid `reflect.Value`: a missing map key; printed as `<no value>`.
    Invalid,
    /// A nil `interface{}` (JSON null, the `nil` literal).
    Nil,
    Bool(bool),
    /// Go's `int`: literals, `len`, range indexes.
    Int(i64),
    /// JSON integers.
    Int64(i64),
    Float(f64),
    Str(Cow<'a, str>),
    List(&'a [Value]),
    Map(&'a Map<String, Value>),
}

impl<'a> Val<'a> {
    pub fn from_json(v: &'a Value) -> Val<'a> {
        match v {
            Value::Null => Val::Nil,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Val::Int64(i),
                None => Val::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Val::Str(Cow::Borrowed(s)),
            Value::Array(a) => Val::List(a),
            Value::Object(m) => Val::Map(m),
        }
    }

    /// Go's type name, as fmt and the template errors write it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Invalid | Val::Nil => "<nil>",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Int64(_) => "int64",
            Val::Float(_) => "float64",
            Val::Str(_) => "string",
            Val::List(_) => "[]interface {}",
            Val::Map(_) => "map[string]interface {}",
        }
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Val::Invalid | Val::Nil)
    }

    /// Go's `isTrue`: the zero value of its type is false.
    pub fn truth(&self) -> bool {
        match self {
            Val::Invalid | Val::Nil => false,
            Val::Bool(b) => *b,
            Val::Int(i) | Val::Int64(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::List(l) => !l.is_empty(),
            Val::Map(m) => !m.is_empty(),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Val::Int(i) | Val::Int64(i) => Some(*i),
            _ => None,
        }
    }
}

/// The keys of a JSON object in Go's order (sorted), whatever order serde_json keeps.
pub fn sorted_keys(m: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    keys
}

/// Go's `json.Marshal` of the object: compact, keys sorted, `<`, `>`, `&`, U+2028 and
/// U+2029 escaped.
pub fn go_json_compact(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(e, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, k) in sorted_keys(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_json(&m[k], out);
            }
            out.push('}');
        }
        Value::String(s) => write_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, out: &mut String) {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    for c in quoted.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}
