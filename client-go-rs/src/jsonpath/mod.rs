//! JSONPath as client-go's `util/jsonpath` evaluates it: one evaluator for kubectl's
//! `-o jsonpath`, `-o custom-columns` and `--sort-by`, and for the apiserver's CRD printer
//! columns, so that a path selects the same values on both sides.

mod path;

pub use path::JsonPath;
use serde_json::Value;

/// A result as upstream prints it: strings raw, maps and lists as compact JSON with Go's HTML
/// escapes, null as `<nil>`.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(_) | Value::Array(_) => {
            let text = value.to_string();
            text.replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026")
        }
        Value::Null => "<nil>".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_of_values() {
        let cases = [
            (json!("raw"), "raw"),
            (json!({"a": "<&>"}), r#"{"a":"\u003c\u0026\u003e"}"#),
            (json!([1, 2]), "[1,2]"),
            (json!(null), "<nil>"),
            (json!(1.5), "1.5"),
            (json!(true), "true"),
        ];
        for (value, want) in cases {
            assert_eq!(text_of(&value), want, "{value}");
        }
    }
}
