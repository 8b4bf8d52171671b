//! `kubectl set env`: `KEY=VALUE` and `KEY-` (also through `-e`), `--from=configmap/x` or
//! `secret/x` (one variable per key, `--prefix`, `--keys`), `-c` to choose containers, and
//! `--list` to print what the containers have.

use super::{Change, CommonArgs, apply_changes, containers_matching, objects};
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::resource::{self, Selection};
use clap::Args;
use serde_json::{Value, json};

/// Flags of `kubectl set env`.
#[derive(Debug, Clone, Args)]
pub struct EnvArgs {
    /// RESOURCE/NAME KEY_1=VAL_1 ... KEY_N=VAL_N
    pub args: Vec<String>,
    /// Specify a key-value pair for an environment variable to set into each container.
    #[arg(short = 'e', long = "env", value_name = "stringArray")]
    pub env: Vec<String>,
    /// The name of a resource from which to inject environment variables
    #[arg(long, value_name = "string")]
    pub from: Option<String>,
    /// Prefix to append to variable names
    #[arg(long, value_name = "string")]
    pub prefix: Option<String>,
    /// Comma-separated list of keys to import from specified resource
    #[arg(long, value_delimiter = ',', value_name = "strings")]
    pub keys: Vec<String>,
    /// The names of containers in the selected pod templates to change - may use wildcards
    #[arg(
        short = 'c',
        long = "containers",
        default_value = "*",
        value_name = "string"
    )]
    pub containers: String,
    /// If true, display the environment and any changes in the standard format.
    #[arg(long)]
    pub list: bool,
    /// If true, show secret or configmap references when listing variables
    #[arg(long)]
    pub resolve: bool,
    /// If true, allow environment to be overwritten, otherwise reject updates that overwrite
    /// existing environment.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub overwrite: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Upstream's `SplitEnvironmentFromResources`: resources first, then `K=V` or `K-`.
pub fn split_env(args: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let is_env = |s: &str| s.find('=').is_some_and(|i| i > 0) || s.ends_with('-');
    let mut resources = Vec::new();
    let mut env = Vec::new();
    for arg in args {
        match (env.is_empty(), is_env(arg)) {
            (_, true) => env.push(arg.clone()),
            (true, false) => resources.push(arg.clone()),
            (false, false) => return None,
        }
    }
    Some((resources, env))
}

/// Parses `K=V` and `K-` specs into variables to set and names to remove.
pub fn parse_env(specs: &[String]) -> anyhow::Result<(Vec<Value>, Vec<String>)> {
    let mut env = Vec::new();
    let mut remove = Vec::new();
    for spec in specs {
        if let Some((name, value)) = spec.split_once('=') {
            if let Some(problem) = env_name_problem(name) {
                anyhow::bail!("{name:?} is not a valid key name: {problem}");
            }
            env.push(json!({"name": name, "value": value}));
        } else if let Some(name) = spec.strip_suffix('-') {
            remove.push(name.to_owned());
        } else {
            anyhow::bail!("unknown environment variable: {spec}");
        }
    }
    if remove
        .iter()
        .any(|r| env.iter().any(|e| e["name"].as_str() == Some(r.as_str())))
    {
        anyhow::bail!(
            "can not both modify and remove the same environment variable in the same command"
        );
    }
    Ok((env, remove))
}

fn env_name_problem(name: &str) -> Option<&'static str> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "-._".contains(c);
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(ok_char);
    (!valid).then_some(
        "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
    )
}

/// A configmap or secret key as a variable name: upper case, anything else `_`.
pub fn key_to_env_name(key: &str) -> String {
    key.to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Upstream's `updateEnv`: removed names go, existing ones are replaced in place, new ones are
/// appended in the order given.
pub fn update_env(existing: &[Value], env: &[Value], remove: &[String]) -> Vec<Value> {
    let name = |v: &Value| {
        v.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut covered: Vec<String> = remove.to_vec();
    let mut out = Vec::new();
    for e in existing {
        let n = name(e);
        if covered.contains(&n) {
            continue;
        }
        match env.iter().find(|v| name(v) == n) {
            Some(newer) => {
                covered.push(n);
                out.push(newer.clone());
            }
            None => out.push(e.clone()),
        }
    }
    for e in env {
        let n = name(e);
        if !covered.contains(&n) {
            covered.push(n);
            out.push(e.clone());
        }
    }
    out
}

/// How `--list` shows a variable.
pub fn list_line(env: &Value) -> String {
    let name = env.get("name").and_then(Value::as_str).unwrap_or("");
    let Some(from) = env.get("valueFrom") else {
        let value = env.get("value").and_then(Value::as_str).unwrap_or("");
        return format!("{name}={value}");
    };
    let s = |p: &str| from.pointer(p).and_then(Value::as_str).unwrap_or("");
    let source = if from.get("configMapKeyRef").is_some() {
        format!(
            "configmap {}, key {}",
            s("/configMapKeyRef/name"),
            s("/configMapKeyRef/key")
        )
    } else if from.get("secretKeyRef").is_some() {
        format!(
            "secret {}, key {}",
            s("/secretKeyRef/name"),
            s("/secretKeyRef/key")
        )
    } else if from.get("fieldRef").is_some() {
        format!("field path {}", s("/fieldRef/fieldPath"))
    } else if from.get("resourceFieldRef").is_some() {
        let container = s("/resourceFieldRef/containerName");
        let prefix = if container.is_empty() {
            String::new()
        } else {
            format!("{container}/")
        };
        format!("resource field {prefix}{}", s("/resourceFieldRef/resource"))
    } else {
        "invalid valueFrom".to_owned()
    };
    format!("# {name} from {source}")
}

/// The variables `--from` brings: one per key of the configmap or secret.
async fn env_from(factory: &Factory, args: &EnvArgs, from: &str) -> anyhow::Result<Vec<Value>> {
    let resolved = resource::resolve(factory, &[from.to_owned()], &Selection::default()).await?;
    let mut out = Vec::new();
    for info in resolved.infos {
        let object = factory.get(&info.path()).await?;
        let name = object["metadata"]["name"].clone();
        let (ref_key, data) = match info.resource.kind.as_str() {
            "ConfigMap" => ("configMapKeyRef", object.get("data")),
            "Secret" => ("secretKeyRef", object.get("data")),
            _ => continue,
        };
        // Upstream walks a Go map (random order); sorted keys at least give one order.
        let mut keys: Vec<&String> = data
            .and_then(Value::as_object)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        keys.sort();
        for key in keys {
            if !args.keys.is_empty() && !args.keys.contains(key) {
                continue;
            }
            let converted = key_to_env_name(key);
            if &converted != key {
                eprintln!("Warning: key {key} transferred to {converted}");
            }
            let env_name = format!("{}{converted}", args.prefix.as_deref().unwrap_or(""));
            out.push(json!({"name": env_name, "valueFrom": {ref_key: {"name": name, "key": key}}}));
        }
    }
    Ok(out)
}

pub async fn run(global: &GlobalOptions, args: &EnvArgs) -> anyhow::Result<()> {
    let Some((resources, env_args)) = split_env(&args.args) else {
        anyhow::bail!(
            "all resources must be specified before environment changes: {}",
            args.args.join(" ")
        );
    };
    if args.common.filenames.is_empty() && resources.is_empty() {
        anyhow::bail!(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>"
        );
    }
    if args.list
        && args
            .common
            .print
            .output
            .as_deref()
            .is_some_and(|o| !o.is_empty())
    {
        anyhow::bail!("--list and --output may not be specified together");
    }
    if !args.keys.is_empty() && args.from.is_none() {
        anyhow::bail!("when specifying --keys, a configmap or secret must be provided with --from");
    }
    let mut specs = args.env.clone();
    specs.extend(env_args);
    let (mut env, remove) = parse_env(&specs)?;
    if let Some(from) = &args.from {
        let factory = Factory::new(global).await?;
        env.extend(env_from(&factory, args, from).await?);
    }
    if args.list {
        return list(global, &resources, args, &env, &remove).await;
    }
    let change = Change {
        verb: "env updated",
        print_unchanged: false,
    };
    apply_changes(global, &resources, &args.common, change, |target, object| {
        let kind = target.info.resource.kind.clone();
        let Some(spec) = objects::pod_spec_mut(object, &kind) else {
            return Err(anyhow::anyhow!(
                "error: {}/{} the object is not a pod or does not have a pod template: *v1.{kind}",
                target.info.resource.name,
                target.info.name.as_deref().unwrap_or("")
            ));
        };
        let containers = containers_matching(spec, &args.containers, true);
        if containers.is_empty() {
            eprintln!(
                "Warning: {kind}/{} does not have any containers matching {:?}",
                target.info.name.as_deref().unwrap_or(""),
                args.containers
            );
        }
        for c in containers {
            let existing: Vec<Value> = c
                .get("env")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if !args.overwrite
                && let Some(clash) = env.iter().find(|e| existing.iter().any(|x| x["name"] == e["name"]))
            {
                return Err(anyhow::anyhow!(
                    "error: {}/{} '{}' already has a value ({}), and --overwrite is false",
                    target.info.resource.name,
                    target.info.name.as_deref().unwrap_or(""),
                    clash["name"].as_str().unwrap_or(""),
                    existing
                        .iter()
                        .find(|x| x["name"] == clash["name"])
                        .and_then(|x| x["value"].as_str())
                        .unwrap_or("")
                ));
            }
            let updated = update_env(&existing, &env, &remove);
            if updated.is_empty() {
                c.remove("env");
            } else {
                c.insert("env".into(), Value::Array(updated));
            }
        }
        Ok(Vec::new())
    })
    .await
}

/// `--list`: each container's variables with the changes of the command line applied (and
/// not saved); `--resolve` shows the values of configmap and secret references.
async fn list(
    global: &GlobalOptions,
    resources: &[String],
    args: &EnvArgs,
    env: &[Value],
    remove: &[String],
) -> anyhow::Result<()> {
    let factory = Factory::new(global).await?;
    let sel = args.common.selection();
    let targets = objects::targets(&factory, resources, &sel, args.common.local).await?;
    let mut out = String::new();
    for target in targets {
        let kind = target.info.resource.kind.clone();
        let name = target.info.name.clone().unwrap_or_default();
        let namespace = target.info.namespace.clone().unwrap_or_default();
        let mut object = target.object;
        let Some(spec) = objects::pod_spec_mut(&mut object, &kind) else {
            continue;
        };
        for c in containers_matching(spec, &args.containers, false) {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!("# {kind} {name}, container {cname}\n"));
            let existing: Vec<Value> = c
                .get("env")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for e in update_env(&existing, env, remove) {
                let resolved = if args.resolve {
                    resolve(&factory, &namespace, &e).await
                } else {
                    None
                };
                match resolved {
                    Some(value) => {
                        let n = e.get("name").and_then(Value::as_str).unwrap_or("");
                        out.push_str(&format!("{n}={value}"));
                    }
                    None => out.push_str(&list_line(&e)),
                }
                out.push('\n');
            }
        }
    }
    print!("{out}");
    Ok(())
}

/// The value a configmap or secret reference points at (`None` when it cannot be read).
async fn resolve(factory: &Factory, namespace: &str, env: &Value) -> Option<String> {
    use base64::Engine;
    let from = env.get("valueFrom")?;
    let (kind, r) = match (from.get("configMapKeyRef"), from.get("secretKeyRef")) {
        (Some(r), _) => ("configmaps", r),
        (_, Some(r)) => ("secrets", r),
        _ => return None,
    };
    let name = r.get("name")?.as_str()?;
    let key = r.get("key")?.as_str()?;
    let object = factory
        .get(&format!("/api/v1/namespaces/{namespace}/{kind}/{name}"))
        .await
        .ok()?;
    let value = object.get("data")?.get(key)?.as_str()?;
    if kind == "configmaps" {
        return Some(value.to_owned());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value)
        .ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn splitting_and_parsing() {
        let (r, e) = split_env(&s(&["deploy/web", "A=1", "B-"])).unwrap();
        assert_eq!((r, e), (s(&["deploy/web"]), s(&["A=1", "B-"])));
        assert!(split_env(&s(&["A=1", "deploy/web"])).is_none());
        let (env, remove) = parse_env(&s(&["A=1=2", "B-"])).unwrap();
        assert_eq!(env, vec![json!({"name": "A", "value": "1=2"})]);
        assert_eq!(remove, s(&["B"]));
        for bad in ["1A=x", "A B=x"] {
            assert!(parse_env(&s(&[bad])).is_err(), "{bad}");
        }
        assert!(parse_env(&s(&["A=1", "A-"])).is_err());
    }

    #[test]
    fn updating() {
        let existing = vec![
            json!({"name": "A", "value": "1"}),
            json!({"name": "B", "value": "2"}),
        ];
        let env = vec![
            json!({"name": "C", "value": "3"}),
            json!({"name": "A", "value": "9"}),
        ];
        let got = update_env(&existing, &env, &s(&["B"]));
        assert_eq!(
            got,
            vec![
                json!({"name": "A", "value": "9"}),
                json!({"name": "C", "value": "3"})
            ]
        );
        assert_eq!(key_to_env_name("my.key-1"), "MY_KEY_1");
    }

    #[test]
    fn list_lines() {
        for (env, want) in [
            (json!({"name": "A", "value": "1"}), "A=1"),
            (json!({"name": "A"}), "A="),
            (
                json!({"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}),
                "# K from configmap cm, key k",
            ),
            (
                json!({"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
                "# P from field path metadata.name",
            ),
        ] {
            assert_eq!(list_line(&env), want);
        }
    }
}
