//! `create quota`, `create poddisruptionbudget` and `create priorityclass`.

use super::send::{self, Wrap};
use super::simple::CommonArgs;
use crate::app::options::GlobalOptions;
use clap::Args;
use serde_json::{Map, Value, json};

/// Flags of `create quota`.
#[derive(Debug, Clone, Args)]
pub struct QuotaArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// A comma-delimited set of resource=quantity pairs that define a hard limit.
    #[arg(long, value_name = "string")]
    pub hard: Option<String>,
    /// A comma-delimited set of quota scopes that must all match each object tracked by the quota.
    #[arg(long, value_name = "string")]
    pub scopes: Option<String>,
}

/// Flags of `create poddisruptionbudget`.
#[derive(Debug, Clone, Args)]
pub struct PdbArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// A label selector to use for this budget. Only equality-based selector requirements are supported.
    #[arg(long, value_name = "string")]
    pub selector: Option<String>,
    /// The minimum number or percentage of available pods this budget requires.
    #[arg(long, value_name = "string")]
    pub min_available: Option<String>,
    /// The maximum number or percentage of unavailable pods this budget requires.
    #[arg(long, value_name = "string")]
    pub max_unavailable: Option<String>,
}

/// Flags of `create priorityclass`.
#[derive(Debug, Clone, Args)]
pub struct PriorityClassArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// the value of this priority class.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "int32"
    )]
    pub value: i32,
    /// global-default specifies whether this PriorityClass should be considered as the default priority.
    #[arg(long)]
    pub global_default: bool,
    /// description is an arbitrary string that usually provides guidelines on when this priority class should be used.
    #[arg(long, value_name = "string")]
    pub description: Option<String>,
    /// preemption-policy is the policy for preempting pods with lower priority.
    #[arg(long, default_value = "PreemptLowerPriority", value_name = "string")]
    pub preemption_policy: String,
}

pub fn quota(name: &str, args: &QuotaArgs) -> anyhow::Result<Value> {
    let mut hard = Map::new();
    for pair in args.hard.as_deref().unwrap_or("").split(',') {
        if pair.trim().is_empty() {
            continue;
        }
        match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => {
                hard.insert(k.trim().to_owned(), json!(v.trim()));
            }
            _ => anyhow::bail!("Invalid argument syntax {pair}, expected <resource>=<value>"),
        }
    }
    let scopes: Vec<&str> = args
        .scopes
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut spec = json!({});
    if !hard.is_empty() {
        spec["hard"] = Value::Object(hard);
    }
    if !scopes.is_empty() {
        spec["scopes"] = json!(scopes);
    }
    Ok(json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": name, "creationTimestamp": null},
        "spec": spec, "status": {},
    }))
}

/// `10` or `50%`: a count stays a number.
fn int_or_percent(text: &str, flag: &str) -> anyhow::Result<Value> {
    let digits = text.strip_suffix('%').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        anyhow::bail!("invalid format specified for {flag}");
    }
    Ok(match text.parse::<i64>() {
        Ok(n) => json!(n),
        Err(_) => json!(text),
    })
}

pub fn pdb(name: &str, args: &PdbArgs) -> anyhow::Result<Value> {
    let Some(selector) = args.selector.as_deref().filter(|s| !s.is_empty()) else {
        anyhow::bail!("a selector must be specified");
    };
    let (key, value) = match (&args.min_available, &args.max_unavailable) {
        (None, None) => anyhow::bail!("one of min-available or max-unavailable must be specified"),
        (Some(_), Some(_)) => {
            anyhow::bail!("min-available and max-unavailable cannot be both specified")
        }
        (Some(m), None) => ("minAvailable", int_or_percent(m, "min-available")?),
        (None, Some(m)) => ("maxUnavailable", int_or_percent(m, "max-unavailable")?),
    };
    let mut labels = Map::new();
    for term in selector.split(',') {
        let Some((k, v)) = term.split_once('=') else {
            anyhow::bail!("only equality-based selector requirements are supported here: {term}");
        };
        let v = v.strip_prefix('=').unwrap_or(v);
        labels.insert(k.trim().to_owned(), json!(v.trim()));
    }
    let mut spec = json!({"selector": {"matchLabels": labels}});
    spec[key] = value;
    Ok(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "creationTimestamp": null},
        "spec": spec,
        "status": {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0},
    }))
}

pub fn priority_class(name: &str, args: &PriorityClassArgs) -> Value {
    let mut object = json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name, "creationTimestamp": null},
        "value": args.value,
        "preemptionPolicy": args.preemption_policy,
    });
    if let Some(d) = args.description.as_deref().filter(|d| !d.is_empty()) {
        object["description"] = json!(d);
    }
    if args.global_default {
        object["globalDefault"] = json!(true);
    }
    object
}

pub async fn run_quota(global: &GlobalOptions, args: &QuotaArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "quota")?;
    let object = quota(name, args)?;
    let wrap = Wrap::Colon("failed to create quota");
    send::send(global, &args.common, object, true, wrap).await
}

pub async fn run_pdb(global: &GlobalOptions, args: &PdbArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "poddisruptionbudget")?;
    let object = pdb(name, args)?;
    let wrap = Wrap::Colon("failed to create poddisruptionbudgets");
    send::send(global, &args.common, object, true, wrap).await
}

pub async fn run_priority_class(
    global: &GlobalOptions,
    args: &PriorityClassArgs,
) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "priorityclass")?;
    let object = priority_class(name, args);
    let wrap = Wrap::Colon("failed to create priorityclass");
    send::send(global, &args.common, object, false, wrap).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        for (text, want) in [
            ("1", Some(json!(1))),
            ("50%", Some(json!("50%"))),
            ("1G", None),
        ] {
            assert_eq!(int_or_percent(text, "min-available").ok(), want, "{text}");
        }
    }
}
