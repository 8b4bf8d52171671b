//! `create namespace`, `create configmap` and `create secret generic`: objects built from
//! flags, sent (or only printed with `--dry-run=client`) with upstream's messages.

use super::super::mutate::DryRun;
use super::sources;
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use base64::Engine;
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

/// `kubectl create` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum CreateCommand {
    /// Create a namespace with the specified name
    #[command(alias = "ns")]
    Namespace(CommonArgs),
    /// Create a config map from a local file, directory or literal value
    #[command(name = "configmap", alias = "cm")]
    Configmap(DataArgs),
    /// Create a secret using a specified subcommand
    Secret {
        #[command(subcommand)]
        kind: SecretCommand,
    },
    #[command(flatten)]
    Generated(super::generators::GeneratorCommand),
}

/// `kubectl create secret` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum SecretCommand {
    /// Create a secret from a local file, directory, or literal value
    Generic(SecretArgs),
    /// Create a TLS secret
    Tls(super::secrets::TlsArgs),
    /// Create a secret for use with a Docker registry
    #[command(name = "docker-registry")]
    DockerRegistry(super::secrets::DockerArgs),
}

/// Flags every generator takes.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// NAME
    pub name: Vec<String>,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-create", value_name = "string")]
    pub field_manager: String,
    /// Schema validation: strict, warn or ignore (the server checks fields).
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "strict", default_value = "strict")]
    pub validate: String,
}

/// Flags of generators that take data.
#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Specify a key and literal value to insert (i.e. mykey=somevalue)
    #[arg(long, value_name = "stringArray")]
    pub from_literal: Vec<String>,
    /// Key files can be specified using their file path, or an alternate key name.
    #[arg(long, value_name = "strings")]
    pub from_file: Vec<String>,
    /// Specify the path to a file to read lines of key=val pairs.
    #[arg(long, value_name = "strings")]
    pub from_env_file: Vec<String>,
}

/// Flags of `create secret generic`.
#[derive(Debug, Clone, Args)]
pub struct SecretArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// The type of secret to create
    #[arg(long = "type", value_name = "string")]
    pub secret_type: Option<String>,
}

pub async fn run(global: &GlobalOptions, command: &CreateCommand) -> anyhow::Result<()> {
    if let Some(done) = super::generators::dispatch(global, command).await {
        return done;
    }
    let (common, usage, kind) = match command {
        CreateCommand::Namespace(c) => (c, "namespace", "namespace"),
        CreateCommand::Configmap(d) => (&d.common, "configmap", "configmap"),
        CreateCommand::Secret {
            kind: SecretCommand::Generic(s),
        } => (&s.data.common, "secret generic", "secret"),
        _ => anyhow::bail!("unsupported create subcommand"),
    };
    if common.name.len() != 1 {
        anyhow::bail!(
            "exactly one NAME is required, got {}\nSee 'kubectl create {usage} -h' for help and examples",
            common.name.len()
        );
    }
    let name = &common.name[0];
    let data_args = match command {
        CreateCommand::Configmap(d) => Some(d),
        CreateCommand::Secret {
            kind: SecretCommand::Generic(s),
        } => Some(&s.data),
        _ => None,
    };
    if let Some(d) = data_args
        && !d.from_env_file.is_empty()
        && (!d.from_file.is_empty() || !d.from_literal.is_empty())
    {
        anyhow::bail!("from-env-file cannot be combined with from-file or from-literal");
    }
    let mut object = match command {
        CreateCommand::Namespace(_) => {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "creationTimestamp": null}, "spec": {}, "status": {}})
        }
        CreateCommand::Configmap(d) => {
            let data = sources::collect(&d.from_literal, &d.from_file, &d.from_env_file)?;
            configmap(name, data)
        }
        CreateCommand::Secret {
            kind: SecretCommand::Generic(s),
        } => {
            let data = sources::collect(
                &s.data.from_literal,
                &s.data.from_file,
                &s.data.from_env_file,
            )?;
            secret(name, data, s.secret_type.as_deref())
        }
        _ => anyhow::bail!("unsupported create subcommand"),
    };
    let dry_run = DryRun::parse(common.dry_run.as_deref())?;
    let mut reporter = common.print.reporter()?.typed();
    let factory = Factory::new(global).await?;
    let mapper = factory.discovery().mapper().await?;
    let api_version = object["apiVersion"].as_str().unwrap_or("v1").to_owned();
    let kind_name = object["kind"].as_str().unwrap_or("").to_owned();
    let resource = mapper
        .for_kind(&api_version, &kind_name)
        .ok_or_else(|| anyhow::anyhow!("the server doesn't have a resource type \"{kind}\""))?;
    if resource.namespaced && factory.namespace_explicit() {
        object["metadata"]["namespace"] = json!(factory.namespace());
    }
    if dry_run == DryRun::Client {
        return reporter.report(&resource, &object, "created", dry_run);
    }
    let query =
        super::super::create::create_query(&common.field_manager, &common.validate, dry_run)?;
    let namespace = resource.namespaced.then(|| factory.namespace().to_owned());
    let url = crate::resource::with_query(&resource.collection_path(namespace.as_deref()), &query);
    let created = factory
        .request(
            http::Method::POST,
            &url,
            Some((serde_json::to_vec(&object)?, "application/json")),
            None,
        )
        .await
        .map_err(|err| match command {
            // Upstream's namespace generator returns the server's error as it is; the others
            // wrap it (the secret one without a colon).
            CreateCommand::Namespace(_) => err,
            CreateCommand::Configmap(_) => {
                anyhow::anyhow!("failed to create configmap: {}", message(&err))
            }
            _ => anyhow::anyhow!("failed to create secret {}", message(&err)),
        })?;
    reporter.report(&resource, &created, "created", dry_run)
}

fn message(err: &anyhow::Error) -> String {
    match err.downcast_ref::<crate::errors::ApiError>() {
        Some(api) => api.message.clone(),
        None => crate::errors::render(err)
            .trim_start_matches("error: ")
            .to_owned(),
    }
}

/// A ConfigMap: UTF-8 values in `data`, the rest in `binaryData`.
fn configmap(name: &str, data: sources::Data) -> Value {
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "creationTimestamp": null}});
    let mut text = Map::new();
    let mut binary = Map::new();
    for (k, v) in data {
        match String::from_utf8(v) {
            Ok(s) => text.insert(k, Value::String(s)),
            Err(e) => binary.insert(
                k,
                Value::String(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
            ),
        };
    }
    if !text.is_empty() {
        object["data"] = Value::Object(text);
    }
    if !binary.is_empty() {
        object["binaryData"] = Value::Object(binary);
    }
    object
}

/// A Secret with base64 data and the optional type.
fn secret(name: &str, data: sources::Data, secret_type: Option<&str>) -> Value {
    let mut object = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "creationTimestamp": null}});
    if !data.is_empty() {
        let encoded: Map<String, Value> = data
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    Value::String(base64::engine::general_purpose::STANDARD.encode(v)),
                )
            })
            .collect();
        object["data"] = Value::Object(encoded);
    }
    if let Some(t) = secret_type.filter(|t| !t.is_empty()) {
        object["type"] = json!(t);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects() {
        let mut data = sources::Data::new();
        data.insert("x".into(), b"y".to_vec());
        data.insert("bin".into(), vec![0xff, 0x00]);
        let cm = configmap("c", data.clone());
        assert_eq!(cm["data"], json!({"x": "y"}));
        assert_eq!(cm["binaryData"], json!({"bin": "/wA="}));
        let s = secret("s", data, Some("Opaque"));
        assert_eq!(s["data"]["x"], "eQ==");
        assert_eq!(s["type"], "Opaque");
        assert!(
            secret("s", sources::Data::new(), None)
                .get("data")
                .is_none()
        );
    }
}
