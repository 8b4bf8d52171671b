//! Fields, variables and chains (`.a.b`, `$x.a`, `(pipe).a`): map lookups with Go's
//! missing-key and nil errors.

use super::{Dot, Exec, R};
use crate::printers::go_template::fmt::quote;
use crate::printers::go_template::node::Arg;
use crate::printers::go_template::value::Val;

impl<'a> Exec<'a, '_> {
    pub(super) fn eval_chain(
        &mut self,
        dot: &Dot<'a>,
        chain: &Arg,
        args: &[Arg],
        fin: Option<Val<'a>>,
    ) -> R<Val<'a>> {
        let Arg::Chain(_, node, ids) = chain else {
            return Err(self.err("internal error: not a chain"));
        };
        if matches!(node.as_ref(), Arg::Nil(_)) {
            return Err(self.err(format!("indirection through explicit nil in {chain}")));
        }
        let receiver = self.eval_arg(dot, node)?;
        self.eval_field_chain(
            Dot {
                v: receiver,
                iface: false,
            },
            ids,
            args,
            fin,
        )
    }

    pub(super) fn eval_variable(
        &mut self,
        name: &str,
        ids: &[String],
        args: &[Arg],
        fin: Option<Val<'a>>,
    ) -> R<Val<'a>> {
        let Some(var) = self.vars.iter().rev().find(|v| v.name == name) else {
            return Err(self.err(format!("undefined variable: {name}")));
        };
        let dot = var.dot.clone();
        if ids.is_empty() {
            if args.len() > 1 || fin.is_some() {
                return Err(self.err(format!("can't give argument to non-function {}", args[0])));
            }
            return Ok(dot.v);
        }
        self.eval_field_chain(dot, ids, args, fin)
    }

    pub(super) fn eval_field_chain(
        &mut self,
        mut receiver: Dot<'a>,
        ids: &[String],
        args: &[Arg],
        fin: Option<Val<'a>>,
    ) -> R<Val<'a>> {
        let n = ids.len();
        for id in &ids[..n - 1] {
            receiver = Dot {
                v: self.eval_field(&receiver, id, &[], None)?,
                iface: true,
            };
        }
        self.eval_field(&receiver, &ids[n - 1], args, fin)
    }

    fn eval_field(
        &mut self,
        receiver: &Dot<'a>,
        name: &str,
        args: &[Arg],
        fin: Option<Val<'a>>,
    ) -> R<Val<'a>> {
        let typ = if receiver.iface {
            "interface {}"
        } else {
            receiver.v.type_name()
        };
        match &receiver.v {
            Val::Invalid => {
                if self.missing_error {
                    return Err(self.err(format!("nil data; no entry for key {}", quote(name))));
                }
                Ok(Val::Invalid)
            }
            Val::Nil => Err(self.err(format!("nil pointer evaluating {typ}.{name}"))),
            Val::Map(m) => {
                if args.len() > 1 || fin.is_some() {
                    return Err(self.err(format!("{name} is not a method but has arguments")));
                }
                match m.get(name) {
                    Some(v) => Ok(Val::from_json(v)),
                    None if self.missing_error => {
                        Err(self.err(format!("map has no entry for key {}", quote(name))))
                    }
                    None => Ok(Val::Invalid),
                }
            }
            _ => Err(self.err(format!("can't evaluate field {name} in type {typ}"))),
        }
    }
}
