//! The path expressions of the JSONPath dialect (`k8s.io/client-go/util/jsonpath`), the
//! inside of one `{...}` action: `.spec.replicas`, `.metadata.labels.app`, `.spec.items[*].name`,
//! `.spec.items[-1:]`, `..name`, `['a.b']`, `.status.conditions[?(@.type=="Ready")].status`.
//!
//! Only the inside of one `{...}` action is parsed (upstream wraps a column's path in braces);
//! `range`/`end` and literal text are not part of a column path. Missing keys give no result
//! rather than an error, as upstream's `AllowMissingKeys(true)`; errors upstream reports while
//! evaluating (an index out of bounds, a filter comparing a number with a string) are `Err`.

use serde_json::Value;
use std::cmp::Ordering;

/// A parsed path: the results of its branches (`.a,.b`) one after the other.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    branches: Vec<Vec<Step>>,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// `.name`, `['name']`; an empty name is the value itself.
    Field(String),
    /// `.*`, `[*]`: the elements of an array, the values of an object.
    Wildcard,
    /// `..`: the value and every descendant that has children.
    Recursive,
    /// `[i]`, `[a:b:c]`.
    Slice(Slice),
    /// `[?(...)]`.
    Filter(Box<Filter>),
    /// `['a','b']`, `[0,2]`: the union of the alternatives.
    Union(Vec<Step>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Slice {
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
    /// `[i]`: the end is `i + 1` (upstream's "derived" end: `[-1]` is the last element).
    single: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Operand,
    /// `None` for an existence test (`[?(@.name)]`).
    comparison: Option<(Op, Operand)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Path(JsonPath),
    Literal(Value),
}

impl JsonPath {
    /// Parses the inside of one `{...}` action, e.g. `.spec.replicas`.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty JSONPath".to_owned());
        }
        let branches = split_top_level(text, ',')?
            .into_iter()
            .map(|part| parse_steps(part.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JsonPath { branches })
    }

    /// Every value the path selects in `root`, in upstream's order; `Err` where upstream's
    /// evaluation fails.
    pub fn find<'a>(&self, root: &'a Value) -> Result<Vec<&'a Value>, String> {
        let mut out = Vec::new();
        for branch in &self.branches {
            let mut current = vec![root];
            for step in branch {
                current = apply(step, current)?;
            }
            out.extend(current);
        }
        Ok(out)
    }
}

/// Splits `text` at `sep` outside brackets, parentheses and quotes.
fn split_top_level(text: &str, sep: char) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unmatched {c:?} in {text:?}"));
                }
            }
            (None, c) if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(format!("unterminated quoted string in {text:?}"));
    }
    if depth != 0 {
        return Err(format!("unclosed bracket in {text:?}"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// Characters that end a field name (upstream's terminators, plus the filter operators so a
/// filter's left side `@.a==1` ends its field).
fn ends_field(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '.' | '[' | ']' | ',' | '{' | '}' | '(' | ')' | '$' | '@' | '=' | '!' | '<' | '>'
        )
}

fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    // A leading `$` or `@` names the root or the current value, which is where evaluation
    // starts anyway.
    if matches!(chars.first(), Some('$' | '@')) {
        i = 1;
    }
    while i < chars.len() {
        match chars[i] {
            c if c.is_whitespace() => i += 1,
            '.' if chars.get(i + 1) == Some(&'.') => {
                // `..name`: the second dot starts the field (`..[0]` an empty one, which is
                // the value itself).
                steps.push(Step::Recursive);
                i += 1;
            }
            '.' => {
                i += 1;
                if chars.get(i) == Some(&'*') {
                    steps.push(Step::Wildcard);
                    i += 1;
                    continue;
                }
                let mut name = String::new();
                while let Some(&c) = chars.get(i) {
                    if c == '\\' && chars.get(i + 1) == Some(&'.') {
                        name.push('.');
                        i += 2;
                    } else if ends_field(c) {
                        break;
                    } else {
                        name.push(c);
                        i += 1;
                    }
                }
                steps.push(Step::Field(name));
            }
            '[' => {
                let end = closing_bracket(&chars, i)?;
                let inner: String = chars[i + 1..end].iter().collect();
                steps.push(parse_bracket(inner.trim())?);
                i = end + 1;
            }
            c => return Err(format!("unrecognized character {c:?} in {text:?}")),
        }
    }
    Ok(steps)
}

/// The index of the `]` closing the `[` at `open`, skipping quoted text and a filter's
/// parenthesised expression.
fn closing_bracket(chars: &[char], open: usize) -> Result<usize, String> {
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    let mut i = open + 1;
    while let Some(&c) = chars.get(i) {
        match (quote, c) {
            (Some(_), '\\') => i += 1,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ']') if depth == 0 => return Ok(i),
            (None, ']') => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    Err("unclosed array expect ]".to_owned())
}

fn parse_bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::Wildcard);
    }
    if let Some(filter) = inner.strip_prefix('?') {
        let expr = filter
            .trim()
            .strip_prefix('(')
            .and_then(|f| f.strip_suffix(')'))
            .ok_or_else(|| format!("unrecognized filter {inner:?}"))?;
        return parse_filter(expr).map(|f| Step::Filter(Box::new(f)));
    }
    let alternatives = split_top_level(inner, ',')?;
    let mut steps = alternatives
        .iter()
        .map(|alt| parse_selector(alt.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    if steps.len() == 1 {
        Ok(steps.remove(0))
    } else {
        Ok(Step::Union(steps))
    }
}

/// One selector inside brackets: a quoted name, an index or a slice.
fn parse_selector(text: &str) -> Result<Step, String> {
    if let Some(name) = unquote(text) {
        return Ok(Step::Field(name));
    }
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    if parts.len() > 3 || parts.iter().all(|p| p.is_empty()) && parts.len() == 1 {
        return Err(format!("invalid array index {text:?}"));
    }
    let number = |p: &str| -> Result<Option<i64>, String> {
        if p.is_empty() {
            Ok(None)
        } else {
            p.parse()
                .map(Some)
                .map_err(|_| format!("invalid array index {text:?}"))
        }
    };
    Ok(Step::Slice(Slice {
        start: number(parts[0])?,
        end: parts.get(1).map_or(Ok(None), |p| number(p))?,
        step: parts.get(2).map_or(Ok(None), |p| number(p))?,
        single: parts.len() == 1,
    }))
}

/// The text of a `'...'` or `"..."` literal (backslash escapes the next character).
fn unquote(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let body = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            c if c == quote => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// A filter expression as upstream splits it: a left side without operator characters, the
/// operator, and the rest; no operator is an existence test.
fn parse_filter(expr: &str) -> Result<Filter, String> {
    let Some(op_start) = expr.find(['!', '<', '>', '=']) else {
        return Ok(Filter {
            left: parse_operand(expr)?,
            comparison: None,
        });
    };
    let rest = &expr[op_start..];
    let op_len = rest
        .find(|c| !matches!(c, '!' | '<' | '>' | '='))
        .unwrap_or(rest.len());
    let op = match &rest[..op_len] {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        other => return Err(format!("unrecognized filter operator {other}")),
    };
    Ok(Filter {
        left: parse_operand(&expr[..op_start])?,
        comparison: Some((op, parse_operand(&rest[op_len..])?)),
    })
}

fn parse_operand(text: &str) -> Result<Operand, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty filter operand".to_owned());
    }
    if let Some(s) = unquote(text) {
        return Ok(Operand::Literal(Value::String(s)));
    }
    match text {
        "true" => return Ok(Operand::Literal(Value::Bool(true))),
        "false" => return Ok(Operand::Literal(Value::Bool(false))),
        _ => {}
    }
    if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        // Upstream's number node: a float when it has a dot, else an integer.
        let number = if text.contains('.') {
            text.parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
        } else {
            text.parse::<i64>().ok().map(serde_json::Number::from)
        };
        return number
            .map(|n| Operand::Literal(Value::Number(n)))
            .ok_or_else(|| format!("invalid number {text:?}"));
    }
    JsonPath::parse(text).map(Operand::Path)
}

fn apply<'a>(step: &Step, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
    let mut out = Vec::new();
    match step {
        Step::Field(name) if name.is_empty() => return Ok(input),
        Step::Field(name) => out.extend(input.iter().filter_map(|v| v.get(name.as_str()))),
        Step::Wildcard => {
            for value in input {
                match value {
                    Value::Array(items) => out.extend(items),
                    Value::Object(map) => out.extend(map.values()),
                    _ => {}
                }
            }
        }
        Step::Recursive => {
            for value in input {
                descendants(value, &mut out);
            }
        }
        Step::Slice(slice) => {
            for value in input {
                match value {
                    Value::Null => {}
                    Value::Array(items) => out.extend(slice.select(items)?),
                    _ => return Err("not an array or slice".to_owned()),
                }
            }
        }
        Step::Filter(filter) => {
            for value in input {
                let Value::Array(items) = value else {
                    return Err("not an array or slice and cannot be filtered".to_owned());
                };
                for item in items {
                    if filter.passes(item)? {
                        out.push(item);
                    }
                }
            }
        }
        Step::Union(steps) => {
            for step in steps {
                out.extend(apply(step, input.clone())?);
            }
        }
    }
    Ok(out)
}

/// `value` and its descendants that have children, depth first (upstream's recursive
/// descent keeps only containers; the field after `..` picks from them).
fn descendants<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    let children: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(map) => map.values().collect(),
        _ => return,
    };
    if children.is_empty() {
        return;
    }
    out.push(value);
    for child in children {
        descendants(child, out);
    }
}

impl Slice {
    fn select<'a>(&self, items: &'a [Value]) -> Result<Vec<&'a Value>, String> {
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let mut start = self.start.unwrap_or(0);
        if start < 0 {
            start += len;
        }
        let mut end = match (self.single, self.end) {
            (true, _) => self.start.unwrap_or(0) + 1,
            (false, Some(end)) => end,
            (false, None) => len,
        };
        if end < 0 || (self.single && end == 0) {
            end += len;
        }
        if start == end {
            return Ok(Vec::new());
        }
        if start < 0 || start >= len {
            return Err(format!(
                "array index out of bounds: index {start}, length {len}"
            ));
        }
        if end < 0 || end > len {
            return Err(format!(
                "array index out of bounds: index {}, length {len}",
                end - 1
            ));
        }
        if start > end {
            return Err(format!(
                "starting index {start} is greater than ending index {end}"
            ));
        }
        let step = match self.step {
            Some(step) if step <= 0 => return Err("step must be > 0".to_owned()),
            Some(step) => usize::try_from(step).unwrap_or(usize::MAX),
            None => 1,
        };
        // Both bounds are within 0..=len here.
        let (start, end) = (start as usize, end as usize);
        Ok(items[start..end].iter().step_by(step).collect())
    }
}

impl Filter {
    fn passes(&self, item: &Value) -> Result<bool, String> {
        let lefts = self.left.values(item)?;
        let Some((op, right)) = &self.comparison else {
            return Ok(!lefts.is_empty());
        };
        let left = match lefts.as_slice() {
            [] => return Ok(false),
            [one] => *one,
            _ => return Err("can only compare one element at a time".to_owned()),
        };
        let rights = right.values(item)?;
        let right = match rights.as_slice() {
            [] => return Ok(false),
            [one] => *one,
            _ => return Err("can only compare one element at a time".to_owned()),
        };
        compare(*op, left, right)
    }
}

impl Operand {
    fn values<'a>(&'a self, item: &'a Value) -> Result<Vec<&'a Value>, String> {
        match self {
            Operand::Path(path) => path.find(item),
            Operand::Literal(value) => Ok(vec![value]),
        }
    }
}

/// The kinds Go's text/template compares: integers with integers, floats with floats,
/// strings with strings, booleans only for (in)equality; anything else is an error.
fn compare(op: Op, left: &Value, right: &Value) -> Result<bool, String> {
    let ordering = match (left, right) {
        (Value::Bool(a), Value::Bool(b)) => match op {
            Op::Eq => return Ok(a == b),
            Op::Ne => return Ok(a != b),
            _ => return Err("invalid type for comparison".to_owned()),
        },
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Number(a), Value::Number(b)) if a.is_f64() == b.is_f64() => {
            if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
                a.cmp(&b)
            } else {
                let (a, b) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
                a.partial_cmp(&b).ok_or("incomparable numbers")?
            }
        }
        _ => return Err("incompatible types for comparison".to_owned()),
    };
    Ok(match op {
        Op::Eq => ordering == Ordering::Equal,
        Op::Ne => ordering != Ordering::Equal,
        Op::Lt => ordering == Ordering::Less,
        Op::Le => ordering != Ordering::Greater,
        Op::Gt => ordering == Ordering::Greater,
        Op::Ge => ordering != Ordering::Less,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> Value {
        json!({
            "metadata": {
                "name": "web",
                "labels": {"app": "nginx", "app.kubernetes.io/name": "web", "tier-x": "front"},
            },
            "spec": {
                "replicas": 3,
                "ratio": 1.5,
                "items": [{"name": "a", "n": 1}, {"name": "b", "n": 2}, {"name": "c", "n": 3}],
            },
            "status": {
                "conditions": [
                    {"type": "Progressing", "status": "False"},
                    {"type": "Ready", "status": "True"},
                ],
            },
        })
    }

    fn find(path: &str) -> Result<Vec<Value>, String> {
        let obj = object();
        let parsed = JsonPath::parse(path)?;
        parsed
            .find(&obj)
            .map(|found| found.into_iter().cloned().collect())
    }

    #[test]
    fn fields_and_missing_keys() {
        assert_eq!(find(".spec.replicas"), Ok(vec![json!(3)]));
        assert_eq!(find("$.spec.replicas"), Ok(vec![json!(3)]));
        assert_eq!(find(".metadata.labels.app"), Ok(vec![json!("nginx")]));
        assert_eq!(find(".metadata.labels.tier-x"), Ok(vec![json!("front")]));
        assert_eq!(
            find(".metadata.labels.app\\.kubernetes\\.io/name"),
            Ok(vec![json!("web")])
        );
        assert_eq!(
            find(".metadata.labels['app.kubernetes.io/name']"),
            Ok(vec![json!("web")])
        );
        assert_eq!(find(".spec.missing.deeper"), Ok(vec![]));
        // A field of an array selects nothing: upstream only looks up keys of maps.
        assert_eq!(find(".spec.items.name"), Ok(vec![]));
    }

    #[test]
    fn arrays_wildcards_and_slices() {
        assert_eq!(
            find(".spec.items[*].name"),
            Ok(vec![json!("a"), json!("b"), json!("c")])
        );
        assert_eq!(find(".spec.items[0].name"), Ok(vec![json!("a")]));
        assert_eq!(find(".spec.items[-1].name"), Ok(vec![json!("c")]));
        assert_eq!(
            find(".spec.items[1:].name"),
            Ok(vec![json!("b"), json!("c")])
        );
        assert_eq!(
            find(".spec.items[0:3:2].name"),
            Ok(vec![json!("a"), json!("c")])
        );
        assert_eq!(find(".spec.items[0,2].n"), Ok(vec![json!(1), json!(3)]));
        assert!(find(".spec.items[5].name").is_err());
        assert!(find(".spec.replicas[0]").is_err());
        assert_eq!(find(".metadata.labels.*").map(|v| v.len()), Ok(3));
    }

    #[test]
    fn filters() {
        assert_eq!(
            find(".status.conditions[?(@.type==\"Ready\")].status"),
            Ok(vec![json!("True")])
        );
        assert_eq!(
            find(".status.conditions[?(@.type == 'Ready')].status"),
            Ok(vec![json!("True")])
        );
        assert_eq!(
            find(".spec.items[?(@.n>1)].name"),
            Ok(vec![json!("b"), json!("c")])
        );
        assert_eq!(find(".spec.items[?(@.n!=2)].name").map(|v| v.len()), Ok(2));
        assert_eq!(find(".spec.items[?(@.name)].n").map(|v| v.len()), Ok(3));
        assert_eq!(find(".spec.items[?(@.nope)].n"), Ok(vec![]));
        // An integer field against a float literal is an error, as in Go's templates.
        assert!(find(".spec.items[?(@.n==1.0)].name").is_err());
        assert!(find(".spec.replicas[?(@.n==1)]").is_err());
    }

    #[test]
    fn recursive_descent_and_unions() {
        assert_eq!(
            find("..name"),
            Ok(vec![json!("web"), json!("a"), json!("b"), json!("c")])
        );
        assert_eq!(
            find(".spec.replicas,.metadata.name"),
            Ok(vec![json!(3), json!("web")])
        );
    }

    #[test]
    fn bad_paths_are_refused() {
        for bad in [
            "",
            ".spec[",
            ".spec.items[?(@.a==)]",
            ".a[x]",
            ".a[1:2:3:4]",
            ".a[?(@.a=~\"x\")]",
            "spec",
            ".a['unterminated]",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
