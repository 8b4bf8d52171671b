//! Property names as CEL identifiers: upstream's escaping of names that are not identifiers
//! (`x-y` is `x__dash__y` in a rule) or that are CEL keywords (`namespace` is `__namespace__`).

/// Words the CEL grammar reserves; a property named so is reached as `__<word>__`.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The identifier a rule uses for the property `name`, or `None` when the name cannot be
/// written in CEL at all (it starts with a digit or holds other characters than letters,
/// digits, `_`, `.`, `-` and `/`): such a property is invisible to rules, as upstream.
pub(super) fn escape(name: &str) -> Option<String> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_as_upstream() {
        let cases = [
            ("replicas", Some("replicas")),
            ("x-y", Some("x__dash__y")),
            ("a.b/c", Some("a__dot__b__slash__c")),
            ("a__b", Some("a__underscores__b")),
            ("a___b", Some("a__underscores___b")),
            ("namespace", Some("__namespace__")),
            ("_x", Some("_x")),
            ("1abc", None),
            ("a b", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(escape(name).as_deref(), want, "{name}");
        }
    }
}
