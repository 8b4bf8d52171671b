//! `kubectl patch`: a strategic merge (default), JSON merge or JSON patch (`-p` in JSON or
//! YAML, or `--patch-file`) applied to named objects or those of `-f`; `(no change)` when the
//! object came back as it was.

use super::mutate::DryRun;
use crate::app::options::GlobalOptions;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::resource::{self, Selection};
use clap::Args;
use serde_json::Value;

/// Flags of `kubectl patch`.
#[derive(Debug, Clone, Args)]
pub struct PatchArgs {
    /// TYPE NAME | TYPE/NAME
    pub args: Vec<String>,
    /// The patch to be applied to the resource JSON file.
    #[arg(short = 'p', long, value_name = "string")]
    pub patch: Option<String>,
    /// A file containing a patch to be applied to the resource.
    #[arg(long, value_name = "string")]
    pub patch_file: Option<String>,
    /// The type of patch being provided; one of [json merge strategic]
    #[arg(long = "type", default_value = "strategic", value_name = "string")]
    pub patch_type: String,
    /// Filename, directory, or URL to a file identifying the resource to update
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
    #[arg(long, default_value = "kubectl-patch", value_name = "string")]
    pub field_manager: String,
    /// If specified, patch will operate on the subresource of the requested object.
    #[arg(long, value_name = "string")]
    pub subresource: Option<String>,
}

pub async fn run(global: &GlobalOptions, args: &PatchArgs) -> anyhow::Result<()> {
    let content_type = match args.patch_type.as_str() {
        "strategic" => "application/strategic-merge-patch+json",
        "merge" => "application/merge-patch+json",
        "json" => "application/json-patch+json",
        other => anyhow::bail!("--type must be one of [json merge strategic], not \"{other}\""),
    };
    let text = match (&args.patch, &args.patch_file) {
        (Some(_), Some(_)) => anyhow::bail!("--patch and --patch-file are mutually exclusive"),
        (Some(p), None) => p.clone(),
        (None, Some(f)) => std::fs::read_to_string(f)
            .map_err(|err| anyhow::anyhow!("unable to read patch file: {err}"))?,
        (None, None) => String::new(),
    };
    if text.trim().is_empty() {
        anyhow::bail!("must specify --patch or --patch-file containing the contents of the patch");
    }
    let patch: Value = serde_yaml::from_str(&text)
        .map_err(|err| anyhow::anyhow!("unable to parse \"{text}\": {err}"))?;
    let body = serde_json::to_vec(&patch)?;
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let mut reporter = args.print.reporter()?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mut errors = Vec::new();
    for info in &resolved.infos {
        if info.name.is_none() {
            anyhow::bail!("resource(s) were provided, but no name was specified");
        }
        let mut path = info.path();
        if let Some(sub) = &args.subresource {
            path = format!("{path}/{sub}");
        }
        let result = async {
            let before = factory.get(&path).await?;
            if dry_run == DryRun::Client {
                return Ok((before.clone(), before));
            }
            let mut query = vec![("fieldManager".to_owned(), args.field_manager.clone())];
            query.extend(dry_run.query());
            let url = resource::with_query(&path, &query);
            let after = factory
                .request(
                    http::Method::PATCH,
                    &url,
                    Some((body.clone(), content_type)),
                    None,
                )
                .await?;
            Ok::<_, anyhow::Error>((before, after))
        }
        .await;
        match result {
            Ok((before, after)) => {
                let verb = if before == after && dry_run != DryRun::Client {
                    "patched (no change)"
                } else {
                    "patched"
                };
                reporter.report(&info.resource, &after, verb, dry_run)?;
            }
            Err(err) => errors.push(err),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}
