//! `--for` of `kubectl wait`: what it asks for and whether an object satisfies it.

use client_go_rs::jsonpath::{JsonPath, text_of};
use serde_json::Value;

/// A parsed `--for`.
#[derive(Debug, Clone)]
pub enum For {
    Delete,
    Create,
    /// `condition=NAME[=STATUS]` (compared without case; STATUS defaults to `true`).
    Condition {
        name: String,
        status: String,
    },
    /// `jsonpath={...}[=VALUE]`; without a value any non-empty result satisfies it.
    JsonPath {
        path: JsonPath,
        value: Option<String>,
    },
}

/// Parses `--for` as upstream does.
pub fn parse(text: &str) -> anyhow::Result<For> {
    let lower = text.to_lowercase();
    if lower == "delete" {
        return Ok(For::Delete);
    }
    if lower == "create" {
        return Ok(For::Create);
    }
    if lower.starts_with("condition=") {
        let rest = &text["condition=".len()..];
        let (name, status) = match rest.split_once('=') {
            Some((n, s)) => (n, s),
            None => (rest, "true"),
        };
        return Ok(For::Condition {
            name: name.to_owned(),
            status: status.to_owned(),
        });
    }
    if lower.starts_with("jsonpath=") {
        let rest = &text["jsonpath=".len()..];
        let (expr, value) = split_jsonpath(rest)?;
        let inner = expr
            .strip_prefix('{')
            .and_then(|e| e.strip_suffix('}'))
            .unwrap_or(expr);
        let path = JsonPath::parse(inner)
            .map_err(|err| anyhow::anyhow!("unrecognized condition: {text:?}: {err}"))?;
        return Ok(For::JsonPath {
            path,
            value: value.map(str::to_owned),
        });
    }
    anyhow::bail!("unrecognized condition: {text:?}")
}

/// `{.a.b}=v` or `.a.b=v` into the expression and the value (`=` inside braces belongs to the
/// expression).
fn split_jsonpath(text: &str) -> anyhow::Result<(&str, Option<&str>)> {
    if text.is_empty() {
        anyhow::bail!("jsonpath expression cannot be empty");
    }
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            '=' if depth == 0 => return Ok((&text[..i], Some(&text[i + 1..]))),
            _ => {}
        }
    }
    Ok((text, None))
}

fn int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

/// Whether `object` meets a condition or JSONPath `--for` (delete and create are decided by
/// the object's presence).
pub fn is_met(cond: &For, object: &Value) -> anyhow::Result<bool> {
    match cond {
        For::Delete | For::Create => Ok(false),
        For::Condition { name, status } => {
            let conditions = object
                .pointer("/status/conditions")
                .and_then(Value::as_array);
            for c in conditions.into_iter().flatten() {
                let ctype = c.get("type").and_then(Value::as_str).unwrap_or("");
                if !ctype.eq_ignore_ascii_case(name) {
                    continue;
                }
                let Some(have) = c.get("status").and_then(Value::as_str) else {
                    continue;
                };
                if let Some(generation) = int(object, "/metadata/generation") {
                    let observed = c
                        .get("observedGeneration")
                        .and_then(Value::as_i64)
                        .or_else(|| int(object, "/status/observedGeneration"));
                    if observed.is_some_and(|o| o < generation) {
                        return Ok(false);
                    }
                }
                return Ok(have.eq_ignore_ascii_case(status));
            }
            Ok(false)
        }
        For::JsonPath { path, value } => {
            let found = path.find(object).map_err(|err| anyhow::anyhow!("{err}"))?;
            let Some(first) = found.first() else {
                return Ok(false);
            };
            if found.len() > 1 {
                anyhow::bail!("given jsonpath expression matches more than one value");
            }
            let Some(value) = value else {
                return Ok(true);
            };
            if first.is_object() || first.is_array() {
                anyhow::bail!("jsonpath leads to a nested object or list which is not supported");
            }
            Ok(text_of(first).trim() == value.trim())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parsing() {
        assert!(matches!(parse("delete").unwrap(), For::Delete));
        assert!(matches!(parse("Create").unwrap(), For::Create));
        match parse("condition=Available").unwrap() {
            For::Condition { name, status } => {
                assert_eq!((name.as_str(), status.as_str()), ("Available", "true"))
            }
            other => panic!("{other:?}"),
        }
        match parse("jsonpath={.status.phase}=Running").unwrap() {
            For::JsonPath { value, .. } => assert_eq!(value.as_deref(), Some("Running")),
            other => panic!("{other:?}"),
        }
        match parse("jsonpath={.items[?(@.a==\"b\")].c}").unwrap() {
            For::JsonPath { value, .. } => assert_eq!(value, None),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse("bogus").unwrap_err().to_string(),
            "unrecognized condition: \"bogus\""
        );
        assert_eq!(
            parse("").unwrap_err().to_string(),
            "unrecognized condition: \"\""
        );
    }

    #[test]
    fn conditions() {
        let d = json!({"metadata": {"generation": 2},
                       "status": {"observedGeneration": 2, "phase": "Running", "replicas": 3,
                                  "conditions": [{"type": "Available", "status": "True"}]}});
        for (cond, want) in [
            ("condition=Available", true),
            ("condition=available=true", true),
            ("condition=Available=False", false),
            ("condition=Ready", false),
            ("jsonpath={.status.phase}=Running", true),
            ("jsonpath=.status.replicas=3", true),
            ("jsonpath={.status.phase}=Pending", false),
            ("jsonpath={.status.phase}", true),
            ("jsonpath={.status.missing}", false),
        ] {
            assert_eq!(is_met(&parse(cond).unwrap(), &d).unwrap(), want, "{cond}");
        }
        let stale = json!({"metadata": {"generation": 3}, "status": {"observedGeneration": 2,
                           "conditions": [{"type": "Available", "status": "True"}]}});
        assert!(!is_met(&parse("condition=Available").unwrap(), &stale).unwrap());
        assert!(is_met(&parse("jsonpath={.status}=x").unwrap(), &d).is_err());
    }
}
