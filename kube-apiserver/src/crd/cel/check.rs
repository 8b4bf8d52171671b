//! What the interpreter does not check before running a rule, checked when the CRD is
//! written: names a rule uses that do not exist (`undeclared reference to 'x'`), properties the
//! schema does not declare (`undefined field 'x'`), results that cannot be a bool; plus the
//! facts the evaluation needs (does the rule use `oldSelf`, how deeply it loops).
//!
//! The `cel` crate has no type checker: this is a partial one, sure of what it reports and
//! silent where it cannot tell (a function's result, an optional's value, data kept by
//! untyped nodes). Comprehension variables over the schema's lists and maps, and bindings,
//! take the type of the items or values they stand for.

use super::escape::escape;
use super::node::Node;
use cel::common::ast::{Expr, IdedExpr, LiteralValue, SourceInfo};
use std::sync::OnceLock;

/// What the checker learnt of one expression.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Facts {
    /// The expression reads `oldSelf`: a transition rule.
    pub uses_old_self: bool,
    /// The deepest nesting of comprehensions (`all`, `exists`, `map`, ...).
    pub loop_depth: u32,
    /// How many nodes the expression has.
    pub size: u64,
    /// `==`, `!=` and `+` calls (by expression id) on `set` or `map` lists, which compare
    /// regardless of order and merge when added (see `unordered.rs`).
    pub unordered_equalities: Vec<(u64, Unordered)>,
}

/// How a list compares regardless of order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unordered {
    /// `x-kubernetes-list-type: set`: the same elements.
    Set,
    /// `x-kubernetes-list-type: map`: the same items by these keys.
    Map(Vec<String>),
}

/// The type an expression surely has, where the checker can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Known {
    Bool,
    String,
    Other,
    Unknown,
}

/// Global functions and member functions the environment declares (see `library.rs`),
/// besides the operators (`_+_`, `@in`, `!_`, ...).
const FUNCTIONS: &[&str] = &[
    // the standard library
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "value",
    "hasValue",
    "or",
    "orValue",
    // the strings, lists, math and encoders extensions
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
    "slice",
    "flatten",
    "distinct",
    "sort",
    "@sortByAssociatedKeys",
    "lists.range",
    "base64.encode",
    "base64.decode",
    "math.abs",
    "math.bitAnd",
    "math.bitNot",
    "math.bitOr",
    "math.bitShiftLeft",
    "math.bitShiftRight",
    "math.bitXor",
    "math.ceil",
    "math.floor",
    "math.isFinite",
    "math.isInf",
    "math.isNaN",
    "math.round",
    "math.sign",
    "math.sqrt",
    "math.trunc",
    "math.@max",
    "math.@min",
    // Kubernetes' libraries (lists, regex, urls, sets)
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "transformList",
    "transformMap",
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
];

/// Namespaces of global functions (`math.abs(x)` parses as a call on the identifier `math`).
const NAMESPACES: &[&str] = &[
    "optional", "math", "strings", "lists", "base64", "sets", "cel",
];

/// Type names usable as values (`type(x) == string`).
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
];

/// Checks `expr` (the rule's root, at schema `node`; `resource` when `self` is a whole object).
/// `Err` holds upstream-style issues (`ERROR: <input>:1:1: ...` with the source line).
pub(super) fn check(
    expr: &IdedExpr,
    info: &SourceInfo,
    node: &Node,
    resource: bool,
) -> Result<(Facts, Known), String> {
    let mut checker = Checker {
        info,
        node,
        resource,
        facts: Facts::default(),
        issues: Vec::new(),
        scope: Vec::new(),
    };
    let known = checker.walk(expr, 0);
    if checker.issues.is_empty() {
        Ok((checker.facts, known))
    } else {
        Err(checker.issues.join("\n"))
    }
}

struct Checker<'a> {
    info: &'a SourceInfo,
    node: &'a Node,
    resource: bool,
    facts: Facts,
    issues: Vec<String>,
    /// Comprehension variables in scope, with the schema node of their values when known.
    scope: Vec<(String, Option<&'a Node>)>,
}

/// Where a select chain rooted at `self`/`oldSelf` leads in the schema.
enum Place<'a> {
    /// At this schema node (`resource` when it is a whole object).
    Node(&'a Node, bool),
    /// Somewhere the checker does not follow (metadata, unknown fields, data).
    Anywhere,
}

impl<'a> Checker<'a> {
    fn bound(&self, name: &str) -> bool {
        self.scope.iter().any(|(s, _)| s == name)
    }

    /// The schema node of the innermost comprehension variable `name`, if it has one.
    fn bound_node(&self, name: &str) -> Option<&'a Node> {
        self.scope
            .iter()
            .rev()
            .find(|(s, _)| s == name)
            .and_then(|(_, n)| *n)
    }

    fn issue(&mut self, id: u64, msg: String) {
        self.issues.push(format_issue(self.info, id, &msg));
    }

    fn walk(&mut self, e: &IdedExpr, depth: u32) -> Known {
        self.facts.size += 1;
        match &e.expr {
            Expr::Unspecified => Known::Unknown,
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Known::Bool,
                LiteralValue::String(_) => Known::String,
                _ => Known::Other,
            },
            Expr::Ident(name) => {
                if self.bound(name) {
                    return self.bound_node(name).map_or(Known::Unknown, kind_of);
                }
                match name.as_str() {
                    "self" => kind_of(self.node),
                    "oldSelf" => {
                        self.facts.uses_old_self = true;
                        kind_of(self.node)
                    }
                    n if TYPE_NAMES.contains(&n) => Known::Other,
                    _ => {
                        self.issue(
                            e.id,
                            format!("undeclared reference to '{name}' (in container '')"),
                        );
                        Known::Unknown
                    }
                }
            }
            Expr::Select(sel) => {
                // Check the field against the schema when the operand is a path from self.
                match self.place(&sel.operand) {
                    Some(Place::Node(n, resource)) => {
                        self.walk(&sel.operand, depth);
                        let next = self.field(n, resource, &sel.field, e.id);
                        if sel.test {
                            Known::Bool
                        } else {
                            match next {
                                Some(Place::Node(n, _)) => kind_of(n),
                                _ => Known::Unknown,
                            }
                        }
                    }
                    _ => {
                        self.walk(&sel.operand, depth);
                        if sel.test {
                            Known::Bool
                        } else {
                            Known::Unknown
                        }
                    }
                }
            }
            Expr::Call(call) => self.call(e.id, call, depth),
            Expr::List(list) => {
                for el in &list.elements {
                    self.walk(el, depth);
                }
                Known::Other
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let cel::common::ast::EntryExpr::MapEntry(me) = &entry.expr {
                        self.walk(&me.key, depth);
                        self.walk(&me.value, depth);
                    }
                }
                Known::Other
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    if let cel::common::ast::EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, depth);
                    }
                }
                Known::Other
            }
            Expr::Comprehension(c) => {
                // The range and the accumulator's start are outside the loop.
                self.walk(&c.iter_range, depth);
                self.walk(&c.accu_init, depth);
                // cel.bind is a comprehension over nothing: not a loop.
                let binding = matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty());
                let inner = if binding { depth } else { depth + 1 };
                self.facts.loop_depth = self.facts.loop_depth.max(inner);
                let accu = match self.place(&c.accu_init) {
                    Some(Place::Node(n, _)) if binding => Some(n),
                    _ => None,
                };
                let pushed = 2 + usize::from(c.iter_var2.is_some());
                // Over a list of the schema, the variable is an item; over a map, a key.
                let element = match self.place(&c.iter_range) {
                    Some(Place::Node(n, _)) => n.items.as_deref(),
                    _ => None,
                };
                let value = match self.place(&c.iter_range) {
                    Some(Place::Node(n, _)) => n.items.as_deref().or(n.additional.as_deref()),
                    _ => None,
                };
                match &c.iter_var2 {
                    None => self.scope.push((c.iter_var.clone(), element)),
                    // Two variables: index and item, or key and value.
                    Some(v2) => {
                        self.scope.push((c.iter_var.clone(), None));
                        self.scope.push((v2.clone(), value));
                    }
                }
                self.scope.push((c.accu_var.clone(), accu));
                self.walk(&c.loop_cond, inner);
                self.walk(&c.loop_step, inner);
                // The result only reads the accumulator, once: not a loop body.
                let known = self.walk(&c.result, depth);
                self.scope.truncate(self.scope.len() - pushed);
                known
            }
        }
    }

    fn call(&mut self, id: u64, call: &cel::common::ast::CallExpr, depth: u32) -> Known {
        let name = call.func_name.as_str();
        // `math.abs(x)` arrives as the member call `abs` on the identifier `math`.
        let namespaced = match call.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(ns)) if NAMESPACES.contains(&ns.as_str()) && !self.bound(ns) => {
                Some(format!("{ns}.{name}"))
            }
            _ => None,
        };
        if let Some(target) = call.target.as_deref()
            && namespaced.is_none()
        {
            self.walk(target, depth);
        }
        let mut arg_kinds = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            arg_kinds.push(self.walk(arg, depth));
        }
        if matches!(name, "_==_" | "_!=_" | "_+_") && call.args.len() == 2 {
            let unordered = call.args.iter().find_map(|a| match self.place(a) {
                Some(Place::Node(n, _)) => unordered(n),
                _ => None,
            });
            if let Some(kind) = unordered {
                self.facts.unordered_equalities.push((id, kind));
            }
        }
        let full = namespaced.as_deref().unwrap_or(name);
        let operator = name.starts_with(['_', '@']) || name == "!_" || name == "-_";
        if !operator && !FUNCTIONS.contains(&full) && !super::format::FUNCTION_NAMES.contains(&full)
        {
            self.issue(
                id,
                format!("undeclared reference to '{full}' (in container '')"),
            );
        }
        match name {
            "_==_"
            | "_!=_"
            | "_<_"
            | "_<=_"
            | "_>_"
            | "_>=_"
            | "_&&_"
            | "_||_"
            | "!_"
            | "@in"
            | "@not_strictly_false"
            | "contains"
            | "startsWith"
            | "endsWith"
            | "matches"
            | "isSorted"
            | "hasValue"
            | "isURL" => Known::Bool,
            // A sum with a string in it is a string; one with an unknown side may be one.
            "_+_" if arg_kinds.contains(&Known::String) => Known::String,
            "_+_" if arg_kinds.contains(&Known::Unknown) => Known::Unknown,
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" | "-_" | "size" | "int" | "uint" | "double"
            | "duration" | "timestamp" | "bytes" => Known::Other,
            "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring"
            | "charAt" | "join" | "format" | "find" => Known::String,
            "_?_:_" => match (arg_kinds.get(1), arg_kinds.get(2)) {
                (Some(a), Some(b)) if a == b => *a,
                _ => Known::Unknown,
            },
            _ => Known::Unknown,
        }
    }

    /// Where `e` leads when it is a select chain from `self` or `oldSelf`.
    fn place(&self, e: &IdedExpr) -> Option<Place<'a>> {
        match &e.expr {
            Expr::Ident(name) if self.bound(name) => {
                self.bound_node(name).map(|n| Place::Node(n, n.embedded))
            }
            Expr::Ident(name) if name == "self" || name == "oldSelf" => {
                Some(Place::Node(self.node, self.resource))
            }
            Expr::Select(sel) if !sel.test => match self.place(&sel.operand)? {
                Place::Node(n, resource) => Some(child(n, resource, &sel.field)),
                Place::Anywhere => Some(Place::Anywhere),
            },
            // An item of a list or a value of a map: `self.ports[0]`, `self.labels['a']`.
            Expr::Call(call) if call.func_name == "_[_]" && call.args.len() == 2 => {
                match self.place(&call.args[0])? {
                    Place::Node(n, _) => n
                        .items
                        .as_deref()
                        .or(n.additional.as_deref())
                        .map(|item| Place::Node(item, item.embedded)),
                    Place::Anywhere => Some(Place::Anywhere),
                }
            }
            _ => None,
        }
    }

    /// Follows `field` from `n`, reporting it when the schema cannot have it.
    fn field<'n>(
        &mut self,
        n: &'n Node,
        resource: bool,
        field: &str,
        id: u64,
    ) -> Option<Place<'n>> {
        let place = child(n, resource, field);
        if let Place::Anywhere = place
            && !can_have_any_field(n, resource, field)
        {
            if is_scalar(n) {
                self.issue(
                    id,
                    format!(
                        "type '{}' does not support field selection",
                        cel_type_name(n)
                    ),
                );
            } else {
                self.issue(id, format!("undefined field '{field}'"));
            }
            return None;
        }
        Some(place)
    }
}

/// What every resource shows rules, whatever its schema says: `apiVersion`, `kind` and
/// `metadata` with `name` and `generateName` only.
fn resource_shell() -> &'static Node {
    static SHELL: OnceLock<Node> = OnceLock::new();
    SHELL.get_or_init(|| {
        Node::shape(&serde_json::json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "generateName": {"type": "string"},
                }},
            },
        }))
    })
}

fn child<'n>(n: &'n Node, resource: bool, field: &str) -> Place<'n> {
    if resource && matches!(field, "apiVersion" | "kind" | "metadata") {
        let shell = resource_shell();
        return match shell.properties.get(field) {
            Some(node) => Place::Node(node, false),
            None => Place::Anywhere,
        };
    }
    if n.additional.is_some() {
        return match n.additional.as_deref() {
            Some(values) => Place::Node(values, values.embedded),
            None => Place::Anywhere,
        };
    }
    for (name, prop) in &n.properties {
        if escape(name).as_deref() == Some(field) {
            return Place::Node(prop, prop.embedded);
        }
    }
    Place::Anywhere
}

/// Whether `field` may exist on objects of `n` although the schema does not declare it.
fn can_have_any_field(n: &Node, resource: bool, field: &str) -> bool {
    if resource && matches!(field, "apiVersion" | "kind" | "metadata") {
        return true;
    }
    if n.additional.is_some() || n.int_or_string {
        return true;
    }
    // Fields an object keeps through x-kubernetes-preserve-unknown-fields are not visible to
    // rules (upstream's documented limit); only a node of no type at all is dynamic.
    n.ty.is_empty() && n.properties.is_empty()
}

/// How lists of `n` compare, when not in order.
fn unordered(n: &Node) -> Option<Unordered> {
    match n.list_type.as_deref() {
        Some("set") => Some(Unordered::Set),
        Some("map") if !n.list_map_keys.is_empty() => Some(Unordered::Map(n.list_map_keys.clone())),
        _ => None,
    }
}

fn is_scalar(n: &Node) -> bool {
    matches!(n.ty.as_str(), "string" | "integer" | "number" | "boolean")
}

fn cel_type_name(n: &Node) -> &'static str {
    match (n.ty.as_str(), n.format.as_deref()) {
        ("string", Some("byte")) => "bytes",
        ("string", Some("duration")) => "google.protobuf.Duration",
        ("string", Some("date" | "date-time")) => "google.protobuf.Timestamp",
        ("string", _) => "string",
        ("integer", _) => "int",
        ("number", _) => "double",
        ("boolean", _) => "bool",
        _ => "dyn",
    }
}

fn kind_of(n: &Node) -> Known {
    if n.int_or_string {
        return Known::Other;
    }
    match n.ty.as_str() {
        "boolean" => Known::Bool,
        "string" if cel_type_name(n) == "string" => Known::String,
        "" => Known::Unknown,
        _ => Known::Other,
    }
}

/// `ERROR: <input>:<line>:<col>: <msg>` with the source line and a caret, as cel-go prints.
pub(super) fn format_issue(info: &SourceInfo, id: u64, msg: &str) -> String {
    let Some((start, _)) = info.offset_for(id) else {
        return format!("ERROR: <input>:-1:0: {msg}");
    };
    let (line, col, text) = locate(&info.source, start as usize);
    format!(
        "ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {}^",
        ".".repeat(col.saturating_sub(1))
    )
}

/// The 1-based line and column of character offset `offset`, and that line's text.
fn locate(source: &str, offset: usize) -> (usize, usize, &str) {
    let mut seen = 0usize;
    for (i, line) in source.split('\n').enumerate() {
        let len = line.chars().count();
        if offset <= seen + len {
            return (i + 1, offset - seen + 1, line);
        }
        seen += len + 1;
    }
    (1, 1, source.lines().next().unwrap_or(""))
}
