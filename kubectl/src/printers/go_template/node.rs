//! The parse tree of a template, and Go's `String()` of its nodes, which execution errors
//! quote as their context (`at <.metadata.name.z>`).

use std::fmt;

#[derive(Debug, Clone)]
pub enum Node {
    Text(String),
    Action(Pipe),
    /// `if`, `with` or `range` (`kind`), its pipeline, body and else branch.
    Control {
        kind: &'static str,
        pos: usize,
        pipe: Pipe,
        list: Vec<Node>,
        else_list: Vec<Node>,
    },
    /// `{{template "name" pipeline}}`, and what `{{block}}` leaves in its place; `pos` is the
    /// name's, where Go places the node.
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break,
    Continue,
}

/// Whether `nodes` call a template anywhere.
pub fn calls_template(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Template { .. } => true,
        Node::Control {
            list, else_list, ..
        } => calls_template(list) || calls_template(else_list),
        _ => false,
    })
}

/// Go's `IsEmptyTree`: a template of blank text only, which a redefinition may replace
/// (and which does not replace a template already defined).
pub fn is_empty(nodes: &[Node]) -> bool {
    nodes.iter().all(|n| match n {
        Node::Text(t) => t.trim().is_empty(),
        _ => false,
    })
}

#[derive(Debug, Clone)]
pub struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<String>,
    pub cmds: Vec<Cmd>,
}

#[derive(Debug, Clone)]
pub struct Cmd {
    pub args: Vec<Arg>,
}

#[derive(Debug, Clone)]
pub enum Arg {
    Field(usize, Vec<String>),
    /// `$x.a.b`: the variable and its fields.
    Var(usize, String, Vec<String>),
    Dot(usize),
    Nil(usize),
    Bool(usize, bool),
    /// The number as written.
    Num(usize, String),
    Char(usize, String, char),
    /// As written, and its value.
    Str(usize, String, String),
    Ident(usize, String),
    Pipe(usize, Box<Pipe>),
    /// `(pipeline).a.b`.
    Chain(usize, Box<Arg>, Vec<String>),
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field(p, _)
            | Arg::Var(p, ..)
            | Arg::Dot(p)
            | Arg::Nil(p)
            | Arg::Bool(p, _)
            | Arg::Num(p, _)
            | Arg::Char(p, ..)
            | Arg::Str(p, ..)
            | Arg::Ident(p, _)
            | Arg::Pipe(p, _)
            | Arg::Chain(p, ..) => *p,
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field(_, ids) => ids.iter().try_for_each(|i| write!(f, ".{i}")),
            Arg::Var(_, v, ids) => {
                write!(f, "{v}")?;
                ids.iter().try_for_each(|i| write!(f, ".{i}"))
            }
            Arg::Dot(_) => write!(f, "."),
            Arg::Nil(_) => write!(f, "nil"),
            Arg::Bool(_, b) => write!(f, "{b}"),
            Arg::Num(_, t) | Arg::Char(_, t, _) | Arg::Str(_, t, _) | Arg::Ident(_, t) => {
                write!(f, "{t}")
            }
            Arg::Pipe(_, p) => write!(f, "({p})"),
            Arg::Chain(_, node, ids) => {
                match node.as_ref() {
                    Arg::Pipe(_, p) => write!(f, "({p})")?,
                    other => write!(f, "{other}")?,
                }
                ids.iter().try_for_each(|i| write!(f, ".{i}"))
            }
        }
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                write!(f, " ")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            write!(f, "{}", self.decl.join(", "))?;
            write!(f, "{}", if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                write!(f, " | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Go's `String()` of a node, the context of an execution error.
pub fn node_string(node: &Node) -> String {
    match node {
        Node::Text(t) => t.clone(),
        Node::Action(p) => format!("{{{{{p}}}}}"),
        Node::Control {
            kind,
            pipe,
            list,
            else_list,
            ..
        } => {
            let body: String = list.iter().map(node_string).collect();
            let mut s = format!("{{{{{kind} {pipe}}}}}{body}");
            if !else_list.is_empty() {
                let e: String = else_list.iter().map(node_string).collect();
                s += &format!("{{{{else}}}}{e}");
            }
            s + "{{end}}"
        }
        Node::Template { name, pipe, .. } => match pipe {
            Some(p) => format!("{{{{template {} {p}}}}}", super::fmt::quote(name)),
            None => format!("{{{{template {}}}}}", super::fmt::quote(name)),
        },
        Node::Break => "{{break}}".into(),
        Node::Continue => "{{continue}}".into(),
    }
}
