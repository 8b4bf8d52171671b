//! `kubectl wait --for=delete|create|condition=...|jsonpath=...`: each object is checked as
//! read, then on every change a watch brings, until it satisfies `--for` or the one deadline
//! of `--timeout` passes (`0` checks once).

pub mod condition;

use crate::app::options::GlobalOptions;
use crate::cmd::mutate::DryRun;
use crate::errors::ApiError;
use crate::factory::Factory;
use crate::resource::{self, Info, Selection};
use clap::Args;
use condition::For;
use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// Flags of `kubectl wait`.
#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
    /// ([-f FILENAME] | resource.group/resource.name | resource.group [(-l label | --all)])
    pub args: Vec<String>,
    /// The condition to wait on: [create|delete|condition=condition-name[=condition-value]|jsonpath='{JSONPath expression}'=[JSONPath value]].
    #[arg(long = "for", value_name = "string", default_value = "")]
    pub for_condition: String,
    /// The length of time to wait before giving up. Zero means check once and don't wait,
    /// negative means wait for a week.
    #[arg(
        long,
        default_value = "30s",
        allow_hyphen_values = true,
        value_name = "duration"
    )]
    pub timeout: String,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long, value_name = "string")]
    pub field_selector: Option<String>,
    /// Select all resources in the namespace of the specified resource types
    #[arg(long)]
    pub all: bool,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Filename, directory, or URL to files identifying the resource.
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
}

/// `--timeout`: `None` checks once; negative waits a week.
fn timeout(text: &str) -> anyhow::Result<Option<Duration>> {
    if let Some(rest) = text.strip_prefix('-') {
        crate::cmd::rollout::status::duration_flag(rest, "timeout", "wait")?;
        return Ok(Some(Duration::from_secs(7 * 24 * 3600)));
    }
    crate::cmd::rollout::status::duration_flag(text, "timeout", "wait")
}

pub async fn run(global: &GlobalOptions, args: &WaitArgs) -> anyhow::Result<()> {
    let cond = condition::parse(&args.for_condition)?;
    let limit = timeout(&args.timeout)?;
    let deadline = limit.map(|d| Instant::now() + d);
    let mut reporter = args.print.reporter()?;
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
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    if matches!(cond, For::Create) {
        for info in &resolved.infos {
            let object = wait_created(&factory, info, deadline).await?;
            reporter.report(&info.resource, &object, "condition met", DryRun::None)?;
        }
        return Ok(());
    }
    let mut objects: Vec<(Info, Value)> = Vec::new();
    for info in resolved.infos {
        if info.name.is_some() {
            match factory.get_plain(&info.path()).await {
                Ok(object) => objects.push((info, object)),
                Err(err) if matches!(cond, For::Delete) && is_not_found(&err) => {}
                Err(err) => return Err(err),
            }
        } else if args.all || args.selector.is_some() || args.field_selector.is_some() {
            let pages = resource::list_pages(&factory, &info, &sel, None, &[]).await?;
            for object in resource::items_of(&info.resource, &pages) {
                let named = Info {
                    name: object["metadata"]["name"].as_str().map(str::to_owned),
                    namespace: object["metadata"]["namespace"]
                        .as_str()
                        .map(str::to_owned)
                        .or(info.namespace.clone()),
                    ..info.clone()
                };
                objects.push((named, object));
            }
        } else {
            anyhow::bail!("resource(s) were provided, but no name was specified");
        }
    }
    if objects.is_empty() && !matches!(cond, For::Delete) {
        anyhow::bail!("no matching resources found");
    }
    let mut errors: Vec<String> = Vec::new();
    for (info, object) in &objects {
        match wait_one(&factory, info, object, &cond, deadline).await {
            Ok(done) => reporter.report(&info.resource, &done, "condition met", DryRun::None)?,
            Err(err) => errors.push(crate::errors::render(&err)),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(crate::errors::usage(errors.remove(0))),
        _ => {
            // Upstream prints an aggregate one error a line, without the `error: ` prefix.
            for line in &errors {
                eprintln!("{}", line.strip_prefix("error: ").unwrap_or(line));
            }
            std::process::exit(1);
        }
    }
}

fn is_not_found(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ApiError>()
        .is_some_and(ApiError::is_not_found)
}

fn timed_out(info: &Info) -> anyhow::Error {
    anyhow::anyhow!(
        "timed out waiting for the condition on {}/{}",
        info.resource.name,
        info.name.as_deref().unwrap_or("")
    )
}

/// Waits for `object` to satisfy `cond`; returns the object that did.
async fn wait_one(
    factory: &Factory,
    info: &Info,
    object: &Value,
    cond: &For,
    deadline: Option<Instant>,
) -> anyhow::Result<Value> {
    if !matches!(cond, For::Delete) && condition::is_met(cond, object)? {
        return Ok(object.clone());
    }
    let Some(deadline) = deadline else {
        return Err(anyhow::anyhow!(
            "condition not met for {}/{}",
            info.resource.name,
            info.name.as_deref().unwrap_or("")
        ));
    };
    match tokio::time::timeout_at(deadline, watch_until(factory, info, object, cond)).await {
        Ok(result) => result,
        Err(_) => Err(timed_out(info)),
    }
}

async fn watch_until(
    factory: &Factory,
    info: &Info,
    object: &Value,
    cond: &For,
) -> anyhow::Result<Value> {
    let name = info.name.clone().unwrap_or_default();
    let mut rv = object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    loop {
        let query = vec![
            ("fieldSelector".to_owned(), format!("metadata.name={name}")),
            ("resourceVersion".to_owned(), rv.clone()),
            ("allowWatchBookmarks".to_owned(), "true".to_owned()),
            ("watch".to_owned(), "true".to_owned()),
        ];
        let url = resource::with_query(
            &info.resource.collection_path(info.namespace.as_deref()),
            &query,
        );
        let mut events = Box::pin(factory.watch(&url, None).await?);
        while let Some(event) = events.next().await {
            let (kind, changed) = event?;
            if let Some(v) = changed["metadata"]["resourceVersion"].as_str() {
                rv = v.to_owned();
            }
            match (kind.as_str(), cond) {
                ("DELETED", For::Delete) => return Ok(changed),
                ("DELETED", _) => {}
                ("ADDED" | "MODIFIED", For::Delete) => {}
                ("ADDED" | "MODIFIED", _) if condition::is_met(cond, &changed)? => {
                    return Ok(changed);
                }
                _ => {}
            }
        }
    }
}

/// `--for=create`: polls until the object exists.
async fn wait_created(
    factory: &Factory,
    info: &Info,
    deadline: Option<Instant>,
) -> anyhow::Result<Value> {
    loop {
        match factory.get_plain(&info.path()).await {
            Ok(object) => return Ok(object),
            Err(err) if is_not_found(&err) => {}
            Err(err) => return Err(err),
        }
        let now = Instant::now();
        if deadline.is_none_or(|d| now >= d) {
            anyhow::bail!("timed out waiting for the condition");
        }
        let next = now + Duration::from_millis(500);
        tokio::time::sleep_until(deadline.map_or(next, |d| d.min(next))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(timeout("30s").unwrap(), Some(Duration::from_secs(30)));
        assert_eq!(timeout("0").unwrap(), None);
        assert_eq!(timeout("-1s").unwrap(), Some(Duration::from_secs(604_800)));
        assert!(timeout("soon").is_err());
    }
}
