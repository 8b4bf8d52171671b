//! The functions a kubectl template can call: Go's builtins (and, or, not, len, index, slice,
//! print, printf, println, html, js, urlquery, call, eq, ne, lt, le, gt, ge) and the two
//! kubectl registers on top
//! (`exists`, `base64decode`), with Go's argument checks and error texts.

use super::encoding::{decode_base64, html, js, query_escape};
use super::exec::{Dot, Exec, R};
use super::fmt::{sprint, sprintf, sprintln};
use super::node::Arg;
use super::value::Val;
use std::borrow::Cow;

pub const NAMES: &[&str] = &[
    "and",
    "or",
    "not",
    "len",
    "index",
    "print",
    "printf",
    "println",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "html",
    "urlquery",
    "js",
    "slice",
    "call",
    "exists",
    "base64decode",
];

/// Calls `name`; `args[0]` is the name itself, `fin` the value piped in.
pub fn call<'a>(
    ex: &mut Exec<'a, '_>,
    dot: &Dot<'a>,
    name: &str,
    args: &[Arg],
    fin: Option<Val<'a>>,
) -> R<Val<'a>> {
    let ctx = args[0].clone();
    let given = args.len() - 1 + usize::from(fin.is_some());
    let (fixed, variadic) = match name {
        "and" | "or" | "index" | "slice" | "call" | "exists" | "eq" => (1, true),
        "print" | "println" | "html" | "urlquery" | "js" => (0, true),
        "printf" => (1, true),
        "not" | "len" | "base64decode" => (1, false),
        _ => (2, false),
    };
    if variadic && given < fixed {
        return Err(ex.err(format!(
            "wrong number of args for {name}: want at least {fixed} got {given}"
        )));
    }
    if !variadic && given != fixed {
        return Err(ex.err(format!(
            "wrong number of args for {name}: want {fixed} got {given}"
        )));
    }
    // `and` and `or` stop at the first argument that decides.
    if name == "and" || name == "or" {
        let mut last = Val::Invalid;
        for a in &args[1..] {
            last = ex.eval_arg(dot, a)?;
            if last.truth() != (name == "and") {
                return Ok(last);
            }
        }
        return Ok(fin.unwrap_or(last));
    }
    let wants_string = name == "printf" || name == "base64decode";
    let mut vals = Vec::with_capacity(given);
    for (i, a) in args[1..].iter().enumerate() {
        let literal = matches!(a, Arg::Num(..) | Arg::Bool(..) | Arg::Char(..));
        if i == 0 && wants_string && literal {
            ex.at(a.pos(), a.to_string());
            return Err(ex.err(format!("expected string; found {a}")));
        }
        let v = ex.eval_arg(dot, a)?;
        if i == 0 && wants_string {
            check_string(ex, &v)?;
        }
        vals.push(v);
    }
    if let Some(v) = fin {
        if vals.is_empty() && wants_string {
            check_string(ex, &v)?;
        }
        vals.push(v);
    }
    // `call` names its function as written (Go's `callee` node).
    let callee = args.get(1).map(ToString::to_string);
    ex.at(ctx.pos(), cmd_string(args));
    // Functions taking `any` see a missing value as nil.
    let any = |v: &Val<'a>| {
        if matches!(v, Val::Invalid) {
            Val::Nil
        } else {
            v.clone()
        }
    };
    let result: Result<Val<'a>, String> = match name {
        "not" => Ok(Val::Bool(!vals[0].truth())),
        "len" => match &vals[0] {
            Val::Str(s) => Ok(Val::Int(s.len() as i64)),
            Val::List(l) => Ok(Val::Int(l.len() as i64)),
            Val::Map(m) => Ok(Val::Int(m.len() as i64)),
            // The literal nil reaches len as Go's zero Value, a JSON null as a nil interface.
            Val::Nil if !matches!(args.get(1), Some(Arg::Nil(_))) => {
                Err("len of nil pointer".into())
            }
            // Go's len asks a missing value for its type, panics, and reports the panic.
            Val::Invalid | Val::Nil => {
                Err("reflect: call of reflect.Value.Type on zero Value".into())
            }
            v => Err(format!("len of type {}", v.type_name())),
        },
        "index" => index(&vals[0], &vals[1..]),
        "slice" => slice(&vals[0], &vals[1..]),
        // Object data holds no functions, so there is nothing `call` can call.
        "call" => match &vals[0] {
            Val::Invalid | Val::Nil => Err("call of nil".into()),
            v => Err(format!(
                "non-function {} of type {}",
                callee.unwrap_or_else(|| sprint(std::slice::from_ref(v))),
                v.type_name()
            )),
        },
        "print" => Ok(owned(sprint(&vals.iter().map(any).collect::<Vec<_>>()))),
        "println" => Ok(owned(sprintln(&vals.iter().map(any).collect::<Vec<_>>()))),
        "printf" => {
            let Val::Str(format) = &vals[0] else {
                unreachable!("checked above")
            };
            let rest: Vec<Val> = vals[1..].iter().map(any).collect();
            Ok(owned(sprintf(format, &rest)))
        }
        "eq" => eq(&vals[0], &vals[1..]).map(Val::Bool),
        "ne" => eq(&vals[0], &vals[1..2]).map(|b| Val::Bool(!b)),
        "lt" => lt(&vals[0], &vals[1]).map(Val::Bool),
        "le" => le(&vals[0], &vals[1]).map(Val::Bool),
        "gt" => le(&vals[0], &vals[1]).map(|b| Val::Bool(!b)),
        "ge" => lt(&vals[0], &vals[1]).map(|b| Val::Bool(!b)),
        "exists" => Ok(Val::Bool(exists(&any(&vals[0]), &vals[1..]))),
        "html" => Ok(owned(html(&printable(&vals, any)))),
        "urlquery" => Ok(owned(query_escape(&printable(&vals, any)))),
        "js" => Ok(owned(js(&printable(&vals, any)))),
        "base64decode" => {
            let Val::Str(s) = &vals[0] else {
                unreachable!("checked above")
            };
            decode_base64(s.as_bytes())
                .map(|b| owned(String::from_utf8_lossy(&b).into_owned()))
                .map_err(|at| {
                    format!("base64 decode failed: illegal base64 data at input byte {at}")
                })
        }
        _ => Err(format!("{name} is not a defined function")),
    };
    result.map_err(|e| ex.err(format!("error calling {name}: {e}")))
}

fn check_string(ex: &Exec, v: &Val) -> R<()> {
    match v {
        Val::Str(_) => Ok(()),
        Val::Invalid => Err(ex.err("invalid value; expected string")),
        Val::Nil => Err(ex.err("wrong type for value; expected string; got interface {}")),
        v => Err(ex.err(format!(
            "wrong type for value; expected string; got {}",
            v.type_name()
        ))),
    }
}

/// Go's `evalArgs` for the escapers: one string as is, else `fmt.Sprint`.
/// A nil argument is Go's invalid `reflect.Value` there, which `printableValue` writes as
/// the string `<no value>`.
fn printable<'a>(vals: &[Val<'a>], any: impl Fn(&Val<'a>) -> Val<'a>) -> String {
    let shown = |v: &Val<'a>| match v {
        Val::Invalid | Val::Nil => Val::Str(Cow::Borrowed("<no value>")),
        v => any(v),
    };
    match vals {
        [Val::Str(s)] => s.to_string(),
        _ => sprint(&vals.iter().map(shown).collect::<Vec<_>>()),
    }
}

fn owned<'a>(s: String) -> Val<'a> {
    Val::Str(Cow::Owned(s))
}

fn cmd_string(args: &[Arg]) -> String {
    args.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

fn index<'a>(item: &Val<'a>, keys: &[Val<'a>]) -> Result<Val<'a>, String> {
    let mut item = item.clone();
    for key in keys {
        item = match &item {
            Val::Invalid | Val::Nil => return Err("index of untyped nil".into()),
            Val::Map(m) => match key {
                Val::Str(k) => m.get(k.as_ref()).map_or(Val::Nil, Val::from_json),
                Val::Invalid | Val::Nil => {
                    return Err("value is nil; should be of type string".into());
                }
                k => {
                    return Err(format!(
                        "value has type {}; should be string",
                        k.type_name()
                    ));
                }
            },
            Val::List(l) => {
                let i = index_arg(key)?;
                match usize::try_from(i).ok().and_then(|i| l.get(i)) {
                    Some(v) => Val::from_json(v),
                    None => return Err(format!("index out of range: {i}")),
                }
            }
            Val::Str(s) => {
                let i = index_arg(key)?;
                match usize::try_from(i).ok().and_then(|i| s.as_bytes().get(i)) {
                    Some(b) => Val::Int(i64::from(*b)),
                    None => return Err(format!("index out of range: {i}")),
                }
            }
            v => return Err(format!("can't index item of type {}", v.type_name())),
        };
    }
    Ok(item)
}

/// Go's `indexArg`: an index must be an integer.
fn index_arg(key: &Val) -> Result<i64, String> {
    match key {
        Val::Int(i) | Val::Int64(i) => Ok(*i),
        Val::Invalid | Val::Nil => Err("cannot index slice/array with nil".into()),
        k => Err(format!(
            "cannot index slice/array with type {}",
            k.type_name()
        )),
    }
}

/// Go's `slice`: `item[i:j]` and `item[i:j:k]` of a string or list.
fn slice<'a>(item: &Val<'a>, indexes: &[Val<'a>]) -> Result<Val<'a>, String> {
    if item.is_nil() {
        return Err("slice of untyped nil".into());
    }
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    // A decoded JSON array's capacity is taken as its length: Go's may be larger (append's
    // growth), letting a slice reach nils past the end that no object holds.
    let len = match item {
        Val::Str(_) if indexes.len() == 3 => return Err("cannot 3-index slice a string".into()),
        Val::Str(s) => s.len(),
        Val::List(l) => l.len(),
        v => return Err(format!("can't slice item of type {}", v.type_name())),
    };
    let mut idx = [0, len, len];
    for (i, index) in indexes.iter().enumerate() {
        let x = index_arg(index)?;
        match usize::try_from(x) {
            Ok(x) if x <= len => idx[i] = x,
            _ => return Err(format!("index out of range: {x}")),
        }
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    Ok(match item {
        // Go slices bytes; a cut inside a character leaves bytes no string here can hold.
        Val::Str(s) => owned(String::from_utf8_lossy(&s.as_bytes()[idx[0]..idx[1]]).into_owned()),
        Val::List(l) => Val::List(&l[idx[0]..idx[1]]),
        _ => unreachable!("checked above"),
    })
}

/// Go's `basicKind` classes for comparisons.
fn kind(v: &Val) -> Option<u8> {
    match v {
        Val::Bool(_) => Some(0),
        Val::Int(_) | Val::Int64(_) => Some(1),
        Val::Float(_) => Some(2),
        Val::Str(_) => Some(3),
        _ => None,
    }
}

fn eq(a: &Val, others: &[Val]) -> Result<bool, String> {
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    for b in others {
        let truth = match (kind(a), kind(b)) {
            (ka, kb) if ka != kb => {
                if !a.is_nil() && !b.is_nil() {
                    return Err("incompatible types for comparison".into());
                }
                false
            }
            // Lists and maps: equal only if both nil, and Go cannot compare two of them.
            (None, None) if a.is_nil() || b.is_nil() => a.is_nil() && b.is_nil(),
            (None, None) if a.type_name() == b.type_name() => {
                let shown = sprint(std::slice::from_ref(b));
                return Err(format!("non-comparable type {shown}: {}", b.type_name()));
            }
            (None, None) => {
                let (x, y) = (
                    sprint(std::slice::from_ref(a)),
                    sprint(std::slice::from_ref(b)),
                );
                let (tx, ty) = (a.type_name(), b.type_name());
                return Err(format!("non-comparable types {x}: {tx}, {ty}: {y}"));
            }
            _ => match (a, b) {
                (Val::Bool(x), Val::Bool(y)) => x == y,
                (Val::Float(x), Val::Float(y)) => x == y,
                (Val::Str(x), Val::Str(y)) => x == y,
                _ => a.as_int() == b.as_int(),
            },
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn lt(a: &Val, b: &Val) -> Result<bool, String> {
    let (Some(ka), Some(kb)) = (kind(a), kind(b)) else {
        return Err("invalid type for comparison".into());
    };
    if ka != kb {
        return Err("incompatible types for comparison".into());
    }
    match (a, b) {
        (Val::Bool(_), _) => Err("invalid type for comparison".into()),
        (Val::Float(x), Val::Float(y)) => Ok(x < y),
        (Val::Str(x), Val::Str(y)) => Ok(x < y),
        _ => Ok(a.as_int() < b.as_int()),
    }
}

fn le(a: &Val, b: &Val) -> Result<bool, String> {
    Ok(lt(a, b)? || eq(a, std::slice::from_ref(b))?)
}

/// kubectl's `exists`: whether the chain of keys and indexes leads to a non-nil value.
fn exists(item: &Val, indices: &[Val]) -> bool {
    let mut v = item.clone();
    for i in indices {
        v = match &v {
            Val::List(l) => match i.as_int().and_then(|i| usize::try_from(i).ok()) {
                Some(i) if i < l.len() => Val::from_json(&l[i]),
                _ => return false,
            },
            Val::Str(s) => match i.as_int().and_then(|i| usize::try_from(i).ok()) {
                Some(i) if i < s.len() => Val::Int(i64::from(s.as_bytes()[i])),
                _ => return false,
            },
            Val::Map(m) => match i {
                Val::Str(k) => m.get(k.as_ref()).map_or(Val::Nil, Val::from_json),
                Val::Nil => Val::Nil,
                _ => return false,
            },
            _ => return false,
        };
    }
    !v.is_nil()
}
