//! `kubectl create -f`: POSTs every object of the manifests (files, directories, stdin),
//! continuing past failures and reporting each as upstream does.

mod generators;
mod ingress;
mod policy;
mod rbac;
mod secrets;
mod send;
mod service;
mod simple;
mod sources;
mod workloads;

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::resource::{self, Selection};
use clap::Args;

/// Flags of `kubectl create`.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CreateArgs {
    #[command(subcommand)]
    pub command: Option<simple::CreateCommand>,
    /// Filename, directory, or URL to files to use to create the resource
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
    /// Schema validation: strict, warn or ignore (the server checks fields).
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "strict", default_value = "strict")]
    pub validate: String,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-create", value_name = "string")]
    pub field_manager: String,
}

/// The query of a create: `dryRun`, `fieldManager` and the `fieldValidation` level of
/// `--validate`, in the sorted order client-go encodes them.
pub fn create_query(
    field_manager: &str,
    validate: &str,
    dry_run: DryRun,
) -> anyhow::Result<Vec<(String, String)>> {
    let validation = match validate {
        "strict" | "true" => "Strict",
        "warn" => "Warn",
        "ignore" | "false" => "Ignore",
        other => anyhow::bail!(
            "invalid - validate option \"{other}\"; must be one of: strict (or true), warn, ignore (or false)"
        ),
    };
    let mut query = dry_run.query();
    query.push(("fieldManager".to_owned(), field_manager.to_owned()));
    query.push(("fieldValidation".to_owned(), validation.to_owned()));
    Ok(query)
}

pub async fn run(global: &GlobalOptions, args: &CreateArgs) -> anyhow::Result<()> {
    if let Some(command) = &args.command {
        return simple::run(global, command).await;
    }
    if args.filenames.is_empty() {
        anyhow::bail!(
            "must specify one of -f and -k\n\nerror: Unexpected args: []\nSee 'kubectl create -h' for help and examples"
        );
    }
    let format = args.print.format()?;
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let query = create_query(&args.field_manager, &args.validate, dry_run)?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &[], &sel).await?;
    if resolved.infos.is_empty() {
        anyhow::bail!("no objects passed to create");
    }
    let mut reporter = args.print.reporter_for(format);
    let mut errors = Vec::new();
    for info in &resolved.infos {
        let object = info.object.clone().unwrap_or_default();
        if dry_run == DryRun::Client {
            reporter.report(&info.resource, &object, "created", dry_run)?;
            continue;
        }
        let url = resource::with_query(
            &info.resource.collection_path(info.namespace.as_deref()),
            &query,
        );
        match post(&factory, &url, &object).await {
            Ok(created) => reporter.report(&info.resource, &created, "created", dry_run)?,
            Err(err) => errors.push(mutate::with_source(err, "creating", info.source.as_deref())),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

/// POSTs `object` as JSON to `url` (its collection, with the query already on it): the
/// server's object back.
pub(crate) async fn post(
    factory: &Factory,
    url: &str,
    object: &serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let body = serde_json::to_vec(object)?;
    factory
        .request(
            http::Method::POST,
            url,
            Some((body, "application/json")),
            None,
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_query_is_sorted_and_validates() {
        let pairs = |q: Vec<(String, String)>| {
            q.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&")
        };
        let q = create_query("kubectl-create", "strict", DryRun::Server).unwrap();
        assert_eq!(
            pairs(q),
            "dryRun=All&fieldManager=kubectl-create&fieldValidation=Strict"
        );
        let q = create_query("m", "false", DryRun::None).unwrap();
        assert_eq!(pairs(q), "fieldManager=m&fieldValidation=Ignore");
        let err = create_query("m", "bogus", DryRun::None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid - validate option \"bogus\"")
        );
    }
}
