//! Go's text/template execution (`exec.go`) over JSON data: fields of maps (missing keys
//! `<no value>`, or an error under `missingkey=error`), variables with their scopes,
//! if/with/range with else (maps ranged in key order), pipelines, and Go's error texts
//! with their `output:LINE:COL` location and `<node>` context.

use super::fmt::{quote, sprint_value};
use super::node::{Arg, Cmd, Node, Pipe, node_string};
use super::parse::Templates;
use super::value::{Val, sorted_keys};
use std::borrow::Cow;

#[path = "exec_fields.rs"]
mod fields;

/// The dot: a value and whether Go holds it as an `interface{}` (a map or slice element),
/// which shows in errors as `interface {}`.
#[derive(Debug, Clone)]
pub struct Dot<'a> {
    pub v: Val<'a>,
    pub iface: bool,
}

struct Var<'a> {
    name: String,
    dot: Dot<'a>,
}

pub struct Exec<'a, 't> {
    src: &'t str,
    pub out: String,
    vars: Vec<Var<'a>>,
    missing_error: bool,
    at: Option<(usize, String)>,
    templates: &'t Templates,
    /// The template being run, which errors name, and how deep in `{{template}}` calls.
    name: &'t str,
    depth: usize,
}

pub type R<T> = Result<T, String>;

/// How a list of nodes ended: `{{break}}` and `{{continue}}` unwind to their range.
#[derive(PartialEq)]
enum Flow {
    Next,
    Break,
    Continue,
}

/// Go's `maxExecDepth`.
pub const MAX_DEPTH: usize = 100_000;

/// Runs the `output` template over `data`; on error, the output so far and the error.
pub fn execute(
    templates: &Templates,
    src: &str,
    data: &serde_json::Value,
    missing_error: bool,
) -> Result<String, (String, String)> {
    let mut ex = Exec {
        src,
        out: String::new(),
        vars: Vec::new(),
        missing_error,
        at: None,
        templates,
        name: "output",
        depth: 0,
    };
    let nodes = templates.get("output").map_or(&[][..], Vec::as_slice);
    let dot = Dot {
        v: Val::from_json(data),
        iface: false,
    };
    ex.vars.push(Var {
        name: "$".into(),
        dot: dot.clone(),
    });
    match ex.walk_list(&dot, nodes) {
        Ok(_) => Ok(ex.out),
        Err(e) => Err((ex.out, e)),
    }
}

/// A number literal's value: Go's `int` unless it is written as a float.
pub fn number_value(text: &str) -> Option<Val<'static>> {
    let t = text.replace('_', "");
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let radix = |p: &[&str]| p.iter().find_map(|p| body.strip_prefix(p));
    let int = if let Some(h) = radix(&["0x", "0X"]) {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = radix(&["0o", "0O"]) {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = radix(&["0b", "0B"]) {
        i64::from_str_radix(b, 2).ok()
    } else if body.contains(['.', 'e', 'E']) {
        let f: f64 = body.parse().ok()?;
        return Some(Val::Float(if neg { -f } else { f }));
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()
    } else {
        body.parse().ok()
    }?;
    Some(Val::Int(if neg { -int } else { int }))
}

impl<'a> Exec<'a, '_> {
    /// Go's `errorf`: the error at the node being evaluated.
    pub fn err(&self, msg: impl std::fmt::Display) -> String {
        match &self.at {
            None => format!("template: output: {msg}"),
            Some((pos, ctx)) => {
                let before = &self.src[..(*pos).min(self.src.len())];
                let line = 1 + before.matches('\n').count();
                let col = before
                    .rfind('\n')
                    .map_or(before.len(), |i| before.len() - i - 1);
                let name = quote(self.name);
                format!("template: output:{line}:{col}: executing {name} at <{ctx}>: {msg}")
            }
        }
    }

    pub fn at(&mut self, pos: usize, ctx: String) {
        self.at = Some((pos, ctx));
    }

    fn walk_list(&mut self, dot: &Dot<'a>, nodes: &[Node]) -> R<Flow> {
        for n in nodes {
            let flow = self.walk(dot, n)?;
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    fn walk(&mut self, dot: &Dot<'a>, node: &Node) -> R<Flow> {
        match node {
            Node::Text(t) => self.out.push_str(t),
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
            Node::Template { pos, name, pipe } => {
                self.at(*pos, node_string(node));
                self.call_template(dot, name, pipe.as_ref())?;
            }
            Node::Action(pipe) => {
                self.at(pipe.pos, node_string(node));
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.at(pipe.pos, node_string(node));
                    match v {
                        Val::Invalid => self.out.push_str("<no value>"),
                        v => self.out.push_str(&sprint_value(&v)),
                    }
                }
            }
            Node::Control {
                kind: "range",
                pos,
                pipe,
                list,
                else_list,
            } => {
                self.at(*pos, node_string(node));
                let mark = self.vars.len();
                let val = self.eval_pipeline(dot, pipe)?;
                let mut ran = false;
                // Whether to go on with the next element.
                let mut each = |ex: &mut Self, index: Val<'a>, elem: Dot<'a>| -> R<bool> {
                    ran = true;
                    let n = ex.vars.len();
                    if pipe.is_assign {
                        let first = if pipe.decl.len() > 1 {
                            index.clone()
                        } else {
                            elem.v.clone()
                        };
                        if let Some(d) = pipe.decl.first() {
                            ex.set_var(
                                d,
                                Dot {
                                    v: first,
                                    iface: false,
                                },
                            );
                        }
                        if let Some(d) = pipe.decl.get(1) {
                            ex.set_var(d, elem.clone());
                        }
                    } else {
                        if !pipe.decl.is_empty() {
                            ex.vars[n - 1].dot = elem.clone();
                        }
                        if pipe.decl.len() > 1 {
                            ex.vars[n - 2].dot = Dot {
                                v: index,
                                iface: false,
                            };
                        }
                    }
                    let result = ex.walk_list(&elem, list);
                    ex.vars.truncate(n);
                    Ok(result? != Flow::Break)
                };
                match &val {
                    Val::List(items) => {
                        for (i, e) in items.iter().enumerate() {
                            let elem = Dot {
                                v: Val::from_json(e),
                                iface: true,
                            };
                            if !each(self, Val::Int(i as i64), elem)? {
                                break;
                            }
                        }
                    }
                    Val::Map(m) => {
                        for k in sorted_keys(m) {
                            let elem = Dot {
                                v: Val::from_json(&m[k]),
                                iface: true,
                            };
                            if !each(self, Val::Str(Cow::Borrowed(k.as_str())), elem)? {
                                break;
                            }
                        }
                    }
                    Val::Int(n) | Val::Int64(n) if pipe.decl.len() < 2 => {
                        for i in 0..*n {
                            let elem = Dot {
                                v: Val::Int(i),
                                iface: false,
                            };
                            if !each(self, Val::Int(i), elem)? {
                                break;
                            }
                        }
                    }
                    Val::Invalid | Val::Nil => {}
                    other => {
                        let shown = sprint_value(other);
                        return Err(self.err(format!("range can't iterate over {shown}")));
                    }
                }
                let flow = if ran {
                    Flow::Next
                } else {
                    self.walk_list(dot, else_list)?
                };
                self.vars.truncate(mark);
                return Ok(flow);
            }
            Node::Control {
                kind,
                pipe,
                list,
                else_list,
                ..
            } => {
                let mark = self.vars.len();
                let val = self.eval_pipeline(dot, pipe)?;
                let flow = if val.truth() {
                    if *kind == "with" {
                        let inner = Dot {
                            v: val,
                            iface: false,
                        };
                        self.walk_list(&inner, list)?
                    } else {
                        self.walk_list(dot, list)?
                    }
                } else {
                    self.walk_list(dot, else_list)?
                };
                self.vars.truncate(mark);
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    /// Go's `walkTemplate`: the called template sees only its dot, as `.` and `$`.
    fn call_template(&mut self, dot: &Dot<'a>, name: &str, pipe: Option<&Pipe>) -> R<()> {
        let templates = self.templates;
        let Some((name, nodes)) = templates.get_key_value(name) else {
            return Err(self.err(format!("template {} not defined", quote(name))));
        };
        if self.depth == MAX_DEPTH {
            return Err(self.err(format!("exceeded maximum template depth ({MAX_DEPTH})")));
        }
        let v = match pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Val::Invalid,
        };
        let inner = Dot { v, iface: false };
        let vars = std::mem::replace(
            &mut self.vars,
            vec![Var {
                name: "$".into(),
                dot: inner.clone(),
            }],
        );
        let caller = std::mem::replace(&mut self.name, name);
        self.depth += 1;
        let result = self.walk_list(&inner, nodes);
        self.depth -= 1;
        self.name = caller;
        self.vars = vars;
        result.map(drop)
    }

    fn set_var(&mut self, name: &str, dot: Dot<'a>) {
        if let Some(v) = self.vars.iter_mut().rev().find(|v| v.name == name) {
            v.dot = dot;
        }
    }

    pub fn eval_pipeline(&mut self, dot: &Dot<'a>, pipe: &Pipe) -> R<Val<'a>> {
        self.at(pipe.pos, pipe.to_string());
        let mut value = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            // Go unwraps an interface{} after each command: a nil one becomes invalid.
            value = Some(if matches!(v, Val::Nil) {
                Val::Invalid
            } else {
                v
            });
        }
        let value = value.unwrap_or(Val::Invalid);
        for name in &pipe.decl {
            let d = Dot {
                v: value.clone(),
                iface: false,
            };
            if pipe.is_assign {
                self.set_var(name, d);
            } else {
                self.vars.push(Var {
                    name: name.clone(),
                    dot: d,
                });
            }
        }
        Ok(value)
    }

    fn eval_command(&mut self, dot: &Dot<'a>, cmd: &Cmd, fin: Option<Val<'a>>) -> R<Val<'a>> {
        let first = &cmd.args[0];
        self.at(first.pos(), first.to_string());
        match first {
            Arg::Field(_, ids) => return self.eval_field_chain(dot.clone(), ids, &cmd.args, fin),
            Arg::Chain(..) => return self.eval_chain(dot, first, &cmd.args, fin),
            Arg::Ident(_, name) => return super::funcs::call(self, dot, name, &cmd.args, fin),
            Arg::Var(_, name, ids) => return self.eval_variable(name, ids, &cmd.args, fin),
            Arg::Pipe(_, pipe) => {
                self.not_a_function(cmd, &fin)?;
                return self.eval_pipeline(dot, pipe);
            }
            _ => {}
        }
        self.not_a_function(cmd, &fin)?;
        Ok(match first {
            Arg::Bool(_, b) => Val::Bool(*b),
            Arg::Dot(_) => dot.v.clone(),
            Arg::Nil(_) => return Err(self.err("nil is not a command")),
            other => self.constant(other),
        })
    }

    fn not_a_function(&self, cmd: &Cmd, fin: &Option<Val<'a>>) -> R<()> {
        if cmd.args.len() > 1 || fin.is_some() {
            return Err(self.err(format!(
                "can't give argument to non-function {}",
                cmd.args[0]
            )));
        }
        Ok(())
    }

    /// A literal's value.
    pub fn constant(&self, arg: &Arg) -> Val<'a> {
        match arg {
            Arg::Bool(_, b) => Val::Bool(*b),
            Arg::Num(_, n) => number_value(n).unwrap_or(Val::Int(0)),
            Arg::Char(_, _, c) => Val::Int(*c as i64),
            Arg::Str(_, _, s) => Val::Str(Cow::Owned(s.clone())),
            _ => Val::Nil,
        }
    }

    /// An argument of a function or a chain's receiver (Go's `evalArg`).
    pub fn eval_arg(&mut self, dot: &Dot<'a>, arg: &Arg) -> R<Val<'a>> {
        self.at(arg.pos(), arg.to_string());
        let one = std::slice::from_ref(arg);
        match arg {
            Arg::Dot(_) => Ok(dot.v.clone()),
            Arg::Nil(_) => Ok(Val::Nil),
            Arg::Field(_, ids) => self.eval_field_chain(dot.clone(), ids, one, None),
            Arg::Var(_, name, ids) => self.eval_variable(name, ids, one, None),
            Arg::Pipe(_, pipe) => self.eval_pipeline(dot, pipe),
            Arg::Chain(..) => self.eval_chain(dot, arg, one, None),
            Arg::Ident(_, name) => super::funcs::call(self, dot, name, one, None),
            other => Ok(self.constant(other)),
        }
    }
}
