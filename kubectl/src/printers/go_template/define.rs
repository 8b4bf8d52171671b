//! Go's named templates at parse time: `{{define}}` (top level only), `{{template}}` calls,
//! `{{block}}` (a define and a call in one), the redefinition rules of Go's `Tree.add`, and
//! `{{break}}`/`{{continue}}`, which only a range's body may hold.

use super::{ParseError, Parser, Result};
use crate::printers::go_template::fmt::quote;
use crate::printers::go_template::lex::Tok;
use crate::printers::go_template::node::{Node, is_empty};

impl Parser<'_> {
    /// After a top-level `{{define`: Go's `parseDefinition`.
    pub(super) fn definition(&mut self) -> Result<()> {
        const CONTEXT: &str = "define clause";
        let (_, name) = self.template_name(CONTEXT)?;
        self.expect_right(CONTEXT)?;
        let list = self.own_body(CONTEXT)?;
        let line = self.tokens[self.at - 1].line;
        self.add(&name, list, line)
    }

    /// Go's `Tree.add`: a blank template neither replaces a defined one nor stops a later
    /// definition; two non-blank ones of a name are an error.
    pub(super) fn add(&mut self, name: &str, list: Vec<Node>, line: usize) -> Result<()> {
        match self.defs.get(name) {
            Some(old) if !is_empty(old) => {
                if !is_empty(&list) {
                    return Err(ParseError {
                        line,
                        msg: format!("template: multiple definition of template {}", quote(name)),
                    });
                }
            }
            _ => {
                self.defs.insert(name.to_owned(), list);
            }
        }
        Ok(())
    }

    /// After `{{template`: the name and an optional pipeline, whose variables stay declared.
    pub(super) fn template_call(&mut self) -> Result<Node> {
        const CONTEXT: &str = "template clause";
        let (pos, name) = self.template_name(CONTEXT)?;
        let pipe = if self.peek_non_space().tok == Tok::Right {
            self.next_non_space();
            None
        } else {
            Some(self.pipeline(CONTEXT, true)?)
        };
        Ok(Node::Template { pos, name, pipe })
    }

    /// After `{{block`: defines the body under the name and calls it in place.
    pub(super) fn block(&mut self) -> Result<Node> {
        const CONTEXT: &str = "block clause";
        let (pos, name) = self.template_name(CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, true)?;
        let list = self.own_body(CONTEXT)?;
        let line = self.tokens[self.at - 1].line;
        self.add(&name, list, line)?;
        Ok(Node::Template {
            pos,
            name,
            pipe: Some(pipe),
        })
    }

    /// After `{{break` or `{{continue`.
    pub(super) fn loop_control(&mut self, keyword: &str) -> Result<Node> {
        let t = self.next_non_space();
        if t.tok != Tok::Right {
            return Err(self.unexpected(&t, &format!("{{{{{keyword}}}}}")));
        }
        if self.range_depth == 0 {
            return Err(self.error(&t, format!("{{{{{keyword}}}}} outside {{{{range}}}}")));
        }
        Ok(if keyword == "break" {
            Node::Break
        } else {
            Node::Continue
        })
    }

    fn template_name(&mut self, context: &str) -> Result<(usize, String)> {
        let t = self.next_non_space();
        match &t.tok {
            Tok::Str(_, name) => Ok((t.pos, name.clone())),
            _ => Err(self.unexpected(&t, context)),
        }
    }

    /// A define's or block's body up to `{{end}}`: a tree of its own, which sees no outer
    /// variable and no enclosing range.
    fn own_body(&mut self, context: &str) -> Result<Vec<Node>> {
        let vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let depth = std::mem::replace(&mut self.range_depth, 0);
        let body = self.item_list();
        self.vars = vars;
        self.range_depth = depth;
        let (list, ended) = body?;
        if ended == "else" {
            // Go's `{{else if`/`{{else with` is an else node too; any other else must close.
            let t = self.peek_non_space();
            if !matches!(&t.tok, Tok::Ident(k) if k == "if" || k == "with") {
                self.expect_right("else")?;
            }
            let t = self.tokens[self.at - 1].clone();
            return Err(self.error(&t, format!("unexpected {{{{else}}}} in {context}")));
        }
        Ok(list)
    }
}
