//! What every `create <generator>` does once its object is built: the namespace of `-n`, the
//! `--dry-run=client` print without a request, or the POST (server dry run included) and the
//! `kind/name created` line or `-o` output.

use super::super::mutate::DryRun;
use super::simple::CommonArgs;
use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::errors::ApiError;
use crate::factory::Factory;
use serde_json::{Value, json};

/// How a generator words a failed POST (upstream differs per generator).
#[derive(Debug, Clone, Copy)]
pub enum Wrap {
    /// The server's error as it is (`Error from server (AlreadyExists): ...`).
    Plain,
    /// `error: <prefix>: <message>`.
    Colon(&'static str),
    /// `error: <prefix> <message>`.
    Space(&'static str),
}

/// The single NAME, or upstream's usage error naming the subcommand.
pub fn one_name<'a>(common: &'a CommonArgs, usage: &str) -> anyhow::Result<&'a str> {
    match common.name.as_slice() {
        [name] => Ok(name),
        other => anyhow::bail!(
            "exactly one NAME is required, got {}\nSee 'kubectl create {usage} -h' for help and examples",
            other.len()
        ),
    }
}

/// The resource of a built-in object without discovery (a client dry run needs no server).
fn local_resource(object: &Value, namespaced: bool) -> ApiResource {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or("").to_owned();
    ApiResource {
        name: format!("{}s", kind.to_lowercase()),
        singular: kind.to_lowercase(),
        namespaced,
        group: group.to_owned(),
        version: version.to_owned(),
        kind,
        verbs: Vec::new(),
        short_names: Vec::new(),
        categories: Vec::new(),
        preferred: true,
    }
}

/// Sends (or prints) `object`; `namespaced` says where it lives when discovery is not asked.
pub async fn send(
    global: &GlobalOptions,
    common: &CommonArgs,
    mut object: Value,
    namespaced: bool,
    wrap: Wrap,
) -> anyhow::Result<()> {
    let dry_run = DryRun::parse(common.dry_run.as_deref())?;
    let mut reporter = common.print.reporter()?.typed();
    let factory = Factory::new(global).await?;
    if namespaced && factory.namespace_explicit() {
        object["metadata"]["namespace"] = json!(factory.namespace());
    }
    if dry_run == DryRun::Client {
        return reporter.report(
            &local_resource(&object, namespaced),
            &object,
            "created",
            dry_run,
        );
    }
    let mapper = factory.discovery().mapper().await?;
    let api_version = object["apiVersion"].as_str().unwrap_or("v1").to_owned();
    let kind = object["kind"].as_str().unwrap_or("").to_owned();
    let resource = mapper.for_kind(&api_version, &kind).ok_or_else(|| {
        anyhow::anyhow!(
            "the server doesn't have a resource type \"{}\"",
            kind.to_lowercase()
        )
    })?;
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
        .map_err(|err| wrap_error(err, wrap))?;
    reporter.report(&resource, &created, "created", dry_run)
}

/// Upstream's `fmt.Errorf("...: %v", err)` drops the `Error from server` shape.
pub fn wrap_error(err: anyhow::Error, wrap: Wrap) -> anyhow::Error {
    match wrap {
        Wrap::Plain => err,
        Wrap::Colon(prefix) | Wrap::Space(prefix) => {
            let sep = if matches!(wrap, Wrap::Colon(_)) {
                ": "
            } else {
                " "
            };
            let message = match err.downcast_ref::<ApiError>() {
                Some(api) => api.message.clone(),
                None => crate::errors::render(&err)
                    .trim_start_matches("error: ")
                    .to_owned(),
            };
            anyhow::anyhow!("{prefix}{sep}{message}")
        }
    }
}

/// `key=value` pairs of a flag (`--labels`, `--hard`, `--selector` equality form).
pub fn parse_pairs(items: &[String], what: &str) -> anyhow::Result<serde_json::Map<String, Value>> {
    let mut out = serde_json::Map::new();
    for item in items.iter().flat_map(|s| s.split(',')) {
        if item.is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            anyhow::bail!("invalid {what}: {item:?}");
        };
        out.insert(k.to_owned(), Value::String(v.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_resources_name_lines() {
        for (object, prefix) in [
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
                "deployment.apps",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ServiceAccount"}),
                "serviceaccount",
            ),
            (
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}),
                "clusterrole.rbac.authorization.k8s.io",
            ),
        ] {
            assert_eq!(local_resource(&object, true).kind_prefix(), prefix);
        }
    }

    #[test]
    fn pairs() {
        let got = parse_pairs(&["a=1,b=2".into(), "c=".into()], "label").unwrap();
        assert_eq!(Value::Object(got), json!({"a": "1", "b": "2", "c": ""}));
        assert!(parse_pairs(&["x".into()], "label").is_err());
    }

    #[test]
    fn wrapped_errors_lose_the_server_shape() {
        let err: anyhow::Error = ApiError {
            code: 409,
            reason: "AlreadyExists".into(),
            message: "x exists".into(),
            invalid: None,
        }
        .into();
        let err = wrap_error(err, Wrap::Colon("failed to create deployment"));
        assert_eq!(
            crate::errors::render(&err),
            "error: failed to create deployment: x exists"
        );
    }
}
