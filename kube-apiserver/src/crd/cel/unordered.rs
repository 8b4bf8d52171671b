//! `set` and `map` lists as upstream's list values behave: they compare regardless of order,
//! and `+` merges (a set adds the elements it lacks; a map list replaces the items whose keys
//! it already has and appends the others). The checker marks each `==`, `!=` and `+` whose
//! operand is such a list, and the rule's expression is rewritten to call
//! `@unordered_equals(a, b, keys)` or `@unordered_add(a, b, keys)` there (no keys for sets).

use super::check::Unordered;
use super::escape::escape;
use cel::common::ast::{CallExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::collections::HashMap;

const EQUALS: &str = "@unordered_equals";
const ADD: &str = "@unordered_add";

/// Declares the comparison the rewritten expressions call.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        EQUALS,
        "unordered_equals",
        vec![DYN_TYPE, DYN_TYPE, LIST_TYPE],
        unordered_equals,
    )?;
    env.add_overload(
        ADD,
        "unordered_add",
        vec![DYN_TYPE, DYN_TYPE, LIST_TYPE],
        unordered_add,
    )
}

/// `expr` with the marked equalities (by id) rewritten.
pub(super) fn rewrite(expr: &IdedExpr, marks: &[(u64, Unordered)]) -> IdedExpr {
    let marks: HashMap<u64, &Unordered> = marks.iter().map(|(id, u)| (*id, u)).collect();
    let mut out = expr.clone();
    // Ids for the new nodes, far above the parser's (they are never looked up in the source).
    let mut next_id = u64::MAX / 2;
    visit(&mut out, &marks, &mut next_id);
    out
}

fn fresh(next_id: &mut u64) -> u64 {
    *next_id += 1;
    *next_id
}

fn visit(e: &mut IdedExpr, marks: &HashMap<u64, &Unordered>, next_id: &mut u64) {
    match &mut e.expr {
        Expr::Call(call) => {
            if let Some(target) = call.target.as_deref_mut() {
                visit(target, marks, next_id);
            }
            for arg in &mut call.args {
                visit(arg, marks, next_id);
            }
            let Some(kind) = marks.get(&e.id) else { return };
            let keys = match kind {
                Unordered::Set => Vec::new(),
                Unordered::Map(keys) => keys
                    .iter()
                    .map(|k| IdedExpr {
                        id: fresh(next_id),
                        // Items are objects: their fields go by escaped names.
                        expr: Expr::Literal(LiteralValue::String(
                            escape(k).unwrap_or_else(|| k.clone()).into(),
                        )),
                    })
                    .collect(),
            };
            let negate = call.func_name == "_!=_";
            let function = if call.func_name == "_+_" { ADD } else { EQUALS };
            let mut args = std::mem::take(&mut call.args);
            args.push(IdedExpr {
                id: fresh(next_id),
                expr: Expr::List(ListExpr::new(keys)),
            });
            let equals = Expr::Call(CallExpr {
                func_name: function.to_string(),
                target: None,
                args,
            });
            e.expr = if negate {
                Expr::Call(CallExpr {
                    func_name: "!_".to_string(),
                    target: None,
                    args: vec![IdedExpr {
                        id: fresh(next_id),
                        expr: equals,
                    }],
                })
            } else {
                equals
            };
        }
        Expr::Select(sel) => visit(&mut sel.operand, marks, next_id),
        Expr::List(list) => {
            for el in &mut list.elements {
                visit(el, marks, next_id);
            }
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let cel::common::ast::EntryExpr::MapEntry(me) = &mut entry.expr {
                    visit(&mut me.key, marks, next_id);
                    visit(&mut me.value, marks, next_id);
                }
            }
        }
        Expr::Struct(st) => {
            for entry in &mut st.entries {
                if let cel::common::ast::EntryExpr::StructField(f) = &mut entry.expr {
                    visit(&mut f.value, marks, next_id);
                }
            }
        }
        Expr::Comprehension(c) => {
            for part in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                visit(part, marks, next_id);
            }
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

fn unordered_equals<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let vals: Vec<Value> = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<_, _>>()?;
    let [a, b, keys] = <[Value; 3]>::try_from(vals)
        .map_err(|v| ExecutionError::invalid_argument_count(3, v.len()))?;
    let equal = match (&a, &b, &keys) {
        (Value::List(a), Value::List(b), Value::List(keys)) => {
            a.len() == b.len()
                && if keys.is_empty() {
                    a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
                } else {
                    a.iter().all(|x| {
                        b.iter()
                            .find(|y| keys.iter().all(|k| field(x, k) == field(y, k)))
                            .is_some_and(|y| y == x)
                    })
                }
        }
        // Not both lists (null, a value of another type): plain equality.
        _ => a == b,
    };
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(Value::Bool(equal))?))
}

fn unordered_add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let vals: Vec<Value> = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<_, _>>()?;
    let [a, b, keys] = <[Value; 3]>::try_from(vals)
        .map_err(|v| ExecutionError::invalid_argument_count(3, v.len()))?;
    let sum = match (a, b, &keys) {
        (Value::List(a), Value::List(b), Value::List(keys)) => {
            let mut out: Vec<Value> = a.as_ref().clone();
            for item in b.iter() {
                let same = |x: &Value| {
                    if keys.is_empty() {
                        x == item
                    } else {
                        keys.iter().all(|k| field(x, k) == field(item, k))
                    }
                };
                match out.iter().position(same) {
                    // A set keeps its element; a map list takes the newer item in place.
                    Some(i) if !keys.is_empty() => out[i] = item.clone(),
                    Some(_) => {}
                    None => out.push(item.clone()),
                }
            }
            Value::List(std::sync::Arc::new(out))
        }
        (a, b, _) => (a + b)?,
    };
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(sum)?))
}

fn field<'a>(item: &'a Value, key: &Value) -> Option<&'a Value> {
    let (Value::Map(m), Value::String(k)) = (item, key) else {
        return None;
    };
    m.map.get(&cel::objects::Key::String(k.clone()))
}
