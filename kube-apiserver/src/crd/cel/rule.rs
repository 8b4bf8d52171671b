//! One `x-kubernetes-validations` entry: its checks when the CRD is written (upstream's
//! messages and paths) and its compiled form.

use super::check::{self, Facts, Known};
use super::field_path::{self, Step};
use super::library;
use super::node::Node;
use super::unordered;
use api_types::validation::{BadValue, ErrorList, ErrorType, FieldError, FieldPath, go_quote};
use serde_json::Value;

/// The reasons a rule may give its failures (upstream's `supportedValidationReason`).
const REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// A rule as written in the schema.
#[derive(Debug, Clone, Default)]
pub(super) struct RawRule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

impl RawRule {
    fn from_json(v: &Value) -> RawRule {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        RawRule {
            rule: s("rule"),
            message: s("message"),
            message_expression: s("messageExpression"),
            reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
            field_path: s("fieldPath"),
            optional_old_self: v.get("optionalOldSelf").and_then(Value::as_bool),
        }
    }

    /// The rule as upstream prints it in CRD errors (Go's `%#v` of the internal type).
    fn go_syntax(&self) -> BadValue {
        let reason = match &self.reason {
            None => "(*apiextensions.FieldValueErrorReason)(nil)".to_string(),
            Some(_) => "(*apiextensions.FieldValueErrorReason)(0xc000000000)".to_string(),
        };
        let optional = match self.optional_old_self {
            None => "(*bool)(nil)",
            Some(_) => "(*bool)(0xc000000000)",
        };
        BadValue::Raw(format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
            go_quote(&self.rule),
            go_quote(&self.message),
            go_quote(&self.message_expression),
            go_quote(&self.field_path),
        ))
    }

    /// How failures of this rule name it: its message, else its source.
    pub fn error_string(&self) -> &str {
        let message = self.message.trim();
        if message.is_empty() {
            self.rule.trim()
        } else {
            message
        }
    }
}

/// A rule ready to run.
#[derive(Debug)]
pub(super) struct CompiledRule {
    pub raw: RawRule,
    pub program: cel::Program,
    /// The program's expression rewritten for unordered list equality, when it has any.
    pub rewritten: Option<cel::IdedExpr>,
    pub facts: Facts,
    pub message_program: Option<(cel::Program, Facts)>,
    pub reason: ErrorType,
    /// Where failures are reported, below the node (`fieldPath`).
    pub field_path: Vec<Step>,
}

impl CompiledRule {
    /// What to evaluate.
    pub fn expression(&self) -> &cel::IdedExpr {
        self.rewritten
            .as_ref()
            .unwrap_or_else(|| self.program.expression())
    }

    /// Whether the rule reads `oldSelf` (a transition rule).
    pub fn uses_old_self(&self) -> bool {
        self.facts.uses_old_self
    }

    /// `oldSelf` is an optional, and the rule also runs on create.
    pub fn optional_old_self(&self) -> bool {
        self.raw.optional_old_self == Some(true)
    }

    /// The detail of a failure when no messageExpression gives one.
    pub fn default_message(&self) -> String {
        let message = self.raw.message.trim();
        if message.is_empty() {
            format!("failed rule: {}", self.raw.error_string())
        } else {
            message.to_string()
        }
    }
}

/// Where the schema node being compiled sits.
pub(super) struct Site<'a> {
    pub node: &'a Node,
    /// Its path in the CRD (`spec.versions[0].schema.openAPIV3Schema.properties[spec]`).
    pub path: &'a FieldPath,
    /// `self` is a whole object (the root or an embedded resource).
    pub resource: bool,
    /// The nearest array above whose items old and new values cannot be paired.
    pub uncorrelatable: Option<&'a FieldPath>,
}

/// Compiles the `x-kubernetes-validations` of `schema`, appending CRD errors to `errs`.
pub(super) fn compile_rules(
    schema: &Value,
    site: &Site<'_>,
    errs: &mut ErrorList,
) -> Vec<CompiledRule> {
    let Some(entries) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let raws: Vec<RawRule> = entries.iter().map(RawRule::from_json).collect();
    let base = site.path.child("x-kubernetes-validations");
    let before = errs.len();
    let mut paths = Vec::with_capacity(raws.len());
    for (i, raw) in raws.iter().enumerate() {
        paths.push(check_fields(raw, site.node, &base.index(i), errs));
    }
    // As upstream: rules are compiled only once their node's rules are well formed.
    if errs.len() > before {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(raws.len());
    for ((i, raw), field_path) in raws.into_iter().enumerate().zip(paths) {
        if let Some(compiled) = compile_one(raw, field_path, site, &base.index(i), errs) {
            out.push(compiled);
        }
    }
    out
}

/// Upstream's checks of the rule's fields (not of the expression), in its order; returns the
/// parsed fieldPath.
fn check_fields(raw: &RawRule, node: &Node, at: &FieldPath, errs: &mut ErrorList) -> Vec<Step> {
    let rule = raw.rule.trim();
    let message = raw.message.trim();
    if rule.is_empty() {
        errs.push(FieldError::required(
            &at.child("rule"),
            "rule is not specified",
        ));
    } else if !raw.message.is_empty() && message.is_empty() {
        errs.push(FieldError::invalid(
            &at.child("message"),
            raw.message.as_str(),
            "message must be non-empty if specified",
        ));
    } else if raw.message.len() > 2048 {
        let head: String = raw.message.chars().take(10).collect();
        errs.push(FieldError::invalid(
            &at.child("message"),
            format!("{head}..."),
            "message must have a maximum length of 2048 characters",
        ));
    } else if has_newlines(message) {
        errs.push(FieldError::invalid(
            &at.child("message"),
            raw.message.as_str(),
            "message must not contain line breaks",
        ));
    } else if has_newlines(rule) && message.is_empty() {
        errs.push(FieldError::required(
            &at.child("message"),
            "message must be specified if rule contains line breaks",
        ));
    }
    if !raw.message_expression.is_empty() && raw.message_expression.trim().is_empty() {
        errs.push(FieldError::required(
            &at.child("messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = &raw.reason
        && !REASONS.contains(&reason.as_str())
    {
        errs.push(FieldError::not_supported(
            &at.child("reason"),
            reason.as_str(),
            REASONS,
        ));
    }
    let fp = raw.field_path.trim();
    if !raw.field_path.is_empty() && fp.is_empty() {
        errs.push(FieldError::invalid(
            &at.child("fieldPath"),
            raw.field_path.as_str(),
            "fieldPath must be non-empty if specified",
        ));
    }
    if has_newlines(&raw.field_path) {
        errs.push(FieldError::invalid(
            &at.child("fieldPath"),
            raw.field_path.as_str(),
            "fieldPath must not contain line breaks",
        ));
    }
    if fp.is_empty() {
        return Vec::new();
    }
    match field_path::parse(fp, node) {
        Ok(steps) => steps,
        Err(_) => {
            errs.push(FieldError::invalid(
                &at.child("fieldPath"),
                raw.field_path.as_str(),
                "fieldPath must be a valid path",
            ));
            Vec::new()
        }
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// Parses and checks one expression; the issues are cel-go shaped.
fn compile_expression(
    source: &str,
    site: &Site<'_>,
) -> Result<(cel::Program, Facts, Known), String> {
    let program = library::env()
        .compile(source)
        .map_err(|e| e.to_string().replace("\n| ", "\n | "))?;
    let (facts, known) = check::check(
        program.expression(),
        program.source_info(),
        site.node,
        site.resource,
    )?;
    Ok((program, facts, known))
}

fn compile_one(
    raw: RawRule,
    field_path: Vec<Step>,
    site: &Site<'_>,
    at: &FieldPath,
    errs: &mut ErrorList,
) -> Option<CompiledRule> {
    let rule_path = at.child("rule");
    let (program, facts, known) = match compile_expression(raw.rule.trim(), site) {
        Ok(compiled) => compiled,
        Err(issues) => {
            errs.push(FieldError::invalid(
                &rule_path,
                raw.go_syntax(),
                format!("compilation failed: {issues}"),
            ));
            return None;
        }
    };
    if !matches!(known, Known::Bool | Known::Unknown) {
        errs.push(FieldError::invalid(
            &rule_path,
            raw.go_syntax(),
            "cel expression must evaluate to a bool",
        ));
        return None;
    }
    let mut failed = false;
    if facts.uses_old_self
        && let Some(within) = site.uncorrelatable
    {
        errs.push(FieldError::invalid(
            &rule_path,
            raw.rule.as_str(),
            format!(
                "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
            ),
        ));
        failed = true;
    }
    let mut message_program = None;
    if !raw.message_expression.trim().is_empty() {
        let message_path = at.child("messageExpression");
        match compile_expression(raw.message_expression.trim(), site) {
            Err(issues) => {
                errs.push(FieldError::invalid(
                    &message_path,
                    raw.go_syntax(),
                    format!("messageExpression compilation failed: {issues}"),
                ));
                failed = true;
            }
            Ok((_, _, Known::Bool | Known::Other)) => {
                errs.push(FieldError::invalid(
                    &message_path,
                    raw.go_syntax(),
                    "messageExpression must evaluate to a string",
                ));
                failed = true;
            }
            Ok((p, f, _)) => message_program = Some((p, f)),
        }
    }
    if failed {
        return None;
    }
    let reason = match raw.reason.as_deref() {
        Some("FieldValueForbidden") => ErrorType::Forbidden,
        Some("FieldValueRequired") => ErrorType::Required,
        Some("FieldValueDuplicate") => ErrorType::Duplicate,
        _ => ErrorType::Invalid,
    };
    let rewritten = (!facts.unordered_equalities.is_empty())
        .then(|| unordered::rewrite(program.expression(), &facts.unordered_equalities));
    Some(CompiledRule {
        raw,
        program,
        rewritten,
        facts,
        message_program,
        reason,
        field_path,
    })
}
