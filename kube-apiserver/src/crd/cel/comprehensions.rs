//! cel-go's two-variable comprehensions, which Kubernetes' environment offers:
//! `all(i, v, p)`, `exists(i, v, p)`, `existsOne(i, v, p)`, `transformList(i, v, [f,] e)` and
//! `transformMap(k, v, [f,] e)`, where `i`/`k` is the index or key and `v` the value.
//!
//! The `cel` crate runs one-variable comprehensions only, so each call is rewritten to one
//! over `@pairs(range)` (the `[index or key, value]` pairs), binding both names per pair.

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::DYN_TYPE;
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper};
use cel::{DeclarationError, Env, ExecutionError, ParseError, Value};
use std::collections::HashMap;
use std::sync::Arc;

const RESULT: &str = "@result";
const PAIR: &str = "@pair";

/// What one comprehension does with each pair and at the end.
#[derive(Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
}

/// Declares the macros and their helper functions on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let macros: &[(&str, usize, Kind)] = &[
        ("all", 3, Kind::All),
        ("exists", 3, Kind::Exists),
        ("existsOne", 3, Kind::ExistsOne),
        ("exists_one", 3, Kind::ExistsOne),
        ("transformList", 3, Kind::TransformList),
        ("transformList", 4, Kind::TransformList),
        ("transformMap", 3, Kind::TransformMap),
        ("transformMap", 4, Kind::TransformMap),
    ];
    for (name, arity, kind) in macros {
        let kind = *kind;
        env.add_macro(Macro::receiver(
            *name,
            *arity,
            move |helper, target, args| expand(kind, helper, target, args),
        ))?;
    }
    env.add_overload("@pairs", "two_var_pairs", vec![DYN_TYPE], pairs)?;
    env.add_overload(
        "@pairs_to_map",
        "two_var_pairs_to_map",
        vec![DYN_TYPE],
        to_map,
    )?;
    Ok(())
}

fn expand(
    kind: Kind,
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let name = |e: &IdedExpr| match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        _ => None,
    };
    let (Some(first), Some(second)) = (name(&args[0]), name(&args[1])) else {
        let at = if name(&args[0]).is_none() {
            args[0].id
        } else {
            args[1].id
        };
        return Err(helper.new_error(at, "argument must be a simple name"));
    };
    let Some(range) = target.take() else {
        return Ok(None);
    };
    let mut rest: Vec<IdedExpr> = args.drain(2..).collect();
    let body = rest.pop().expect("a body");
    let filter = rest.pop();

    let call = |helper: &mut MacroExprHelper<'_>, f: &str, args: Vec<IdedExpr>| {
        helper.next_expr(Expr::Call(CallExpr {
            func_name: f.to_string(),
            target: None,
            args,
        }))
    };
    let ident = |helper: &mut MacroExprHelper<'_>, n: &str| helper.next_expr(Expr::Ident(n.into()));
    let int = |helper: &mut MacroExprHelper<'_>, i: i64| {
        helper.next_expr(Expr::Literal(LiteralValue::Int(i.into())))
    };
    let list = |helper: &mut MacroExprHelper<'_>, items: Vec<IdedExpr>| {
        helper.next_expr(Expr::List(ListExpr::new(items)))
    };

    // What each pair contributes, computed with both names bound.
    let per_pair = match kind {
        Kind::All | Kind::Exists => body,
        Kind::ExistsOne => {
            let (one, zero) = (int(helper, 1), int(helper, 0));
            call(helper, "_?_:_", vec![body, one, zero])
        }
        Kind::TransformList | Kind::TransformMap => {
            let item = match kind {
                Kind::TransformMap => {
                    let key = ident(helper, &first);
                    list(helper, vec![key, body])
                }
                _ => body,
            };
            let one = list(helper, vec![item]);
            match filter {
                Some(f) => {
                    let none = list(helper, Vec::new());
                    call(helper, "_?_:_", vec![f, one, none])
                }
                None => one,
            }
        }
    };
    let bound = bind_pair(helper, &first, &second, per_pair);
    let accu = ident(helper, RESULT);
    let step = match kind {
        Kind::All => call(helper, "_&&_", vec![accu, bound]),
        Kind::Exists => call(helper, "_||_", vec![accu, bound]),
        _ => call(helper, "_+_", vec![accu, bound]),
    };
    let init = match kind {
        Kind::All => helper.next_expr(Expr::Literal(LiteralValue::Boolean(true.into()))),
        Kind::Exists => helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        Kind::ExistsOne => int(helper, 0),
        Kind::TransformList | Kind::TransformMap => list(helper, Vec::new()),
    };
    let cond = match kind {
        Kind::All => {
            let a = ident(helper, RESULT);
            call(helper, "@not_strictly_false", vec![a])
        }
        Kind::Exists => {
            let a = ident(helper, RESULT);
            let not = call(helper, "!_", vec![a]);
            call(helper, "@not_strictly_false", vec![not])
        }
        _ => helper.next_expr(Expr::Literal(LiteralValue::Boolean(true.into()))),
    };
    let result = match kind {
        Kind::ExistsOne => {
            let (a, one) = (ident(helper, RESULT), int(helper, 1));
            call(helper, "_==_", vec![a, one])
        }
        Kind::TransformMap => {
            let a = ident(helper, RESULT);
            call(helper, "@pairs_to_map", vec![a])
        }
        _ => ident(helper, RESULT),
    };
    let iter_range = call(helper, "@pairs", vec![range]);
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
        ComprehensionExpr {
            iter_range,
            iter_var: PAIR.to_string(),
            iter_var2: None,
            accu_var: RESULT.to_string(),
            accu_init: init,
            loop_cond: cond,
            loop_step: step,
            result,
        },
    )))))
}

/// `expr` with `first` bound to `@pair[0]` and `second` to `@pair[1]` (as cel.bind does).
fn bind_pair(
    helper: &mut MacroExprHelper<'_>,
    first: &str,
    second: &str,
    expr: IdedExpr,
) -> IdedExpr {
    let inner = bind(helper, second, 1, expr);
    bind(helper, first, 0, inner)
}

fn bind(helper: &mut MacroExprHelper<'_>, name: &str, index: i64, expr: IdedExpr) -> IdedExpr {
    let pair = helper.next_expr(Expr::Ident(PAIR.into()));
    let at = helper.next_expr(Expr::Literal(LiteralValue::Int(index.into())));
    let init = helper.next_expr(Expr::Call(CallExpr {
        func_name: "_[_]".into(),
        target: None,
        args: vec![pair, at],
    }));
    let comprehension = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: name.to_string(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(name.to_string())),
        result: expr,
    };
    helper.next_expr(Expr::Comprehension(Box::new(comprehension)))
}

type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn arg(args: &[CowVal<'_, '_>]) -> Result<Value, ExecutionError> {
    match args {
        [a] => Value::try_from(a.as_ref()),
        _ => Err(ExecutionError::invalid_argument_count(1, args.len())),
    }
}

fn ret<'b, 'v>(v: Value) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(v)?))
}

/// The `[index, item]` pairs of a list, or the `[key, value]` pairs of a map.
fn pairs<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Ret<'b, 'v> {
    let pair = |a: Value, b: Value| Value::List(Arc::new(vec![a, b]));
    let out: Vec<Value> = match arg(&args)? {
        Value::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| pair(Value::Int(i as i64), v.clone()))
            .collect(),
        Value::Map(m) => m
            .map
            .iter()
            .map(|(k, v)| pair(Value::from(k), v.clone()))
            .collect(),
        other => {
            return Err(ExecutionError::function_error(
                "comprehension",
                format!("expected a list or a map, got {}", other.type_of()),
            ));
        }
    };
    ret(Value::List(Arc::new(out)))
}

/// The map of `[key, value]` pairs (a later pair wins).
fn to_map<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Ret<'b, 'v> {
    let Value::List(items) = arg(&args)? else {
        return Err(ExecutionError::function_error(
            "transformMap",
            "expected pairs",
        ));
    };
    let mut out: HashMap<Key, Value> = HashMap::with_capacity(items.len());
    for item in items.iter() {
        let Value::List(pair) = item else { continue };
        if let [k, v] = pair.as_slice() {
            let key: Key = k
                .clone()
                .try_into()
                .map_err(|_| ExecutionError::function_error("transformMap", "bad key"))?;
            out.insert(key, v.clone());
        }
    }
    ret(Value::Map(Map { map: Arc::new(out) }))
}

#[cfg(test)]
mod tests {
    use super::super::library::env;
    use cel::{Context, Value};

    fn eval(src: &str) -> Result<Value, cel::ExecutionError> {
        let env = env();
        let program = env.compile(src).expect(src);
        program.execute(&Context::with_env(env))
    }

    #[test]
    fn two_variable_comprehensions() {
        let truths = [
            "[1, 2, 3].all(i, v, v == i + 1)",
            "!['a', 'b'].all(i, v, v == 'a')",
            "{'a': 1, 'b': 2}.all(k, v, k.size() == 1 && v > 0)",
            "{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)",
            "![1, 2].exists(i, v, v > 5)",
            "[1, 2, 3].existsOne(i, v, v == 2) && ![1, 2, 2].exists_one(i, v, v == 2)",
            "[10, 20].transformList(i, v, i + v) == [10, 21]",
            "[10, 20, 30].transformList(i, v, i != 1, v * 2) == [20, 60]",
            "{'a': 1, 'b': 2}.transformMap(k, v, v * 10) == {'a': 10, 'b': 20}",
            "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, k + '!') == {'b': 'b!'}",
            // The one-variable forms are untouched.
            "[1, 2].all(v, v > 0) && [1, 2].exists(v, v == 2)",
        ];
        for src in truths {
            assert_eq!(eval(src), Ok(Value::Bool(true)), "{src}");
        }
        assert!(env().compile("[1].all(1, v, true)").is_err());
    }
}
