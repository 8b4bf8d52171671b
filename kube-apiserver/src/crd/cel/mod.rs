//! `x-kubernetes-validations`: the CEL rules of a custom resource's schema, compiled when the
//! CRD is written and evaluated on every create and update of its objects, as upstream's
//! apiextensions-apiserver does.
//!
//! - Rules sit at any schema node; `self` is the value there (the whole object at the root,
//!   which shows `apiVersion`, `kind` and `metadata.name/generateName` only).
//! - A rule reading `oldSelf` is a transition rule: it runs on update where the old value
//!   exists at the same place (objects by property and map key, `map` lists by their keys),
//!   and also on create with `optionalOldSelf`, where `oldSelf` is an optional.
//! - A failure unchanged from the old object is dropped (upstream's ratcheting), unless the
//!   rule is a transition rule.
//! - Work is bounded: see `cost.rs`.
//!
//! - `set` and `map` lists compare regardless of order and merge on `+` (`unordered.rs`).
//!
//! Not done (upstream does): no cost estimate refuses a rule when the CRD is written (only
//! the run-time bound); the `semver` and authorizer libraries; ratcheted failures are
//! dropped, not returned as warnings.

mod check;
mod comprehensions;
mod cost;
mod escape;
mod field_path;
mod format;
mod library;
mod net;
mod node;
mod quantity;
mod rule;
mod unordered;
mod value;

use api_types::validation::{BadValue, ErrorList, ErrorType, FieldError, FieldPath};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::objects::OptionalValue;
use cel::{Context, ExecutionError, Value as CelValue};
use node::Node;
use rule::{CompiledRule, Site};
use serde_json::Value;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// The compiled rules of one schema (a version of a CRD).
#[derive(Debug)]
pub struct CelValidator {
    root: Node,
}

impl CelValidator {
    /// Compiles every rule in `schema` (a version's `openAPIV3Schema`, found at `path` in the
    /// CRD, for error paths); `None` when it has none.
    pub fn compile(schema: &Value, path: &FieldPath) -> Result<Option<Self>, ErrorList> {
        let mut root = Node::shape(schema);
        let mut errs = ErrorList::new();
        attach_rules(&mut root, schema, path, true, None, &mut errs);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(root.has_rules.then_some(CelValidator { root }))
    }

    /// Evaluates the rules on `new` (and `old` for transition rules).
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> ErrorList {
        let mut run = Run {
            errs: ErrorList::new(),
            budget: cost::OBJECT_BUDGET,
            stopped: false,
        };
        let unchanged = old.is_some_and(|o| o == new);
        run.walk(&self.root, new, old, &FieldPath::root(), true, unchanged);
        run.errs
    }
}

/// Compiles the rules of `node` and of every node under it (`schema` is its JSON, `path`
/// where it sits in the CRD).
fn attach_rules(
    node: &mut Node,
    schema: &Value,
    path: &FieldPath,
    resource: bool,
    uncorrelatable: Option<&FieldPath>,
    errs: &mut ErrorList,
) {
    let site = Site {
        node,
        path,
        resource,
        uncorrelatable,
    };
    let rules = rule::compile_rules(schema, &site, errs);
    node.rules.extend(rules);
    let mut has_rules = node.has_rules || !node.rules.is_empty();
    let correlates_items = node.correlates_items();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop_schema) in props {
            if let Some(child) = node.properties.get_mut(name) {
                let at = path.child("properties").key(name.as_str());
                let embedded = child.embedded;
                attach_rules(child, prop_schema, &at, embedded, uncorrelatable, errs);
                has_rules |= child.has_rules;
            }
        }
    }
    if let (Some(items), Some(items_schema)) = (node.items.as_deref_mut(), schema.get("items")) {
        let at = path.child("items");
        // Items of lists other than `map` lists cannot be paired with old items.
        let within = match uncorrelatable {
            Some(p) => Some(p.clone()),
            None if !correlates_items => Some(path.clone()),
            None => None,
        };
        let embedded = items.embedded;
        attach_rules(items, items_schema, &at, embedded, within.as_ref(), errs);
        has_rules |= items.has_rules;
    }
    if let (Some(values), Some(values_schema)) = (
        node.additional.as_deref_mut(),
        schema.get("additionalProperties"),
    ) {
        let at = path.child("additionalProperties");
        let embedded = values.embedded;
        attach_rules(values, values_schema, &at, embedded, uncorrelatable, errs);
        has_rules |= values.has_rules;
    }
    node.has_rules = has_rules;
    // Rules inside allOf apply to the same value, and their properties' rules to the same
    // children (those on the schema's structural spine).
    if let Some(all_of) = schema.get("allOf").and_then(Value::as_array) {
        for (i, entry) in all_of.iter().enumerate() {
            let at = path.child("allOf").index(i);
            attach_rules(node, entry, &at, resource, uncorrelatable, errs);
        }
    }
}

/// One validation of one object.
struct Run {
    errs: ErrorList,
    budget: u64,
    /// The budget ran out: no further rule runs.
    stopped: bool,
}

/// What a rule's evaluation gave.
enum Outcome {
    Pass,
    Fail,
    Error(String),
}

impl Run {
    /// Validates `new` at `node` (found at `path`); `old` is the paired old value, and
    /// `unchanged` whether the nearest pairable value is the same as before (ratcheting).
    fn walk(
        &mut self,
        node: &Node,
        new: &Value,
        old: Option<&Value>,
        path: &FieldPath,
        resource: bool,
        unchanged: bool,
    ) {
        // Null values are not validated, as upstream: rules check presence from the parent.
        if self.stopped || !node.has_rules || new.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        if !node.rules.is_empty() {
            self.run_rules(node, new, old, path, resource, unchanged);
        }
        match new {
            Value::Object(map) => {
                let old_map = old.and_then(Value::as_object);
                for (k, v) in map {
                    let child = match node.additional.as_deref() {
                        Some(values) => Some((values, path.key(k.as_str()))),
                        None => node
                            .properties
                            .get(k)
                            .map(|prop| (prop, path.child(k.as_str()))),
                    };
                    let Some((child, at)) = child else { continue };
                    let old_v = old_map.and_then(|m| m.get(k));
                    let still = old_v.map_or(unchanged, |o| o == v);
                    self.walk(child, v, old_v, &at, child.embedded, still);
                }
            }
            Value::Array(items) => {
                let Some(item_node) = node.items.as_deref() else {
                    return;
                };
                let keys = &node.list_map_keys;
                // Old items by their key values, for pairing (map lists only).
                let old_by_key: HashMap<String, &Value> = match old.and_then(Value::as_array) {
                    Some(olds) if node.correlates_items() && !keys.is_empty() => {
                        olds.iter().map(|o| (key_of(o, keys), o)).collect()
                    }
                    _ => HashMap::new(),
                };
                for (i, item) in items.iter().enumerate() {
                    let old_item = if old_by_key.is_empty() {
                        None
                    } else {
                        old_by_key.get(&key_of(item, keys)).copied()
                    };
                    let still = old_item.map_or(unchanged, |o| o == item);
                    let at = path.index(i);
                    self.walk(item_node, item, old_item, &at, item_node.embedded, still);
                }
            }
            _ => {}
        }
    }

    fn run_rules(
        &mut self,
        node: &Node,
        new: &Value,
        old: Option<&Value>,
        path: &FieldPath,
        resource: bool,
        unchanged: bool,
    ) {
        let bad_value = || BadValue::Str(node.type_name().to_string());
        let Some(values) = NodeValues::new(node, new, old, resource) else {
            self.errs.push(FieldError::internal(
                path,
                "rule inputs could not be converted",
            ));
            return;
        };
        let size = cost::DataSize::of(new, old);
        for rule in &node.rules {
            if rule.uses_old_self() && old.is_none() && !rule.optional_old_self() {
                continue;
            }
            if !self.charge(rule, cost::price(&rule.facts, size), path, &bad_value) {
                return;
            }
            let vars = values.for_rule(rule);
            match evaluate(rule.expression(), &vars) {
                Outcome::Pass => continue,
                Outcome::Error(e) => {
                    let detail = if e.starts_with("no such overload") {
                        format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.raw.error_string()
                        )
                    } else {
                        format!("{e} evaluating rule: {}", rule.raw.error_string())
                    };
                    self.errs
                        .push(FieldError::invalid(path, bad_value(), detail));
                    continue;
                }
                Outcome::Fail => {}
            }
            // A failure on a value the update left as it was is not the update's fault.
            if !rule.uses_old_self() && unchanged {
                continue;
            }
            let at = field_path::relocate(path, &rule.field_path);
            let detail = self
                .message(rule, &vars, size)
                .unwrap_or_else(|| rule.default_message());
            if self.stopped {
                return;
            }
            self.errs
                .push(failure(rule.reason, &at, bad_value(), detail));
        }
    }

    /// Takes `price` from the budget; reports and stops when it cannot.
    fn charge(
        &mut self,
        rule: &CompiledRule,
        price: u64,
        path: &FieldPath,
        bad_value: &dyn Fn() -> BadValue,
    ) -> bool {
        let detail = if price > cost::PER_CALL_LIMIT {
            format!(
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                rule.raw.error_string()
            )
        } else if price > self.budget {
            "validation failed due to running out of cost budget, no further validation rules will be run".to_string()
        } else {
            self.budget -= price;
            return true;
        };
        self.errs
            .push(FieldError::invalid(path, bad_value(), detail));
        self.stopped = true;
        false
    }

    /// The messageExpression's result, when it gives a usable message.
    fn message(
        &mut self,
        rule: &CompiledRule,
        vars: &Vars<'_>,
        size: cost::DataSize,
    ) -> Option<String> {
        let (program, facts) = rule.message_program.as_ref()?;
        let price = cost::price(facts, size);
        if price > self.budget {
            // Upstream stops everything when the message runs out of budget.
            self.stopped = true;
            return None;
        }
        self.budget -= price;
        let ctx = vars.context();
        let result = catch_unwind(AssertUnwindSafe(|| program.execute(&ctx))).ok()?;
        match result {
            Ok(CelValue::String(s)) => {
                let s = s.trim();
                // Upstream falls back to the static message for these.
                let usable = !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024;
                usable.then(|| s.to_string())
            }
            _ => None,
        }
    }
}

/// The CEL values of one node's `self` and `oldSelf`, converted once for all its rules.
struct NodeValues {
    self_val: Box<dyn Val>,
    old: Option<Box<dyn Val>>,
    /// `oldSelf` as an optional, for rules with `optionalOldSelf`.
    optional_old: Option<Box<dyn Val>>,
}

impl NodeValues {
    fn new(node: &Node, new: &Value, old: Option<&Value>, resource: bool) -> Option<Self> {
        let old_val = old.map(|o| value::to_cel(o, Some(node), resource));
        let optional_old = if node.rules.iter().any(CompiledRule::optional_old_self) {
            let optional = match &old_val {
                Some(o) => OptionalValue::of(o.clone()),
                None => OptionalValue::none(),
            };
            Some(Box::<dyn Val>::try_from(CelValue::Opaque(Arc::new(optional))).ok()?)
        } else {
            None
        };
        Some(NodeValues {
            self_val: Box::<dyn Val>::try_from(value::to_cel(new, Some(node), resource)).ok()?,
            old: match old_val {
                Some(o) => Some(Box::<dyn Val>::try_from(o).ok()?),
                None => None,
            },
            optional_old,
        })
    }

    fn for_rule(&self, rule: &CompiledRule) -> Vars<'_> {
        let old_self = if rule.optional_old_self() {
            self.optional_old.as_deref()
        } else {
            self.old.as_deref()
        };
        Vars {
            self_val: &*self.self_val,
            old_self,
        }
    }
}

/// The variables one rule sees, lent to the interpreter without copies.
struct Vars<'a> {
    self_val: &'a dyn Val,
    old_self: Option<&'a dyn Val>,
}

impl VariableResolver for Vars<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        match variable {
            "self" => Some(CowVal::Borrowed(self.self_val)),
            "oldSelf" => self.old_self.map(CowVal::Borrowed),
            _ => None,
        }
    }
}

impl Vars<'_> {
    fn context(&self) -> Context<'_, '_> {
        let mut ctx = Context::with_env(library::env());
        ctx.set_variable_resolver(self);
        ctx
    }
}

fn evaluate(expr: &cel::IdedExpr, vars: &Vars<'_>) -> Outcome {
    let ctx = vars.context();
    // The interpreter is not ours: a panic in it fails the rule, never the request.
    match catch_unwind(AssertUnwindSafe(|| CelValue::resolve(expr, &ctx))) {
        Ok(Ok(CelValue::Bool(true))) => Outcome::Pass,
        Ok(Ok(CelValue::Bool(false))) => Outcome::Fail,
        Ok(Ok(other)) => Outcome::Error(format!(
            "no such overload: rule evaluated to {} instead of bool",
            other.type_of()
        )),
        Ok(Err(e)) => Outcome::Error(describe(&e)),
        Err(_) => Outcome::Error("internal error".to_string()),
    }
}

/// An evaluation error in cel-go's words where they differ from the crate's.
fn describe(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnsupportedBinaryOperator(..) => "no such overload".to_string(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", plain(i)),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::UndeclaredReference(name) => format!("no such attribute: {name}"),
        other => other.to_string(),
    }
}

fn plain(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

/// The field error a failed rule gives, by its `reason`.
fn failure(reason: ErrorType, at: &FieldPath, bad_value: BadValue, detail: String) -> FieldError {
    match reason {
        ErrorType::Forbidden => FieldError::forbidden(at, detail),
        ErrorType::Required => FieldError::required(at, detail),
        ErrorType::Duplicate => FieldError::duplicate(at, bad_value),
        _ => FieldError::invalid(at, bad_value, detail),
    }
}

/// The values of an item's key fields, as one comparable text.
fn key_of(item: &Value, keys: &[String]) -> String {
    let values: Vec<Option<&Value>> = keys.iter().map(|k| item.get(k)).collect();
    serde_json::to_string(&values).unwrap_or_default()
}

#[cfg(test)]
mod tests;
