//! Kubernetes' CEL quantity library: `quantity('1Gi')`, `isQuantity(s)` and the methods
//! `sign`, `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub`, `isGreaterThan`,
//! `isLessThan`, `compareTo`, with exact arithmetic (the admission plugins' `Quantity`).
//!
//! A quantity is carried as a map holding its amount in nano-units under a key no rule can
//! write, so `==` compares amounts (`quantity('1') == quantity('1000m')`), as upstream.

use crate::admission::plugins::quantity::Quantity;
use cel::common::types::{DYN_TYPE, MAP_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

const KEY: &str = "@quantity";

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Declares the library's functions on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    let methods: &[(&str, usize, Method)] = &[
        ("sign", 0, sign),
        ("isInteger", 0, is_integer),
        ("asInteger", 0, as_integer),
        ("asApproximateFloat", 0, as_float),
        ("add", 1, add),
        ("sub", 1, sub),
        ("isGreaterThan", 1, greater),
        ("isLessThan", 1, less),
        ("compareTo", 1, compare_to),
    ];
    for (name, arity, method) in methods {
        let args = (0..*arity).map(|_| DYN_TYPE).collect();
        env.add_member_overload(name, &format!("quantity_{name}"), MAP_TYPE, args, *method)?;
    }
    Ok(())
}

type Method = for<'b, 'v> fn(Args<'b, 'v>) -> Ret<'b, 'v>;

fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Value>, ExecutionError> {
    args.iter().map(|a| Value::try_from(a.as_ref())).collect()
}

fn ret<'b, 'v>(v: Value) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(v)?))
}

fn to_value(q: Quantity) -> Value {
    let mut m = HashMap::new();
    m.insert(
        Key::String(Arc::new(KEY.to_string())),
        Value::String(Arc::new(normalized(&q))),
    );
    Value::Map(Map { map: Arc::new(m) })
}

/// The canonical text of `q` in the decimal format: one text per amount, whatever suffix
/// it was written with (`1Gi` and `1073741824` give the same).
fn normalized(q: &Quantity) -> String {
    // Sums keep the format of a nonzero left operand: route the amount through one.
    let one = Quantity::from_int(1);
    one.add(q).sub(&one).canonical()
}

fn from_value(v: &Value, function: &str) -> Result<Quantity, ExecutionError> {
    let not_quantity = || ExecutionError::function_error(function, "expected a quantity");
    let Value::Map(m) = v else {
        return Err(not_quantity());
    };
    match m.map.get(&Key::String(Arc::new(KEY.to_string()))) {
        Some(Value::String(text)) => Quantity::parse(text).ok_or_else(not_quantity),
        _ => Err(not_quantity()),
    }
}

fn operand(v: &Value, function: &str) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Int(i) => Ok(Quantity::from_int(*i)),
        other => from_value(other, function),
    }
}

fn quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let vals = values(&args)?;
    let Some(Value::String(s)) = vals.first() else {
        return Err(ExecutionError::function_error(
            "quantity",
            "expected a string",
        ));
    };
    let q = Quantity::parse(s).ok_or_else(|| {
        ExecutionError::function_error(
            "quantity",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        )
    })?;
    ret(to_value(q))
}

fn is_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let vals = values(&args)?;
    let ok = matches!(vals.first(), Some(Value::String(s)) if Quantity::parse(s).is_some());
    ret(Value::Bool(ok))
}

fn this(args: &[CowVal<'_, '_>], function: &str) -> Result<(Quantity, Vec<Value>), ExecutionError> {
    let vals = values(args)?;
    let first = vals
        .first()
        .ok_or_else(|| ExecutionError::function_error(function, "missing receiver"))?;
    Ok((from_value(first, function)?, vals))
}

fn sign<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (q, _) = this(&args, "sign")?;
    let s = if q.is_zero() {
        0
    } else if q.is_negative() {
        -1
    } else {
        1
    };
    ret(Value::Int(s))
}

fn integer(q: &Quantity) -> Option<i64> {
    let milli = q.milli_value();
    if milli % 1000 != 0 {
        return None;
    }
    // milli_value rounds up: equal to the integer only when nothing finer was there.
    let i = i64::try_from(milli / 1000).ok()?;
    (Quantity::from_int(i) == *q).then_some(i)
}

fn is_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (q, _) = this(&args, "isInteger")?;
    ret(Value::Bool(integer(&q).is_some()))
}

fn as_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (q, _) = this(&args, "asInteger")?;
    let i = integer(&q).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })?;
    ret(Value::Int(i))
}

fn as_float<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (q, _) = this(&args, "asApproximateFloat")?;
    let approx = api_types::validation::parse_quantity(&q.canonical()).unwrap_or_default();
    ret(Value::Float(approx))
}

fn arithmetic<'b, 'v>(args: Args<'b, 'v>, name: &str, subtract: bool) -> Ret<'b, 'v> {
    let (q, vals) = this(&args, name)?;
    let other = operand(vals.get(1).unwrap_or(&Value::Null), name)?;
    ret(to_value(if subtract {
        q.sub(&other)
    } else {
        q.add(&other)
    }))
}

fn add<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    arithmetic(args, "add", false)
}

fn sub<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    arithmetic(args, "sub", true)
}

fn ordering(args: &[CowVal<'_, '_>], name: &str) -> Result<Ordering, ExecutionError> {
    let (q, vals) = this(args, name)?;
    let other = from_value(vals.get(1).unwrap_or(&Value::Null), name)?;
    Ok(q.cmp(&other))
}

fn greater<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ret(Value::Bool(
        ordering(&args, "isGreaterThan")? == Ordering::Greater,
    ))
}

fn less<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ret(Value::Bool(
        ordering(&args, "isLessThan")? == Ordering::Less,
    ))
}

fn compare_to<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let o = ordering(&args, "compareTo")?;
    ret(Value::Int(o as i64))
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
    fn quantities_compare_and_compute_exactly() {
        let truths = [
            "quantity('1Gi') == quantity('1073741824')",
            "quantity('1') == quantity('1000m')",
            "quantity('500m').isLessThan(quantity('1'))",
            "quantity('2Gi').isGreaterThan(quantity('2G'))",
            "quantity('1Gi').compareTo(quantity('1Gi')) == 0",
            "quantity('1').compareTo(quantity('2')) == -1",
            "quantity('1.5').add(quantity('500m')) == quantity('2')",
            "quantity('2').sub(1) == quantity('1')",
            "quantity('2').add(1).asInteger() == 3",
            "quantity('1k').isInteger()",
            "!quantity('1500m').isInteger()",
            "quantity('-3').sign() == -1 && quantity('0').sign() == 0",
            "quantity('1500m').asApproximateFloat() == 1.5",
            "isQuantity('10Mi') && !isQuantity('ten')",
        ];
        for src in truths {
            assert_eq!(eval(src), Ok(Value::Bool(true)), "{src}");
        }
        assert!(eval("quantity('x')").is_err());
        assert!(eval("quantity('1500m').asInteger()").is_err());
    }
}
