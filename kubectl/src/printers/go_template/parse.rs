//! Go's text/template parser (`parse.Tree`) over the tokens of `lex`: text, actions,
//! if/else if/with/range with else, variables with scopes, pipelines and parenthesised
//! pipelines, with Go's error texts (`function "x" not defined`, `unexpected EOF`, ...).

use super::lex::{Tok, Token, describe, is_keyword, lex};
use super::node::{Arg, Cmd, Node, Pipe};
use std::collections::BTreeMap;

#[path = "define.rs"]
mod define;

/// The templates of one text by name; the text's own is `output`, as kubectl names it.
pub type Templates = BTreeMap<String, Vec<Node>>;

pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

type Result<T> = std::result::Result<T, ParseError>;

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    vars: Vec<String>,
    funcs: &'a dyn Fn(&str) -> bool,
    /// How many range bodies enclose the parse (`{{break}}` needs one).
    range_depth: usize,
    defs: Templates,
}

/// Parses `src`; `funcs` says which function names exist.
pub fn parse(src: &str, funcs: &dyn Fn(&str) -> bool) -> Result<Templates> {
    let mut p = Parser {
        tokens: lex(src),
        at: 0,
        vars: vec!["$".into()],
        funcs,
        range_depth: 0,
        defs: Templates::new(),
    };
    let mut nodes = Vec::new();
    loop {
        match p.peek().tok {
            Tok::Eof => {
                let line = p.peek().line;
                p.add("output", nodes, line)?;
                return Ok(p.defs);
            }
            Tok::Left => {
                let left = p.next();
                let t = p.next_non_space();
                if let Tok::Ident(k) = &t.tok
                    && matches!(k.as_str(), "end" | "else")
                {
                    return Err(p.error(&t, format!("unexpected {{{{{k}}}}}")));
                }
                if matches!(&t.tok, Tok::Ident(k) if k == "define") {
                    p.definition()?;
                    continue;
                }
                p.at -= 1;
                nodes.push(p.action(left)?);
            }
            _ => nodes.push(p.text()?),
        }
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        self.at += 1;
        t
    }

    fn next_non_space(&mut self) -> Token {
        loop {
            let t = self.next();
            if t.tok != Tok::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Token {
        let t = self.next_non_space();
        self.at -= 1;
        t
    }

    fn error(&self, t: &Token, msg: String) -> ParseError {
        ParseError { line: t.line, msg }
    }

    fn text(&mut self) -> Result<Node> {
        let t = self.next();
        match t.tok {
            Tok::Text(s) => Ok(Node::Text(s)),
            Tok::Error(ref m) => Err(self.error(&t, m.clone())),
            _ => Err(self.error(&t, format!("unexpected {}", describe(&t.tok)))),
        }
    }

    /// A list of nodes up to `{{end}}` or `{{else`; returns it and which one ended it.
    fn item_list(&mut self) -> Result<(Vec<Node>, &'static str)> {
        let mut nodes = Vec::new();
        loop {
            match self.peek().tok {
                Tok::Eof => {
                    let t = self.peek().clone();
                    return Err(self.error(&t, "unexpected EOF".into()));
                }
                Tok::Left => {
                    let left = self.next();
                    let t = self.next_non_space();
                    if let Tok::Ident(k) = &t.tok {
                        if k == "end" {
                            self.expect_right("end")?;
                            return Ok((nodes, "end"));
                        }
                        if k == "else" {
                            return Ok((nodes, "else"));
                        }
                    }
                    self.at -= 1;
                    nodes.push(self.action(left)?);
                }
                _ => nodes.push(self.text()?),
            }
        }
    }

    fn expect_right(&mut self, context: &str) -> Result<()> {
        let t = self.next_non_space();
        match t.tok {
            Tok::Right => Ok(()),
            _ => Err(self.unexpected(&t, context)),
        }
    }

    fn unexpected(&self, t: &Token, context: &str) -> ParseError {
        match &t.tok {
            Tok::Error(m) => self.error(t, m.clone()),
            tok => self.error(t, format!("unexpected {} in {context}", describe(tok))),
        }
    }

    fn action(&mut self, left: Token) -> Result<Node> {
        let t = self.next_non_space();
        if let Tok::Ident(k) = &t.tok
            && let Some(kind) = ["if", "range", "with"].into_iter().find(|c| c == k)
        {
            return self.control(kind, t.pos);
        }
        if let Tok::Ident(k) = &t.tok {
            match k.as_str() {
                "template" => return self.template_call(),
                "block" => return self.block(),
                "break" | "continue" => return self.loop_control(&k.clone()),
                _ => {}
            }
        }
        self.at -= 1;
        let _ = left;
        Ok(Node::Action(self.pipeline("command", true)?))
    }

    fn control(&mut self, kind: &'static str, pos: usize) -> Result<Node> {
        let mark = self.vars.len();
        let pipe = self.pipeline(kind, true)?;
        let in_range = usize::from(kind == "range");
        self.range_depth += in_range;
        let body = self.item_list();
        self.range_depth -= in_range;
        let (list, ended) = body?;
        let mut else_list = Vec::new();
        if ended == "else" {
            let t = self.peek_non_space();
            // `{{else if ...}}` / `{{else with ...}}` nest a control as the else branch.
            if let Tok::Ident(k) = &t.tok
                && (k == "if" && kind == "if" || k == "with" && kind == "with")
            {
                self.next_non_space();
                else_list.push(self.control(kind, t.pos)?);
            } else {
                self.expect_right("else")?;
                let (l, ended) = self.item_list()?;
                if ended == "else" {
                    let t = self.peek().clone();
                    return Err(self.error(&t, "expected end; found {{else}}".into()));
                }
                else_list = l;
            }
        }
        self.vars.truncate(mark);
        Ok(Node::Control {
            kind,
            pos,
            pipe,
            list,
            else_list,
        })
    }

    /// A pipeline up to `}}` (`to_right`) or `)`.
    fn pipeline(&mut self, context: &str, to_right: bool) -> Result<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe {
            pos: start.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        if let Tok::Var(v) = &start.tok {
            let save = self.at;
            self.next_non_space();
            let after = self.peek_non_space();
            match after.tok {
                Tok::Declare | Tok::Assign => {
                    self.next_non_space();
                    pipe.is_assign = after.tok == Tok::Assign;
                    pipe.decl.push(v.clone());
                    if !pipe.is_assign {
                        self.vars.push(v.clone());
                    }
                }
                Tok::Comma if context == "range" => {
                    self.next_non_space();
                    let second = self.next_non_space();
                    let op = self.next_non_space();
                    match (&second.tok, &op.tok) {
                        (Tok::Var(w), Tok::Declare | Tok::Assign) => {
                            pipe.is_assign = op.tok == Tok::Assign;
                            pipe.decl = vec![v.clone(), w.clone()];
                            if !pipe.is_assign {
                                self.vars.extend([v.clone(), w.clone()]);
                            }
                        }
                        _ => {
                            return Err(
                                self.error(&second, "too many declarations in range".into())
                            );
                        }
                    }
                }
                _ => self.at = save,
            }
        }
        loop {
            let t = self.next_non_space();
            match t.tok {
                Tok::Right if to_right => break,
                Tok::RParen if !to_right => break,
                // Go's lexer makes keywords items of their own, which start no command.
                Tok::Ident(ref k) if is_keyword(k) && k != "nil" => {
                    return Err(self.unexpected(&t, context));
                }
                Tok::Ident(_)
                | Tok::Dot
                | Tok::Field(_)
                | Tok::Var(_)
                | Tok::Str(..)
                | Tok::Num(_)
                | Tok::Char(..)
                | Tok::LParen => {
                    self.at -= 1;
                    pipe.cmds.push(self.command()?);
                }
                _ => return Err(self.unexpected(&t, context)),
            }
        }
        if pipe.cmds.is_empty() {
            let t = self.tokens[self.at - 1].clone();
            return Err(self.error(&t, format!("missing value for {context}")));
        }
        Ok(pipe)
    }

    fn command(&mut self) -> Result<Cmd> {
        let mut args = Vec::new();
        loop {
            self.peek_non_space();
            if let Some(a) = self.operand()? {
                args.push(a);
            }
            let t = self.next();
            match t.tok {
                Tok::Space => continue,
                Tok::Right | Tok::RParen => self.at -= 1,
                Tok::Pipe => {}
                _ => return Err(self.unexpected(&t, "operand")),
            }
            break;
        }
        if args.is_empty() {
            let t = self.peek().clone();
            return Err(self.error(&t, "empty command".into()));
        }
        Ok(Cmd { args })
    }

    fn operand(&mut self) -> Result<Option<Arg>> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        // Go's chain (and the field it becomes) sits where its first added field starts.
        let p = self.peek().pos;
        while let Tok::Field(f) = &self.peek().tok {
            fields.push(f[1..].to_owned());
            self.at += 1;
        }
        if fields.is_empty() {
            return Ok(Some(term));
        }
        Ok(Some(match term {
            Arg::Field(_, mut ids) => {
                ids.extend(fields);
                Arg::Field(p, ids)
            }
            Arg::Var(_, v, mut ids) => {
                ids.extend(fields);
                Arg::Var(p, v, ids)
            }
            Arg::Bool(..)
            | Arg::Str(..)
            | Arg::Num(..)
            | Arg::Char(..)
            | Arg::Nil(_)
            | Arg::Dot(_) => {
                let t = self.tokens[self.at - 1].clone();
                return Err(self.error(
                    &t,
                    format!("unexpected . after term {:?}", term.to_string()),
                ));
            }
            other => Arg::Chain(p, Box::new(other), fields),
        }))
    }

    fn term(&mut self) -> Result<Option<Arg>> {
        let t = self.next_non_space();
        let p = t.pos;
        Ok(Some(match &t.tok {
            Tok::Ident(name) => match name.as_str() {
                "true" | "false" => Arg::Bool(p, name == "true"),
                "nil" => Arg::Nil(p),
                "if" | "else" | "end" | "range" | "with" | "template" | "define" | "block"
                | "break" | "continue" => {
                    self.at -= 1;
                    return Ok(None);
                }
                _ if !(self.funcs)(name) => {
                    return Err(self.error(&t, format!("function {name:?} not defined")));
                }
                _ => Arg::Ident(p, name.clone()),
            },
            Tok::Dot => Arg::Dot(p),
            Tok::Var(v) => {
                if !self.vars.contains(v) {
                    return Err(self.error(&t, format!("undefined variable {v:?}")));
                }
                Arg::Var(p, v.clone(), Vec::new())
            }
            Tok::Field(f) => Arg::Field(p, vec![f[1..].to_owned()]),
            Tok::Num(n) => {
                if super::exec::number_value(n).is_none() {
                    return Err(self.error(&t, format!("illegal number syntax: {n:?}")));
                }
                Arg::Num(p, n.clone())
            }
            Tok::Char(raw, c) => Arg::Char(p, raw.clone(), *c),
            Tok::Str(raw, value) => Arg::Str(p, raw.clone(), value.clone()),
            Tok::LParen => Arg::Pipe(p, Box::new(self.pipeline("parenthesized pipeline", false)?)),
            _ => {
                self.at -= 1;
                return Ok(None);
            }
        }))
    }
}
