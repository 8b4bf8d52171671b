//! `-o json` as Go's `json.MarshalIndent(obj, "", "    ")` writes it: keys sorted (serde_json's
//! map is ordered), four-space indent, and `<`, `>`, `&`, U+2028, U+2029 escaped as Go does.

use serde_json::Value;

/// The document followed by a newline.
pub fn to_go_json(value: &Value) -> String {
    to_go_json_of(value)
}

/// Any serializable document (keys in the order it serializes them) followed by a newline.
pub fn to_go_json_of<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    // Serializing into a Vec cannot fail: every map key is a string.
    let _ = value.serialize(&mut ser);
    let text = String::from_utf8_lossy(&buf);
    let mut out = String::with_capacity(text.len() + 16);
    // These characters only occur inside strings in JSON text, so replacing them is safe.
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_go() {
        let cases = [
            (
                json!({"b": 1, "a": [], "c": {}}),
                "{\n    \"a\": [],\n    \"b\": 1,\n    \"c\": {}\n}\n",
            ),
            (
                json!({"x": "<a&b>"}),
                "{\n    \"x\": \"\\u003ca\\u0026b\\u003e\"\n}\n",
            ),
            (json!([1, "two"]), "[\n    1,\n    \"two\"\n]\n"),
        ];
        for (value, want) in cases {
            assert_eq!(to_go_json(&value), want);
        }
    }
}
