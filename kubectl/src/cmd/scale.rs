//! `kubectl scale`: sets `spec.replicas` through the `scale` subresource, after checking
//! `--current-replicas` and `--resource-version` preconditions.

use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::errors::{ApiError, Reported};
use crate::factory::Factory;
use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::{Value, json};

/// Flags of `kubectl scale`.
#[derive(Debug, Clone, Args)]
pub struct ScaleArgs {
    /// (-f FILENAME | TYPE NAME)
    pub args: Vec<String>,
    /// The new desired number of replicas. Required.
    #[arg(long, value_name = "int", allow_negative_numbers = true)]
    pub replicas: Option<i64>,
    /// Precondition for current size. Requires that the current size of the resource match
    /// this value in order to scale. -1 (default) for no condition.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int")]
    pub current_replicas: i64,
    /// Precondition for resource version.
    #[arg(long, value_name = "string")]
    pub resource_version: Option<String>,
    /// Filename, directory, or URL to a file identifying the resource to set a new size
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Select all resources in the namespace of the specified resource types
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
}

pub async fn run(global: &GlobalOptions, args: &ScaleArgs) -> anyhow::Result<()> {
    let Some(replicas) = args.replicas else {
        anyhow::bail!("required flag(s) \"replicas\" not set");
    };
    anyhow::ensure!(
        replicas >= 0,
        "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
    );
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let mut reporter = args.print.reporter()?;
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        selector: args.selector.clone(),
        all: args.all,
        chunk_size: 500,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mut targets: Vec<Info> = Vec::new();
    for info in resolved.infos {
        if info.name.is_some() {
            targets.push(info);
        } else if args.all || args.selector.is_some() {
            let pages = resource::list_pages(&factory, &info, &sel, None, &[]).await?;
            for item in resource::items_of(&info.resource, &pages) {
                targets.push(Info {
                    name: Some(mutate::name_of(&item).to_owned()),
                    ..info.clone()
                });
            }
        } else {
            anyhow::bail!("resource(s) were provided, but no name was specified");
        }
    }
    if targets.is_empty() {
        anyhow::bail!("no objects passed to scale");
    }
    // Upstream reads every object before scaling any (its builder's latest versions): the
    // ones it could not read are reported after the others are scaled, and when it could
    // read none the command ends with its own wording.
    let mut read = Vec::new();
    let mut errors = Vec::new();
    for info in &targets {
        match factory.get(&info.path()).await {
            Ok(object) => read.push((info, object)),
            Err(err) => errors.push(err),
        }
    }
    if read.is_empty()
        && let Some(err) = errors.first()
    {
        let message = match err.downcast_ref::<ApiError>() {
            Some(api) => api.message.clone(),
            None => err.to_string(),
        };
        anyhow::bail!("no objects passed to scale {message}");
    }
    let unread = std::mem::take(&mut errors);
    for (info, object) in read {
        let result = async {
            // Upstream prints the object as it read it, before the scale; a client dry run
            // checks no precondition.
            if dry_run == DryRun::Client {
                return Ok(object);
            }
            let scale_path = format!("{}/scale", info.path());
            let url = resource::with_query(&scale_path, &dry_run.query());
            if args.current_replicas < 0 && args.resource_version.is_none() {
                let patch = json!({"spec": {"replicas": replicas}});
                factory.merge_patch(&url, &patch).await?;
                return Ok(object);
            }
            // Preconditions: the Scale is read, checked, and written back whole (its
            // resourceVersion guards the write), as upstream's scaler does.
            let mut scale = factory.get(&scale_path).await?;
            if args.current_replicas >= 0 {
                let have = scale
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                anyhow::ensure!(
                    have == args.current_replicas,
                    "Expected replicas to be {}, was {have}",
                    args.current_replicas
                );
            }
            if let Some(want) = &args.resource_version {
                let have = scale
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                anyhow::ensure!(
                    have == want,
                    "Expected resource version to be {want}, was {have}"
                );
            }
            scale["spec"]["replicas"] = json!(replicas);
            factory
                .request(
                    http::Method::PUT,
                    &url,
                    Some((serde_json::to_vec(&scale)?, "application/json")),
                    None,
                )
                .await?;
            // The line names the scaled object, not the Scale.
            Ok(object)
        }
        .await;
        match result {
            Ok(object) => reporter.report(&info.resource, &object, "scaled", dry_run)?,
            Err(err) => errors.push(err),
        }
    }
    errors.extend(unread);
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}
