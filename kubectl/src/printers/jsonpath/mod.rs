//! `-o jsonpath=TEMPLATE`: literal text with `{...}` actions (`{.metadata.name}`,
//! `{range .items[*]}...{end}`, `{"\n"}`), as upstream's JSONPath printer evaluates them with
//! missing keys allowed.

pub use client_go_rs::jsonpath::{JsonPath, text_of};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Path(JsonPath),
    Range(JsonPath, Vec<Node>),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    nodes: Vec<Node>,
    /// `jsonpath-as-json`: each action's results as one indented JSON array.
    as_json: bool,
}

impl Template {
    /// Parses `text`; errors read as upstream's (`unclosed action`, `not in range`).
    pub fn parse(text: &str) -> Result<Template, String> {
        let tokens = tokenize(text)?;
        let mut pos = 0;
        let nodes = parse_nodes(&tokens, &mut pos, false)?;
        Ok(Template {
            nodes,
            as_json: false,
        })
    }

    /// The template printing each action's results as a JSON array (`jsonpath-as-json`).
    pub fn with_json_output(mut self) -> Template {
        self.as_json = true;
        self
    }

    /// Renders the template against `root`.
    pub fn render(&self, root: &Value) -> Result<String, String> {
        let mut out = String::new();
        render_nodes(&self.nodes, root, &mut out, self.as_json)?;
        Ok(out)
    }
}

#[derive(Debug)]
enum Token {
    Text(String),
    Action(String),
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut literal = String::new();
    while i < chars.len() {
        if chars[i] != '{' {
            literal.push(chars[i]);
            i += 1;
            continue;
        }
        if !literal.is_empty() {
            tokens.push(Token::Text(std::mem::take(&mut literal)));
        }
        // Find the matching `}` outside quotes.
        let mut j = i + 1;
        let mut quote: Option<char> = None;
        let mut depth = 0;
        loop {
            let Some(&c) = chars.get(j) else {
                return Err("unclosed action".to_owned());
            };
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), '\\') => j += 1,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '{') => depth += 1,
                (None, '}') if depth == 0 => break,
                (None, '}') => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        tokens.push(Token::Action(chars[i + 1..j].iter().collect()));
        i = j + 1;
    }
    if !literal.is_empty() {
        tokens.push(Token::Text(literal));
    }
    Ok(tokens)
}

fn parse_nodes(tokens: &[Token], pos: &mut usize, in_range: bool) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    while let Some(token) = tokens.get(*pos) {
        *pos += 1;
        match token {
            Token::Text(t) => nodes.push(Node::Text(t.clone())),
            Token::Action(action) => {
                let action = action.trim();
                if action == "end" {
                    if in_range {
                        return Ok(nodes);
                    }
                    return Err("not in range, nothing to end".to_owned());
                }
                if let Some(rest) = action.strip_prefix("range ") {
                    let path = JsonPath::parse(rest.trim())?;
                    let body = parse_nodes(tokens, pos, true)?;
                    nodes.push(Node::Range(path, body));
                } else if let Some(text) = quoted(action) {
                    nodes.push(Node::Text(text));
                } else {
                    nodes.push(Node::Path(JsonPath::parse(action)?));
                }
            }
        }
    }
    if in_range {
        return Err("unclosed range".to_owned());
    }
    Ok(nodes)
}

/// `"..."` or `'...'` with Go's escapes (`\n`, `\t`, `\"`, `\\`).
fn quoted(action: &str) -> Option<String> {
    let first = action.chars().next()?;
    if !(first == '"' || first == '\'') || action.len() < 2 || !action.ends_with(first) {
        return None;
    }
    let inner = &action[1..action.len() - 1];
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    Some(out)
}

fn render_nodes(
    nodes: &[Node],
    current: &Value,
    out: &mut String,
    as_json: bool,
) -> Result<(), String> {
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Path(path) => {
                let found = path.find(current)?;
                if as_json {
                    let array = Value::Array(found.into_iter().cloned().collect());
                    out.push_str(&crate::printers::json::to_go_json(&array));
                    continue;
                }
                let texts: Vec<String> = found.into_iter().map(text_of).collect();
                out.push_str(&texts.join(" "));
            }
            Node::Range(path, body) => {
                for value in path.find(current)? {
                    match value {
                        Value::Array(items) => {
                            for item in items {
                                render_nodes(body, item, out, as_json)?;
                            }
                        }
                        other => render_nodes(body, other, out, as_json)?,
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates() {
        let list = json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"n": 1}},
            {"metadata": {"name": "b"}, "spec": {"n": 2}},
        ]});
        let cases = [
            ("{.kind}", "List"),
            ("{.items[*].metadata.name}", "a b"),
            ("{range .items[*]}{.metadata.name}{\"\\n\"}{end}", "a\nb\n"),
            ("{range .items[*]}[{.spec.n}]{end}", "[1][2]"),
            ("{.items[0].metadata.labels}", "{\"x\":\"1\"}"),
            (
                "name: {.items[1].metadata.name} missing:{.nope}",
                "name: b missing:",
            ),
            ("{@.kind}", "List"),
        ];
        for (template, want) in cases {
            let t = Template::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
            assert_eq!(t.render(&list).as_deref(), Ok(want), "{template}");
        }
        let as_json = Template::parse("{.items[*].metadata.name}")
            .unwrap()
            .with_json_output();
        assert_eq!(
            as_json.render(&list).unwrap(),
            "[\n    \"a\",\n    \"b\"\n]\n"
        );
        for bad in ["{.a", "{end}", "{range .items[*]}x"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }
}
