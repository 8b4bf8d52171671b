//! Kubernetes' CEL format library: `format.dns1123Label()` and the other named formats,
//! `format.named(name)` (an optional), and `<format>.validate(s)`, which gives
//! `optional.none()` for a valid string and the list of upstream's messages otherwise.
//!
//! A format is carried as a map holding its name under a key no rule can write.

use api_types::validation::names;
use base64::Engine;
use cel::common::types::{MAP_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map, OptionalValue};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::collections::HashMap;
use std::sync::Arc;

const KEY: &str = "@format";

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;
type Function = for<'b, 'v> fn(Args<'b, 'v>) -> Ret<'b, 'v>;

/// The named formats, with the constructor each has as `format.<name>()`.
const FORMATS: &[(&str, Function)] = &[
    ("dns1123Label", |_| format("dns1123Label")),
    ("dns1123Subdomain", |_| format("dns1123Subdomain")),
    ("dns1035Label", |_| format("dns1035Label")),
    ("qualifiedName", |_| format("qualifiedName")),
    ("dns1123LabelPrefix", |_| format("dns1123LabelPrefix")),
    ("dns1123SubdomainPrefix", |_| {
        format("dns1123SubdomainPrefix")
    }),
    ("dns1035LabelPrefix", |_| format("dns1035LabelPrefix")),
    ("labelValue", |_| format("labelValue")),
    ("uri", |_| format("uri")),
    ("uuid", |_| format("uuid")),
    ("byte", |_| format("byte")),
    ("date", |_| format("date")),
    ("datetime", |_| format("datetime")),
];

/// The names `check.rs` must know: `format.<name>` for each format, `format.named`.
pub(super) const FUNCTION_NAMES: &[&str] = &[
    "format.dns1123Label",
    "format.dns1123Subdomain",
    "format.dns1035Label",
    "format.qualifiedName",
    "format.dns1123LabelPrefix",
    "format.dns1123SubdomainPrefix",
    "format.dns1035LabelPrefix",
    "format.labelValue",
    "format.uri",
    "format.uuid",
    "format.byte",
    "format.date",
    "format.datetime",
    "format.named",
    "validate",
];

/// Declares the library's functions on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    for (name, constructor) in FORMATS {
        let full = format!("format.{name}");
        env.add_overload(&full, &full, vec![], *constructor)?;
    }
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format-validate",
        MAP_TYPE,
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

fn ret<'b, 'v>(v: Value) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(v)?))
}

fn format_value(name: &str) -> Value {
    let mut m = HashMap::new();
    m.insert(
        Key::String(Arc::new(KEY.to_string())),
        Value::String(Arc::new(name.to_string())),
    );
    Value::Map(Map { map: Arc::new(m) })
}

fn format<'b, 'v>(name: &str) -> Ret<'b, 'v> {
    ret(format_value(name))
}

fn named<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let name = match args.first().map(|a| Value::try_from(a.as_ref())) {
        Some(Ok(Value::String(s))) => s,
        _ => {
            return Err(ExecutionError::function_error(
                "format.named",
                "no such overload",
            ));
        }
    };
    let optional = if FORMATS.iter().any(|(n, _)| *n == name.as_str()) {
        OptionalValue::of(format_value(&name))
    } else {
        OptionalValue::none()
    };
    ret(Value::Opaque(Arc::new(optional)))
}

fn validate<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let vals: Vec<Value> = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<_, _>>()?;
    let name = match vals.first() {
        Some(Value::Map(m)) => match m.map.get(&Key::String(Arc::new(KEY.to_string()))) {
            Some(Value::String(n)) => n.clone(),
            _ => {
                return Err(ExecutionError::function_error(
                    "validate",
                    "expected a format",
                ));
            }
        },
        _ => {
            return Err(ExecutionError::function_error(
                "validate",
                "expected a format",
            ));
        }
    };
    let Some(Value::String(s)) = vals.get(1) else {
        return Err(ExecutionError::function_error(
            "validate",
            "expected a string",
        ));
    };
    let errors = problems(&name, s);
    let optional = if errors.is_empty() {
        OptionalValue::none()
    } else {
        let list = errors
            .into_iter()
            .map(|e| Value::String(Arc::new(e)))
            .collect();
        OptionalValue::of(Value::List(Arc::new(list)))
    };
    ret(Value::Opaque(Arc::new(optional)))
}

/// Upstream's `maskTrailingDash`: a prefix may end with a dash (generateName).
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        format!("{}a", &s[..s.len() - 2])
    } else {
        s.to_string()
    }
}

/// What is wrong with `s` for the format `name`; empty when nothing is.
fn problems(name: &str, s: &str) -> Vec<String> {
    let one = |ok: bool, msg: &str| {
        if ok {
            Vec::new()
        } else {
            vec![msg.to_string()]
        }
    };
    match name {
        "dns1123Label" => names::is_dns1123_label(s),
        "dns1123Subdomain" => names::is_dns1123_subdomain(s),
        "dns1035Label" => names::is_dns1035_label(s),
        "qualifiedName" => names::is_qualified_name(s),
        "dns1123LabelPrefix" => names::is_dns1123_label(&mask_trailing_dash(s)),
        "dns1123SubdomainPrefix" => names::is_dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035LabelPrefix" => names::is_dns1035_label(&mask_trailing_dash(s)),
        "labelValue" => names::is_valid_label_value(s),
        "uri" => match super::library::parse_url(s) {
            Some(_) => Vec::new(),
            None => vec![format!("parse {s:?}: invalid URI for request")],
        },
        "uuid" => one(is_uuid(s), "does not match the UUID format"),
        "byte" => one(
            base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
            "invalid base64",
        ),
        "date" => one(
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
            "invalid date",
        ),
        "datetime" => one(
            chrono::DateTime::parse_from_rfc3339(s).is_ok(),
            "invalid datetime",
        ),
        _ => Vec::new(),
    }
}

/// strfmt's UUID: 32 hex digits in groups of 8-4-4-4-12, the dashes optional.
fn is_uuid(s: &str) -> bool {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    let groups: Vec<&str> = s.split('-').collect();
    let grouped = groups.len() == 1
        || (groups.len() == 5 && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]));
    hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) && grouped
}

#[cfg(test)]
mod tests {
    use super::super::library::env;
    use cel::{Context, Value};

    fn eval(src: &str) -> Result<Value, cel::ExecutionError> {
        let env = env();
        let program = env.compile(src).expect(src);
        program.execute(&Context::with_env(env))
    }

    #[test]
    fn named_formats_validate() {
        let truths = [
            "!format.dns1123Label().validate('my-name').hasValue()",
            "format.dns1123Label().validate('My_Name').hasValue()",
            "format.dns1123Label().validate('a.b').value() == ['must not contain dots']",
            "!format.dns1123LabelPrefix().validate('my-prefix-').hasValue()",
            "!format.qualifiedName().validate('example.com/name').hasValue()",
            "!format.labelValue().validate('').hasValue()",
            "!format.uri().validate('https://example.com/x').hasValue()",
            "format.uri().validate('x').value() == ['parse \"x\": invalid URI for request']",
            "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
            "format.uuid().validate('nope').hasValue()",
            "!format.byte().validate('aGVsbG8=').hasValue()",
            "!format.date().validate('2021-01-01').hasValue() && format.date().validate('2021-13-01').hasValue()",
            "!format.datetime().validate('2021-01-01T00:00:00Z').hasValue()",
            "format.named('dns1035Label').hasValue() && !format.named('nope').hasValue()",
            "!format.named('uuid').value().validate('123e4567e89b12d3a456426614174000').hasValue()",
        ];
        for src in truths {
            assert_eq!(eval(src), Ok(Value::Bool(true)), "{src}");
        }
    }
}
