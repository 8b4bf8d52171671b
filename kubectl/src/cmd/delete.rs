//! `kubectl delete`: by name, `-f`, `-l`/`--field-selector` or `--all`, with
//! `--cascade`, `--grace-period`/`--now`/`--force`, and `--wait` until the objects are gone.

use super::mutate::{self, DryRun};
use crate::app::config::parse_go_duration;
use crate::app::options::GlobalOptions;
use crate::errors::{ApiError, Reported};
use crate::factory::Factory;

use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Flags of `kubectl delete`.
#[derive(Debug, Clone, Args)]
pub struct DeleteArgs {
    /// TYPE [NAME...] | TYPE/NAME...
    pub args: Vec<String>,
    /// containing the resource to delete.
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long, value_name = "string")]
    pub field_selector: Option<String>,
    /// Delete all resources, in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Must be "background", "orphan", or "foreground".
    #[arg(long, default_value = "background", num_args = 0..=1, default_missing_value = "background", value_name = "string")]
    pub cascade: String,
    /// Period of time in seconds given to the resource to terminate gracefully. Ignored if
    /// negative.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int")]
    pub grace_period: i64,
    /// If true, immediately remove resources from API and bypass graceful deletion.
    #[arg(long)]
    pub force: bool,
    /// If true, resources are signaled for immediate shutdown (same as --grace-period=1).
    #[arg(long)]
    pub now: bool,
    /// If true, wait for resources to be gone before returning.
    #[arg(long, default_value = "true", num_args = 0..=1, default_missing_value = "true", value_name = "bool")]
    pub wait: bool,
    /// The length of time to wait before giving up on a delete, zero means wait a week.
    #[arg(long, default_value = "0s", value_name = "duration")]
    pub timeout: String,
    /// Treat "resource not found" as a successful delete.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "bool")]
    pub ignore_not_found: Option<bool>,
    /// Output mode. Use "-o name" for shorter output (resource/name).
    #[arg(short = 'o', long, value_name = "string")]
    pub output: Option<String>,
    /// Must be "none", "server", or "client".
    #[arg(long, value_name = "string", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<String>,
}

pub async fn run(global: &GlobalOptions, args: &DeleteArgs) -> anyhow::Result<()> {
    let propagation = match args.cascade.as_str() {
        "background" | "true" => "Background",
        "foreground" => "Foreground",
        "orphan" | "false" => "Orphan",
        other => anyhow::bail!(
            "invalid cascade value ({other}). Must be \"background\", \"foreground\", or \"orphan\""
        ),
    };
    let dry_run = DryRun::parse(args.dry_run.as_deref())?;
    let name_output = match args.output.as_deref() {
        None | Some("") => false,
        Some("name") => true,
        Some(other) => {
            anyhow::bail!("unexpected -o output mode: {other}. We only support '-o name'")
        }
    };
    let mut grace = args.grace_period;
    if args.now {
        anyhow::ensure!(
            grace < 0,
            "--now and --grace-period cannot be specified together"
        );
        grace = 1;
    }
    if args.force && grace < 0 {
        grace = 0;
    } else if grace == 0 && !args.force {
        // Zero without --force means "as fast as possible but graceful", as upstream.
        grace = 1;
    }
    let timeout = parse_go_duration(&args.timeout).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid argument \"{}\" for \"--timeout\" flag",
            args.timeout
        )
    })?;
    let timeout = if timeout.is_zero() {
        Duration::from_secs(7 * 24 * 3600)
    } else {
        timeout
    };
    let by_selector = args.all || args.selector.is_some() || args.field_selector.is_some();
    let ignore_not_found = args.ignore_not_found.unwrap_or(by_selector);
    let factory = Factory::new(global).await?;
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        selector: args.selector.clone(),
        field_selector: args.field_selector.clone(),
        all_namespaces: args.all_namespaces,
        all: args.all,
        chunk_size: 500,
    };
    if args.args.is_empty() && args.filenames.is_empty() {
        anyhow::bail!(
            "You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'"
        );
    }
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    let mut targets: Vec<Info> = Vec::new();
    for info in resolved.infos {
        if info.name.is_some() {
            targets.push(info);
            continue;
        }
        if !by_selector {
            anyhow::bail!("resource(s) were provided, but no name was specified");
        }
        let pages = resource::list_pages(&factory, &info, &sel, None, &[]).await?;
        for item in resource::items_of(&info.resource, &pages) {
            let namespace = item
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_owned);
            targets.push(Info {
                name: Some(mutate::name_of(&item).to_owned()),
                namespace: namespace.or(info.namespace.clone()),
                object: Some(item),
                ..info.clone()
            });
        }
    }
    if grace == 0 && args.force {
        eprintln!(
            "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely."
        );
    }
    let mut options =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation});
    if grace >= 0 {
        options["gracePeriodSeconds"] = json!(grace);
    }
    if dry_run == DryRun::Server {
        options["dryRun"] = json!(["All"]);
    }
    let body = serde_json::to_vec(&options)?;
    let mut errors = Vec::new();
    let mut deleted: Vec<(Info, Option<String>)> = Vec::new();
    let mut found_any = false;
    for info in targets {
        let name = info.name.clone().unwrap_or_default();
        let line = if name_output {
            format!("{}/{name}", info.resource.kind_prefix())
        } else {
            format!(
                "{} \"{name}\" deleted{}",
                info.resource.kind_prefix(),
                dry_run.suffix()
            )
        };
        if dry_run == DryRun::Client {
            println!("{line}");
            continue;
        }
        let url = resource::with_query(&info.path(), &dry_run.query());
        match factory
            .request(
                http::Method::DELETE,
                &url,
                Some((body.clone(), "application/json")),
                None,
            )
            .await
        {
            Ok(response) => {
                found_any = true;
                println!("{line}");
                // A Status response (no object) means the object is already gone.
                let uid = response
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if dry_run == DryRun::None {
                    deleted.push((info, uid));
                }
            }
            Err(err) => {
                let not_found = err
                    .downcast_ref::<ApiError>()
                    .is_some_and(ApiError::is_not_found);
                if !(ignore_not_found && not_found) {
                    errors.push(mutate::with_source(err, "deleting", info.source.as_deref()));
                }
            }
        }
    }
    if !found_any && errors.is_empty() && by_selector && !name_output {
        // Upstream's delete says it on stdout, without the namespace.
        println!("No resources found");
    }
    // Upstream returns a deletion error before waiting for anything.
    if args.wait && dry_run == DryRun::None && errors.is_empty() {
        let deadline = Instant::now() + timeout;
        for (info, uid) in &deleted {
            wait_gone(&factory, info, uid.as_deref(), deadline).await?;
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

/// Polls until the object is gone (or replaced by one with another uid).
async fn wait_gone(
    factory: &Factory,
    info: &Info,
    uid: Option<&str>,
    deadline: Instant,
) -> anyhow::Result<()> {
    loop {
        if is_gone(factory, &info.path(), uid).await? {
            return Ok(());
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "timed out waiting for the condition on {}/{}",
                info.resource.group_resource(),
                info.name.as_deref().unwrap_or("")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the object at `path` is gone: its plain GET is a 404 (no namespace lookup, as
/// upstream's Helper.Get), or, given the deleted object's `uid`, another object has its name.
pub(crate) async fn is_gone(
    factory: &Factory,
    path: &str,
    uid: Option<&str>,
) -> anyhow::Result<bool> {
    match factory.get_plain(path).await {
        Err(err)
            if err
                .downcast_ref::<ApiError>()
                .is_some_and(ApiError::is_not_found) =>
        {
            Ok(true)
        }
        Err(err) => Err(err),
        Ok(current) => {
            let current_uid = current.pointer("/metadata/uid").and_then(Value::as_str);
            Ok(uid.is_some() && current_uid != uid)
        }
    }
}
