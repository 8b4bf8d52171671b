//! Escaping of field selector values: `\`, `,` and `=` are written `\\`, `\,`, `\=`.

use super::error::FieldSelectorError;

/// Escapes a value so it can be embedded in a selector string.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`]; a bare `,`/`=`, an unknown escape or a trailing `\` is an error.
pub fn unescape_value(s: &str) -> Result<String, FieldSelectorError> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(FieldSelectorError::InvalidEscapeSequence(format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(FieldSelectorError::UnescapedRune(c)),
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(FieldSelectorError::InvalidEscapeSequence("\\".to_string()));
    }
    Ok(out)
}

/// Splits at commas that are not escaped.
pub(crate) fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trip() {
        let cases = [
            ("", ""),
            ("a", "a"),
            ("a,b", "a\\,b"),
            ("a=b", "a\\=b"),
            ("a\\b", "a\\\\b"),
            ("=,\\", "\\=\\,\\\\"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(escape_value(raw), escaped);
            assert_eq!(unescape_value(escaped).ok().as_deref(), Some(raw));
        }
    }

    #[test]
    fn unescape_errors() {
        let cases = [
            (
                "a\\x",
                "invalid field selector: invalid escape sequence: \\x",
            ),
            ("a\\", "invalid field selector: invalid escape sequence: \\"),
            (
                "a,b",
                "invalid field selector: unescaped character in value: 44",
            ),
            (
                "a=b",
                "invalid field selector: unescaped character in value: 61",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(unescape_value(input).expect_err(input).to_string(), want);
        }
    }

    #[test]
    fn splits_on_unescaped_commas() {
        assert_eq!(split_terms(""), Vec::<&str>::new());
        assert_eq!(split_terms("a=b"), vec!["a=b"]);
        assert_eq!(split_terms("a=b,c=d"), vec!["a=b", "c=d"]);
        assert_eq!(split_terms("a=b\\,c,d=e"), vec!["a=b\\,c", "d=e"]);
        assert_eq!(split_terms("a=b\\\\,d=e"), vec!["a=b\\\\", "d=e"]);
        assert_eq!(split_terms("a=b,"), vec!["a=b", ""]);
    }
}
