//! `kubectl config set|unset PROPERTY_NAME`: a dot-separated path through the config, where each
//! token is a field name or a map key (`clusters.<name>.server`, `current-context`).

use super::Session;
use crate::kubeconfig::model::{AuthInfo, Cluster, Config, Context, Preferences, base64_encode};
use crate::kubeconfig::write::modify_config;
use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Flags of `kubectl config set`.
#[derive(Debug, Clone, Args)]
pub struct SetArgs {
    pub name: Option<String>,
    pub value: Option<String>,
    /// When writing a []byte PROPERTY_VALUE, write the given string directly without base64 decoding.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "bool")]
    pub set_raw_bytes: Option<bool>,
}

/// Flags of `kubectl config unset`.
#[derive(Debug, Clone, Args)]
pub struct UnsetArgs {
    pub name: Option<String>,
}

const BOOL_FIELDS: &[&str] = &["insecure-skip-tls-verify", "disable-compression", "colors"];

fn entries<T: serde::Serialize>(map: &BTreeMap<String, T>) -> anyhow::Result<Value> {
    let mut out = Map::new();
    for (name, value) in map {
        out.insert(name.clone(), serde_json::to_value(value)?);
    }
    Ok(Value::Object(out))
}

/// The config as upstream's `set` walks it: maps keyed by name.
fn to_tree(config: &Config) -> anyhow::Result<Value> {
    let mut tree = Map::new();
    tree.insert(
        "preferences".into(),
        serde_json::to_value(&config.preferences)?,
    );
    tree.insert("clusters".into(), entries(&config.clusters)?);
    tree.insert("users".into(), entries(&config.auth_infos)?);
    tree.insert("contexts".into(), entries(&config.contexts)?);
    tree.insert(
        "current-context".into(),
        Value::String(config.current_context.clone()),
    );
    Ok(Value::Object(tree))
}

fn from_entries<T: serde::de::DeserializeOwned>(
    tree: &Value,
    key: &str,
) -> anyhow::Result<BTreeMap<String, T>> {
    let mut out = BTreeMap::new();
    for (name, value) in tree[key].as_object().into_iter().flatten() {
        let parsed =
            serde_json::from_value(value.clone()).with_context(|| format!("{key}.{name}"))?;
        out.insert(name.clone(), parsed);
    }
    Ok(out)
}

fn from_tree(tree: &Value, base: &Config) -> anyhow::Result<Config> {
    Ok(Config {
        preferences: serde_json::from_value::<Preferences>(tree["preferences"].clone())?,
        clusters: from_entries::<Cluster>(tree, "clusters")?,
        auth_infos: from_entries::<AuthInfo>(tree, "users")?,
        contexts: from_entries::<Context>(tree, "contexts")?,
        current_context: tree["current-context"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        extensions: base.extensions.clone(),
    })
}

/// Go's `base64.StdEncoding` check: the offset of the first byte that cannot be decoded.
fn invalid_base64_at(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let body = text.trim_end_matches('=').len();
    if let Some(at) = bytes[..body]
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/'))
    {
        return Some(at);
    }
    (!bytes.len().is_multiple_of(4) || bytes.len() - body > 2)
        .then(|| bytes.len() - bytes.len() % 4)
}

fn leaf_value(field: &str, value: &str, raw: bool) -> anyhow::Result<Value> {
    if BOOL_FIELDS.contains(&field) {
        return match value {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
            _ => bail!("strconv.ParseBool: parsing \"{value}\": invalid syntax"),
        };
    }
    if field.ends_with("-data") {
        if raw {
            return Ok(Value::String(base64_encode(value.as_bytes())));
        }
        if let Some(at) = invalid_base64_at(value) {
            bail!("error decoding input value: illegal base64 data at input byte {at}");
        }
    }
    Ok(Value::String(value.to_string()))
}

pub fn set(session: &Session, args: &SetArgs) -> anyhow::Result<()> {
    let (Some(name), Some(value)) = (args.name.as_deref(), args.value.as_deref()) else {
        let given: Vec<&str> = [args.name.as_deref(), args.value.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        bail!("Unexpected args: [{}]", given.join(" "));
    };
    let steps: Vec<&str> = name.split('.').collect();
    let mut tree = to_tree(&session.loaded.config)?;
    let (last, parents) = steps.split_last().context("an empty property name")?;
    let mut node = &mut tree;
    for step in parents {
        let Value::Object(map) = node else {
            bail!("unable to locate path {step}");
        };
        node = map
            .entry(step.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = node else {
        bail!("unable to locate path {last}");
    };
    // A name directly under clusters/users/contexts is a whole entry, not a value.
    if parents.len() == 1 && matches!(parents[0], "clusters" | "users" | "contexts") {
        bail!("can't set a map to a value");
    }
    map.insert(
        last.to_string(),
        leaf_value(last, value, args.set_raw_bytes == Some(true))?,
    );
    let new = from_tree(&tree, &session.loaded.config)?;
    // A field the kubeconfig format does not have would be dropped silently: refuse it.
    if lookup(&to_tree(&new)?, &steps).is_none() {
        bail!(
            "unable to locate path {}",
            steps.last().copied().unwrap_or_default()
        );
    }
    modify_config(&session.paths, &session.loaded, &new)?;
    println!("Property \"{name}\" set.");
    Ok(())
}

fn lookup<'a>(tree: &'a Value, steps: &[&str]) -> Option<&'a Value> {
    steps.iter().try_fold(tree, |node, step| node.get(*step))
}

pub fn unset(session: &Session, args: &UnsetArgs) -> anyhow::Result<()> {
    let Some(name) = args.name.as_deref() else {
        bail!("Unexpected args: []");
    };
    let steps: Vec<&str> = name.split('.').collect();
    let mut tree = to_tree(&session.loaded.config)?;
    let (last, parents) = steps.split_last().context("an empty property name")?;
    let mut node = Some(&mut tree);
    for step in parents {
        node = node.and_then(|n| n.get_mut(*step));
    }
    // Unsetting what is not there succeeds, as upstream's does.
    if let Some(Value::Object(map)) = node {
        if parents.is_empty() && *last == "current-context" {
            map.insert(last.to_string(), Value::String(String::new()));
        } else {
            map.remove(*last);
        }
    }
    let new = from_tree(&tree, &session.loaded.config)?;
    modify_config(&session.paths, &session.loaded, &new)?;
    println!("Property \"{name}\" unset.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::invalid_base64_at;

    #[test]
    fn base64_check_matches_go_offsets() {
        let cases = [
            ("QUJD", None),
            ("QUJDRA==", None),
            ("notb64!", Some(6)),
            ("abc", Some(0)),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(invalid_base64_at(input), want, "{input}");
        }
    }
}
