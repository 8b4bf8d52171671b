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
    let validation = match args.validate.as_str() {
        "strict" | "true" => "Strict",
        "warn" => "Warn",
        "ignore" | "false" => "Ignore",
        other => anyhow::bail!(
            "invalid - validate option \"{other}\"; must be one of: strict (or true), warn, ignore (or false)"
        ),
    };
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
        let mut query = vec![
            ("fieldManager".to_owned(), args.field_manager.clone()),
            ("fieldValidation".to_owned(), validation.to_owned()),
        ];
        query.extend(dry_run.query());
        let url = resource::with_query(
            &info.resource.collection_path(info.namespace.as_deref()),
            &query,
        );
        let body = serde_json::to_vec(&object)?;
        match factory
            .request(
                http::Method::POST,
                &url,
                Some((body, "application/json")),
                None,
            )
            .await
        {
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
