//! `kubectl apply view-last-applied | set-last-applied | edit-last-applied`: reading and
//! rewriting the last-applied annotation without applying.

use super::annotation::{self, LAST_APPLIED, last_applied};
use crate::app::options::GlobalOptions;
use crate::cmd::mutate::DryRun;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::printers;
use crate::resource::{self, Selection};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

// The variants are upstream's subcommand names, which all end the same way.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Subcommand)]
pub enum LastAppliedCommand {
    /// View the latest last-applied-configuration annotations of a resource/object
    ViewLastApplied(ViewArgs),
    /// Set the last-applied-configuration annotation on a live object to match a file
    SetLastApplied(SetArgs),
    /// Edit latest last-applied-configuration annotations of a resource/object
    EditLastApplied(ViewArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// TYPE NAME | TYPE/NAME
    pub args: Vec<String>,
    /// Filename, directory, or URL to files that contains the last-applied-configuration annotations
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Output format. Must be one of (yaml, json)
    #[arg(short = 'o', long, default_value = "yaml", value_name = "string")]
    pub output: String,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Select all resources in the namespace of the specified resource types
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SetArgs {
    /// Filename, directory, or URL to files that contains the last-applied-configuration annotations
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Will create 'last-applied-configuration' annotations if current objects doesn't have one
    #[arg(long)]
    pub create_annotation: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
}

pub async fn run(global: &GlobalOptions, command: &LastAppliedCommand) -> anyhow::Result<()> {
    match command {
        LastAppliedCommand::ViewLastApplied(args) => view(global, args).await,
        LastAppliedCommand::SetLastApplied(args) => set(global, args).await,
        LastAppliedCommand::EditLastApplied(args) => {
            let edit = crate::cmd::edit::EditArgs {
                args: args.args.clone(),
                filenames: args.filenames.clone(),
                recursive: args.recursive,
                print: Default::default(),
                output_patch: false,
                field_manager: "kubectl-client-side-apply".to_owned(),
            };
            crate::cmd::edit::run_mode(global, &edit, crate::cmd::edit::Mode::LastApplied).await
        }
    }
}

async fn view(global: &GlobalOptions, args: &ViewArgs) -> anyhow::Result<()> {
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        selector: args.selector.clone(),
        all: args.all,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mut out = String::new();
    for info in &resolved.infos {
        let objects = match &info.name {
            Some(_) => vec![factory.get(&info.path()).await?],
            None => {
                let pages = resource::list_pages(&factory, info, &sel, None, &[]).await?;
                resource::items_of(&info.resource, &pages)
            }
        };
        for object in objects {
            // Upstream says nothing about objects that never were applied.
            let Some(text) = last_applied(&object) else {
                continue;
            };
            let config: Value = serde_json::from_str(text)?;
            // Upstream checks the format per configuration: nothing to show, no error.
            if args.output != "json" && args.output != "yaml" {
                print!("{out}");
                anyhow::bail!(
                    "Unexpected -o output mode: {}, the flag 'output' must be one of yaml|json\nSee 'kubectl apply view-last-applied -h' for help and examples",
                    args.output
                );
            }
            match args.output.as_str() {
                // Go's json.Indent: two spaces, the source's trailing newline kept.
                "json" => {
                    out.push_str(&serde_json::to_string_pretty(&config)?);
                    if text.ends_with('\n') {
                        out.push('\n');
                    }
                }
                _ => out.push_str(&printers::yaml::to_go_yaml(&config)),
            }
        }
    }
    print!("{out}");
    Ok(())
}

async fn set(global: &GlobalOptions, args: &SetArgs) -> anyhow::Result<()> {
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let mut reporter = args.print.reporter()?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &[], &sel).await?;
    let mut errors = Vec::new();
    for info in &resolved.infos {
        let result = async {
            let live = factory.get(&info.path()).await?;
            if last_applied(&live).is_none() && !args.create_annotation {
                anyhow::bail!(
                    "no last-applied-configuration annotation found on resource: {}, to create the annotation, run the command with --create-annotation",
                    info.name.as_deref().unwrap_or("")
                );
            }
            // The manifest as read (its namespace defaulted), not apply's modified form.
            let mut manifest = info.object.clone().unwrap_or_default();
            if let (Some(ns), Some(meta)) = (
                &info.namespace,
                manifest.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                meta.entry("namespace")
                    .or_insert_with(|| Value::String(ns.clone()));
            }
            let encoded = annotation::go_json(&manifest);
            if dry_run == DryRun::Client {
                let mut object = live;
                annotation::set_annotation(&mut object, &encoded);
                return Ok(object);
            }
            let patch = json!({"metadata": {"annotations": {LAST_APPLIED: encoded}}});
            let url = resource::with_query(&info.path(), &dry_run.query());
            factory.merge_patch(&url, &patch)
                .await
        }
        .await;
        match result {
            Ok(object) => reporter.report(&info.resource, &object, "configured", dry_run)?,
            Err(err) => errors.push(err),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}
