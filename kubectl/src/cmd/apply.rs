//! `kubectl apply`: client-side (the last-applied annotation and a three-way patch) or
//! server-side (`--server-side`), with `--prune`, and the `*-last-applied` subcommands.

mod annotation;
mod client_side;
mod force;
mod last_applied;
mod prune;
mod server_side;

use super::mutate::DryRun;
use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::errors::Reported;
use crate::factory::Factory;
use crate::printers::{self, OutputFormat};
use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::Value;

pub use annotation::{LAST_APPLIED, go_json, modified_configuration};
pub use client_side::{info_string, three_way_patch, three_way_patch_for};

/// Flags of `kubectl apply`.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ApplyArgs {
    #[command(subcommand)]
    pub command: Option<last_applied::LastAppliedCommand>,
    /// The files that contain the configurations to apply.
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
    /// If true, apply runs in the server instead of the client.
    #[arg(long)]
    pub server_side: bool,
    /// If true, server-side apply will force the changes against conflicts.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long, value_name = "string")]
    pub field_manager: Option<String>,
    /// Automatically delete resource objects that do not appear in the configs.
    #[arg(long)]
    pub prune: bool,
    /// Overwrite the list of resource types to prune (group/version/kind).
    #[arg(long = "prune-allowlist", value_name = "stringArray")]
    pub prune_allowlist: Vec<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Select all resources in the namespace of the specified resource types (with --prune).
    #[arg(long)]
    pub all: bool,
    /// Automatically resolve conflicts between the modified and live configuration.
    #[arg(long, default_value = "true", value_name = "bool", num_args = 0..=1, default_missing_value = "true")]
    pub overwrite: bool,
    /// Schema validation: strict, warn or ignore (the server checks fields).
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "strict", default_value = "strict")]
    pub validate: String,
    #[command(flatten)]
    pub delete: force::DeleteFlags,
}

/// What every object of one apply run shares.
pub struct Run<'a> {
    pub factory: &'a Factory,
    pub dry_run: DryRun,
    pub field_manager: String,
    pub validation: &'static str,
    pub overwrite: bool,
    pub force_conflicts: bool,
}

impl Run<'_> {
    /// The query of a write: field manager, validation, dry run.
    pub fn query(&self) -> Vec<(String, String)> {
        let mut query = vec![
            ("fieldManager".to_owned(), self.field_manager.clone()),
            ("fieldValidation".to_owned(), self.validation.to_owned()),
        ];
        query.extend(self.dry_run.query());
        query
    }
}

pub async fn run(global: &GlobalOptions, args: &ApplyArgs) -> anyhow::Result<()> {
    if let Some(command) = &args.command {
        return last_applied::run(global, command).await;
    }
    if args.filenames.is_empty() {
        anyhow::bail!("must specify one of -f and -k");
    }
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    if args.server_side && dry_run == DryRun::Client {
        anyhow::bail!(
            "--dry-run=client doesn't work with --server-side (did you mean --dry-run=server instead?)"
        );
    }
    if args.force_conflicts && !args.server_side {
        anyhow::bail!("--force-conflicts only works with --server-side");
    }
    if args.prune && args.selector.is_none() && !args.all {
        anyhow::bail!(
            "all resources selected for prune without explicitly passing --all. To prune all resources, pass the --all flag. If you did not mean to prune all resources, specify a label selector"
        );
    }
    let force = args.delete.check(args.server_side, dry_run, args.prune)?;
    let selector = args
        .selector
        .as_deref()
        .map(api_types::labels::Selector::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let format = args.print.format()?;
    let factory = Factory::new(global).await?;
    let ctx = Run {
        factory: &factory,
        dry_run,
        field_manager: args.field_manager.clone().unwrap_or_else(|| {
            if args.server_side {
                "kubectl".to_owned()
            } else {
                "kubectl-client-side-apply".to_owned()
            }
        }),
        validation: validation(&args.validate)?,
        overwrite: args.overwrite,
        force_conflicts: args.force_conflicts,
    };
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &[], &sel).await?;
    let mut infos: Vec<Info> = resolved.infos;
    if let Some(selector) = &selector {
        infos.retain(|info| selector.matches(&labels_of(info.object.as_ref())));
    }
    if infos.is_empty() {
        anyhow::bail!("no objects passed to apply");
    }

    // Upstream gathers the objects only when -o names a format: `--template` alone prints
    // each object as it is applied.
    let printing = format.as_ref().filter(|f| {
        !matches!(f, OutputFormat::Name)
            && args.print.output.as_deref().is_some_and(|o| !o.is_empty())
    });
    let mut reporter = args.print.reporter_for(format.clone());
    let mut printed: Vec<(ApiResource, Value)> = Vec::new();
    let mut visited = prune::Visited::default();
    let mut errors = Vec::new();
    for info in &mut infos {
        set_default_namespace(info);
        let outcome = if args.server_side {
            server_side::apply_one(&ctx, info).await
        } else {
            client_side::apply_one(&ctx, info, &force).await
        };
        match outcome {
            Ok((object, verb)) => {
                visited.mark(info, &object);
                if printing.is_some() {
                    let mut object = object;
                    printers::strip_managed_fields(&mut object);
                    printed.push((info.resource.clone(), object));
                } else {
                    reporter.report(&info.resource, &object, verb, dry_run)?;
                }
            }
            Err(err) => errors.push(err),
        }
    }
    if let Some(format) = printing
        && !printed.is_empty()
    {
        print!("{}", print_applied(format, &printed)?);
    }
    if args.prune && errors.is_empty() {
        let allowlist = prune::allowlist(&args.prune_allowlist)?;
        if args.prune_allowlist.is_empty() && factory.namespace_explicit() {
            prune::warn_cluster_scoped_default();
        }
        prune::prune(
            &ctx,
            &allowlist,
            &visited,
            args.selector.as_deref(),
            &force.delete_options,
        )
        .await?;
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

/// `-o` of the applied objects: one bare, several in upstream's unstructured `List`, whose JSON
/// keeps its fields in insertion order (kind, apiVersion, metadata, items).
fn print_applied(
    format: &OutputFormat,
    objects: &[(ApiResource, Value)],
) -> anyhow::Result<String> {
    if objects.len() == 1 {
        return printers::print_objects(format, objects, true);
    }
    let items: Vec<Value> = objects.iter().map(|(_, o)| o.clone()).collect();
    match format {
        OutputFormat::Json => {
            let items: Vec<String> = items
                .iter()
                .map(|item| {
                    printers::json::to_go_json(item)
                        .trim_end()
                        .lines()
                        .map(|l| format!("        {l}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .collect();
            Ok(format!(
                "{{\n    \"kind\": \"List\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {{}},\n    \"items\": [\n{}\n    ]\n}}\n",
                items.join(",\n")
            ))
        }
        OutputFormat::Yaml => Ok(printers::yaml::to_go_yaml(&serde_json::json!({
            "apiVersion": "v1", "items": items, "kind": "List", "metadata": {}
        }))),
        _ => printers::print_objects(format, objects, false),
    }
}

fn validation(value: &str) -> anyhow::Result<&'static str> {
    Ok(match value {
        "strict" | "true" => "Strict",
        "warn" => "Warn",
        "ignore" | "false" => "Ignore",
        other => anyhow::bail!(
            "invalid - validate option \"{other}\"; must be one of: strict (or true), warn, ignore (or false)"
        ),
    })
}

/// Upstream's builder writes the request namespace into namespaced manifests lacking one, so it
/// ends up in the last-applied annotation.
fn set_default_namespace(info: &mut Info) {
    let (Some(ns), Some(object)) = (&info.namespace, info.object.as_mut()) else {
        return;
    };
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        && meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        meta.insert("namespace".into(), Value::String(ns.clone()));
    }
}

fn labels_of(object: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    object
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Groups served by the apiserver itself: their kinds have patch strategies (strategic merge);
/// any other group is a custom resource, patched with a JSON merge patch as upstream does.
pub fn is_built_in(group: &str) -> bool {
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}
