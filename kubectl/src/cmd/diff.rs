//! `kubectl diff -f`: what apply would change. The live objects and the result of a
//! server-side dry run of the apply are written as YAML into two temp trees (`LIVE-*`,
//! `MERGED-*`) and compared by `$KUBECTL_EXTERNAL_DIFF` or `diff -u -N`. Exit 0: no
//! differences, 1: differences, above 1: an error (upstream's `CheckDiffErr`).

mod program;

use super::apply::{self, Run};
use super::mutate::{self, DryRun};
use crate::app::options::GlobalOptions;
use crate::errors::{self, ApiError};
use crate::factory::Factory;
use crate::printers;
use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Flags of `kubectl diff`.
#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// Filename, directory, or URL to files contains the configuration to diff
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// If true, apply runs in the server instead of the client.
    #[arg(long)]
    pub server_side: bool,
    /// If true, server-side apply will force the changes against conflicts.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long, value_name = "string")]
    pub field_manager: Option<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// If true, include managed fields in the diff.
    #[arg(long)]
    pub show_managed_fields: bool,
}

/// Runs the diff and ends the process with its exit code, as upstream does.
pub async fn run(global: &GlobalOptions, args: &DiffArgs) -> anyhow::Result<()> {
    let code = match diff(global, args).await {
        Ok(code) => code,
        Err(err) => {
            let _ = std::io::stdout().flush();
            eprintln!("{}", errors::render(&err));
            2
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

async fn diff(global: &GlobalOptions, args: &DiffArgs) -> anyhow::Result<i32> {
    if args.filenames.is_empty() {
        anyhow::bail!("must specify one of -f and -k");
    }
    let factory = Factory::new(global).await?;
    let ctx = Run {
        factory: &factory,
        dry_run: DryRun::Server,
        field_manager: args.field_manager.clone().unwrap_or_else(|| {
            if args.server_side {
                "kubectl".to_owned()
            } else {
                "kubectl-client-side-apply".to_owned()
            }
        }),
        validation: "Strict",
        overwrite: true,
        force_conflicts: args.force_conflicts,
    };
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        ..Default::default()
    };
    let resolved = resource::resolve(&factory, &[], &sel).await?;
    let selector = args
        .selector
        .as_deref()
        .map(api_types::labels::Selector::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let live_dir = program::TempTree::new("LIVE")?;
    let merged_dir = program::TempTree::new("MERGED")?;
    for mut info in resolved.infos {
        if let Some(selector) = &selector {
            let labels = labels(info.object.as_ref());
            if !selector.matches(&labels) {
                continue;
            }
        }
        default_namespace(&mut info);
        let live = match factory.get(&info.path()).await {
            Ok(live) => Some(live),
            Err(err)
                if err
                    .downcast_ref::<ApiError>()
                    .is_some_and(ApiError::is_not_found) =>
            {
                None
            }
            Err(err) => return Err(err),
        };
        let merged = merged(&ctx, &info, live.as_ref(), args.server_side).await?;
        let (live, merged) = if info.resource.group.is_empty() && info.resource.kind == "Secret" {
            mask_secret_data(live, merged)
        } else {
            (live, merged)
        };
        let name = file_name(&info);
        write_yaml(live_dir.path(), &name, live, args.show_managed_fields)?;
        write_yaml(
            merged_dir.path(),
            &name,
            Some(merged),
            args.show_managed_fields,
        )?;
    }
    program::run(live_dir.path(), merged_dir.path())
}

/// The object as the apply would leave it, from a server-side dry run.
async fn merged(
    ctx: &Run<'_>,
    info: &Info,
    live: Option<&Value>,
    server_side: bool,
) -> anyhow::Result<Value> {
    let local = info.object.clone().unwrap_or_default();
    let (method, path, body, content_type) = match (server_side, live) {
        (true, _) => {
            let mut query = ctx.query();
            if ctx.force_conflicts {
                query.push(("force".to_owned(), "true".to_owned()));
            }
            (
                http::Method::PATCH,
                resource::with_query(&info.path(), &query),
                local,
                "application/apply-patch+yaml",
            )
        }
        (false, None) => (
            http::Method::POST,
            resource::with_query(
                &info.resource.collection_path(info.namespace.as_deref()),
                &ctx.query(),
            ),
            local,
            "application/json",
        ),
        (false, Some(live)) => {
            // Upstream diffs with the configuration without the annotation (left alone).
            let (encoded, _) = apply::modified_configuration(&local);
            let modified: Value = serde_json::from_str(&encoded)?;
            let (patch, content_type) = apply::three_way_patch(ctx, info, &modified, live)?;
            if patch.as_object().is_some_and(|p| p.is_empty()) {
                return Ok(live.clone());
            }
            let patch = with_resource_version(patch, live);
            (
                http::Method::PATCH,
                resource::with_query(&info.path(), &ctx.query()),
                patch,
                content_type,
            )
        }
    };
    let verb = if method == http::Method::POST {
        "creating"
    } else {
        "patching"
    };
    ctx.factory
        .request(
            method,
            &path,
            Some((serde_json::to_vec(&body)?, content_type)),
            None,
        )
        .await
        .map_err(|err| mutate::with_source(err, verb, info.source.as_deref()))
}

/// Upstream's masker: Secret values never reach the diff, only whether each one changed.
fn mask_secret_data(live: Option<Value>, merged: Value) -> (Option<Value>, Value) {
    let data = |v: Option<&Value>| -> Option<serde_json::Map<String, Value>> {
        v.and_then(|v| v.get("data"))
            .and_then(Value::as_object)
            .cloned()
    };
    let (mut from, mut to) = (data(live.as_ref()), data(Some(&merged)));
    let mask = |s: &str| Value::String(s.to_owned());
    if let Some(from) = from.as_mut() {
        for (k, v) in from.iter_mut() {
            match to.as_mut().and_then(|t| t.get_mut(k)) {
                Some(after) if after != v => {
                    *v = mask("*** (before)");
                    *after = mask("*** (after)");
                }
                Some(after) => {
                    *after = mask("***");
                    *v = mask("***");
                }
                None => *v = mask("***"),
            }
        }
    }
    if let Some(to) = to.as_mut() {
        for (k, v) in to.iter_mut() {
            if from.as_ref().is_none_or(|f| !f.contains_key(k)) {
                *v = mask("***");
            }
        }
    }
    let put = |object: &mut Value, data: Option<serde_json::Map<String, Value>>| {
        if let (Some(obj), Some(data)) = (object.as_object_mut(), data) {
            obj.insert("data".into(), Value::Object(data));
        }
    };
    let mut live = live;
    if let Some(live) = live.as_mut() {
        put(live, from);
    }
    let mut merged = merged;
    put(&mut merged, to);
    (live, merged)
}

/// The live resourceVersion as a precondition, so the dry run is against what was read.
fn with_resource_version(mut patch: Value, live: &Value) -> Value {
    if let (Some(rv), Some(obj)) = (
        live.pointer("/metadata/resourceVersion").cloned(),
        patch.as_object_mut(),
    ) {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("resourceVersion".into(), rv);
        }
    }
    patch
}

/// Upstream's file name: `[group.]version.Kind.namespace.name`.
fn file_name(info: &Info) -> String {
    let r = &info.resource;
    let group = if r.group.is_empty() {
        String::new()
    } else {
        format!("{}.", r.group)
    };
    format!(
        "{group}{}.{}.{}.{}",
        r.version,
        r.kind,
        info.namespace.as_deref().unwrap_or(""),
        info.name.as_deref().unwrap_or("")
    )
}

fn write_yaml(
    dir: &Path,
    name: &str,
    object: Option<Value>,
    managed_fields: bool,
) -> anyhow::Result<()> {
    let text = match object {
        Some(mut object) => {
            if !managed_fields {
                printers::strip_managed_fields(&mut object);
            }
            printers::yaml::to_go_yaml(&object)
        }
        None => String::new(),
    };
    std::fs::write(dir.join(name), text)?;
    Ok(())
}

fn default_namespace(info: &mut Info) {
    let (Some(ns), Some(meta)) = (
        info.namespace.clone(),
        info.object
            .as_mut()
            .and_then(|o| o.get_mut("metadata"))
            .and_then(Value::as_object_mut),
    ) else {
        return;
    };
    if meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        meta.insert("namespace".into(), Value::String(ns));
    }
}

fn labels(object: Option<&Value>) -> std::collections::BTreeMap<String, String> {
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

#[cfg(test)]
mod tests {
    use super::mask_secret_data;
    use serde_json::json;

    #[test]
    fn secrets_are_masked() {
        let live =
            json!({"kind": "Secret", "data": {"same": "YQ==", "changed": "Yg==", "gone": "Yw=="}});
        let merged =
            json!({"kind": "Secret", "data": {"same": "YQ==", "changed": "ZA==", "new": "ZQ=="}});
        let (live, merged) = mask_secret_data(Some(live), merged);
        assert_eq!(
            live.unwrap()["data"],
            json!({"same": "***", "changed": "*** (before)", "gone": "***"})
        );
        assert_eq!(
            merged["data"],
            json!({"same": "***", "changed": "*** (after)", "new": "***"})
        );
    }
}
