//! `kubectl set selector` (a Service's selector, replaced whole) and `kubectl set
//! serviceaccount` (the pod template's service account). Upstream patches and prints both even
//! when nothing changes.

use super::{Change, CommonArgs, apply_changes, objects};
use crate::app::options::GlobalOptions;
use clap::Args;
use serde_json::{Map, Value};

/// Flags of `kubectl set selector`.
#[derive(Debug, Clone, Args)]
pub struct SelectorArgs {
    /// (-f FILENAME | TYPE NAME) EXPRESSIONS
    pub args: Vec<String>,
    /// If non-empty, the selectors update will only succeed if this is the current
    /// resource-version for the object. Only valid when specifying a single resource.
    #[arg(long, value_name = "string")]
    pub resource_version: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags of `kubectl set serviceaccount`.
#[derive(Debug, Clone, Args)]
pub struct ServiceAccountArgs {
    /// (-f FILENAME | TYPE NAME) SERVICE_ACCOUNT
    pub args: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Parses `k=v,k2==v2` into match labels; set-based expressions are refused as upstream
/// refuses them for Services.
pub fn parse_match_labels(text: &str) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    let mut expressions = Vec::new();
    for part in split_terms(text) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if part.contains("!=") {
            anyhow::bail!("\"!=\" is not a valid label selector operator");
        }
        let equal = part
            .split_once("==")
            .or_else(|| part.split_once('='))
            .filter(|(k, _)| !k.contains('!'));
        match equal {
            Some((k, v)) => {
                out.insert(k.trim().to_owned(), Value::String(v.trim().to_owned()));
            }
            None => expressions.push(requirement(part)),
        }
    }
    if !expressions.is_empty() {
        anyhow::bail!(
            "match expression [{}] not supported on this object",
            expressions.join(" ")
        );
    }
    Ok(out)
}

/// Splits at commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// A set-based term as Go prints a `LabelSelectorRequirement` (`{app In [a b]}`).
fn requirement(term: &str) -> String {
    let values = |rest: &str| {
        rest.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Some((key, rest)) = term.split_once(char::is_whitespace) {
        let rest = rest.trim_start();
        if let Some(v) = rest.strip_prefix("notin") {
            return format!("{{{key} NotIn [{}]}}", values(v));
        }
        if let Some(v) = rest.strip_prefix("in") {
            return format!("{{{key} In [{}]}}", values(v));
        }
    }
    match term.strip_prefix('!') {
        Some(key) => format!("{{{} DoesNotExist []}}", key.trim()),
        None => format!("{{{} Exists []}}", term.trim()),
    }
}

pub async fn run(global: &GlobalOptions, args: &SelectorArgs) -> anyhow::Result<()> {
    let Some((expression, resources)) = args.args.split_last() else {
        anyhow::bail!("one selector is required");
    };
    let labels = parse_match_labels(expression)?;
    let change = Change {
        verb: "selector updated",
        print_unchanged: true,
    };
    apply_changes(global, resources, &args.common, change, |target, object| {
        if target.info.resource.kind != "Service" {
            return Err(anyhow::anyhow!(
                "setting a selector is only supported for Services"
            ));
        }
        if let Some(rv) = &args.resource_version {
            object["metadata"]["resourceVersion"] = Value::String(rv.clone());
        }
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("selector".into(), Value::Object(labels.clone()));
        }
        Ok(Vec::new())
    })
    .await
}

pub async fn run_service_account(
    global: &GlobalOptions,
    args: &ServiceAccountArgs,
) -> anyhow::Result<()> {
    let Some((account, resources)) = args.args.split_last() else {
        anyhow::bail!("serviceaccount is required");
    };
    if resources.is_empty() && args.common.filenames.is_empty() {
        anyhow::bail!(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>"
        );
    }
    let change = Change {
        verb: "serviceaccount updated",
        print_unchanged: true,
    };
    apply_changes(global, resources, &args.common, change, |target, object| {
        let kind = target.info.resource.kind.clone();
        let Some(spec) = objects::pod_spec_mut(object, &kind) else {
            return Err(anyhow::anyhow!(
                "error: {}/{} the object is not a pod or does not have a pod template: *v1.{kind}",
                target.info.resource.name,
                target.info.name.as_deref().unwrap_or("")
            ));
        };
        spec.insert("serviceAccountName".into(), Value::String(account.clone()));
        Ok(Vec::new())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn match_labels() {
        assert_eq!(
            Value::Object(parse_match_labels("app=x, tier==y").unwrap()),
            json!({"app": "x", "tier": "y"})
        );
        for (bad, want) in [
            ("app in (a)", "[{app In [a]}]"),
            ("app notin (a,b),x=y", "[{app NotIn [a b]}]"),
            ("app", "[{app Exists []}]"),
            ("!app", "[{app DoesNotExist []}]"),
        ] {
            assert_eq!(
                parse_match_labels(bad).unwrap_err().to_string(),
                format!("match expression {want} not supported on this object"),
                "{bad}"
            );
        }
        assert_eq!(
            parse_match_labels("a!=b").unwrap_err().to_string(),
            "\"!=\" is not a valid label selector operator"
        );
    }
}
