//! `kubectl replace -f`: PUTs each manifest over the live object (taking the live
//! resourceVersion when the manifest has none, as upstream's overwrite does).

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::resource::{self, Selection};
use clap::Args;
use serde_json::Value;

/// Flags of `kubectl replace`.
#[derive(Debug, Clone, Args)]
pub struct ReplaceArgs {
    /// The files that contain the configurations to replace.
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
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-replace", value_name = "string")]
    pub field_manager: String,
}

pub async fn run(global: &GlobalOptions, args: &ReplaceArgs) -> anyhow::Result<()> {
    if args.filenames.is_empty() {
        anyhow::bail!("must specify --filename to replace");
    }
    let mut reporter = args.print.reporter()?;
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &[], &sel).await?;
    let mut errors = Vec::new();
    for info in &resolved.infos {
        let mut object = info.object.clone().unwrap_or_default();
        if dry_run == DryRun::Client {
            reporter.report(&info.resource, &object, "replaced", dry_run)?;
            continue;
        }
        let result = async {
            let has_version = object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty());
            if !has_version {
                let live = factory.get(&info.path()).await?;
                if let (Some(rv), Some(meta)) = (
                    live.pointer("/metadata/resourceVersion").cloned(),
                    object.get_mut("metadata").and_then(Value::as_object_mut),
                ) {
                    meta.insert("resourceVersion".into(), rv);
                }
            }
            let mut query = vec![("fieldManager".to_owned(), args.field_manager.clone())];
            query.extend(dry_run.query());
            let url = resource::with_query(&info.path(), &query);
            let body = serde_json::to_vec(&object)?;
            factory
                .request(
                    http::Method::PUT,
                    &url,
                    Some((body, "application/json")),
                    None,
                )
                .await
        }
        .await;
        match result {
            Ok(replaced) => reporter.report(&info.resource, &replaced, "replaced", dry_run)?,
            Err(err) => errors.push(mutate::with_source(
                err,
                "replacing",
                info.source.as_deref(),
            )),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}
