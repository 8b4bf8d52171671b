//! A rule's `fieldPath` (`.spec.replicas`, `.labels['app.kubernetes.io/name']`): a relative
//! JSON path of property names and map keys, checked against the schema as upstream does.

use super::node::Node;
use api_types::validation::FieldPath;

/// One step of a parsed fieldPath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// A declared property: `.name`.
    Child(String),
    /// A key of a map (additionalProperties): `[key]` in the error path.
    Key(String),
}

/// Appends `steps` to `path`.
pub(super) fn relocate(path: &FieldPath, steps: &[Step]) -> FieldPath {
    steps.iter().fold(path.clone(), |p, s| match s {
        Step::Child(n) => p.child(n.as_str()),
        Step::Key(k) => p.key(k.as_str()),
    })
}

/// Parses `path` from `node`; `Err` says why it refers to no field.
pub(super) fn parse(path: &str, node: &Node) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut current = node;
    let mut rest = path;
    while !rest.is_empty() {
        let name;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            name = after[..end].to_string();
            rest = &after[end..];
            if name.is_empty() {
                return Err("unexpected end of JSON path".into());
            }
        } else if let Some(after) = rest.strip_prefix("['") {
            let (quoted, tail) = split_quoted(after)?;
            name = quoted;
            rest = tail
                .strip_prefix(']')
                .ok_or_else(|| "expected ]".to_string())?;
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
        if !current.properties.is_empty() {
            current = current
                .properties
                .get(&name)
                .ok_or_else(|| "does not refer to a valid field".to_string())?;
            steps.push(Step::Child(name));
        } else if let Some(values) = current.additional.as_deref() {
            current = values;
            steps.push(Step::Key(name));
        } else {
            return Err("does not refer to a valid field".into());
        }
    }
    Ok(steps)
}

/// The unescaped text of a single-quoted string up to its closing quote, and what follows.
fn split_quoted(s: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' => return Ok((out, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, e @ ('\'' | '\\'))) => out.push(e),
                Some((_, other)) => return Err(format!("invalid escape char \\{other}")),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unexpected end of JSON path".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node() -> Node {
        Node::shape(&json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "a.b": {"type": "object", "properties": {"c": {"type": "string"}}}}}))
    }

    #[test]
    fn parses_children_and_keys() {
        let n = node();
        assert_eq!(
            parse(".replicas", &n),
            Ok(vec![Step::Child("replicas".into())])
        );
        assert_eq!(
            parse(".labels['app.kubernetes.io/name']", &n),
            Ok(vec![
                Step::Child("labels".into()),
                Step::Key("app.kubernetes.io/name".into())
            ])
        );
        assert_eq!(
            parse("['a.b'].c", &n),
            Ok(vec![Step::Child("a.b".into()), Step::Child("c".into())])
        );
        let p = relocate(&FieldPath::new("spec"), &parse(".labels.x", &n).unwrap());
        assert_eq!(p.to_string(), "spec.labels[x]");
    }

    #[test]
    fn rejects_what_is_not_a_field() {
        let n = node();
        for bad in [".nope", "replicas", ".replicas.x", ".labels[0]", ".", "['x"] {
            assert!(parse(bad, &n).is_err(), "{bad}");
        }
    }
}
