//! Client-side apply of one object: create it with the last-applied annotation, or patch the
//! live object with the three-way patch from that annotation, the manifest and the live state.

use super::Run;
use super::annotation::{self, last_applied};
use super::force::Force;
use crate::cmd::mutate::{self, DryRun};
use crate::discovery::ApiResource;
use crate::errors::ApiError;
use crate::resource::{self, Info};
use anyhow::Context;
use api_types::strategicpatch::{
    Schema, create_three_way_json_merge_patch, create_three_way_merge_patch,
};
use serde_json::Value;

/// Applies `info`'s manifest; the object after the change (or as it would be) and the verb.
pub async fn apply_one(
    ctx: &Run<'_>,
    info: &Info,
    force: &Force,
) -> anyhow::Result<(Value, &'static str)> {
    let manifest = info.object.clone().unwrap_or_default();
    let (_, modified) = annotation::modified_configuration(&manifest);
    let current = match ctx.factory.get(&info.path()).await {
        Ok(current) => current,
        Err(err) if is_not_found(&err) => return create(ctx, info, modified).await,
        Err(err) => {
            let verb = format!(
                "retrieving current configuration of:\n{}\nfrom server for:",
                info_string(info)
            );
            return Err(mutate::with_source(err, &verb, info.source.as_deref()));
        }
    };
    // Upstream's client dry run stops after reading the live object, which is what it shows.
    if ctx.dry_run == DryRun::Client {
        return Ok((current, "configured"));
    }
    if last_applied(&current).is_none() {
        eprintln!(
            "Warning: resource {}/{} is missing the {} annotation which is required by kubectl apply. kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically.",
            info.resource.name,
            info.name.as_deref().unwrap_or(""),
            annotation::LAST_APPLIED
        );
    }
    let (patch, content_type) = three_way_patch(ctx, info, &modified, &current)?;
    if patch.as_object().is_some_and(|p| p.is_empty()) {
        return Ok((current, "unchanged"));
    }
    let url = resource::with_query(&info.path(), &ctx.query());
    let body = serde_json::to_vec(&patch)?;
    let patched = match ctx
        .factory
        .request(http::Method::PATCH, &url, Some((body, content_type)), None)
        .await
    {
        Ok(patched) => patched,
        // Upstream then names the manifest where it named the patch.
        Err(err) if force.replaces(&err) => force
            .delete_and_create(ctx, info, &current, &modified)
            .await
            .map_err(|err| with_replace_context(err, &modified, info))?,
        Err(err) => return Err(with_patch_context(err, &patch, info)),
    };
    Ok((patched, "configured"))
}

async fn create(
    ctx: &Run<'_>,
    info: &Info,
    object: Value,
) -> anyhow::Result<(Value, &'static str)> {
    if ctx.dry_run == DryRun::Client {
        return Ok((object, "created"));
    }
    let url = resource::with_query(
        &info.resource.collection_path(info.namespace.as_deref()),
        &ctx.query(),
    );
    let created = ctx
        .factory
        .request(
            http::Method::POST,
            &url,
            Some((serde_json::to_vec(&object)?, "application/json")),
            None,
        )
        .await
        .map_err(|err| mutate::with_source(err, "creating", info.source.as_deref()))?;
    Ok((created, "created"))
}

/// The patch and its content type: strategic for built-in kinds, JSON merge for the rest.
pub fn three_way_patch(
    ctx: &Run<'_>,
    info: &Info,
    modified: &Value,
    current: &Value,
) -> anyhow::Result<(Value, &'static str)> {
    let original: Value = match last_applied(current) {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text)
            .context("decoding the last-applied-configuration annotation")?,
        _ => Value::Null,
    };
    patch_between(&info.resource, &original, modified, current, ctx.overwrite)
}

/// [`three_way_patch`] from an explicit original (what `edit` diffs against), overwriting.
pub fn three_way_patch_for(
    resource: &ApiResource,
    original: &Value,
    modified: &Value,
    current: &Value,
) -> anyhow::Result<(Value, &'static str)> {
    patch_between(resource, original, modified, current, true)
}

fn patch_between(
    resource: &ApiResource,
    original: &Value,
    modified: &Value,
    current: &Value,
    overwrite: bool,
) -> anyhow::Result<(Value, &'static str)> {
    if super::is_built_in(&resource.group) {
        let schema = Schema::for_kind(&resource.group, &resource.kind);
        let patch = create_three_way_merge_patch(original, modified, current, schema, overwrite)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| {
                format!(
                    "creating patch with:\noriginal:\n{original}\nmodified:\n{modified}\ncurrent:\n{current}\nfor:"
                )
            })?;
        Ok((patch, "application/strategic-merge-patch+json"))
    } else {
        let patch = create_three_way_json_merge_patch(original, modified, current);
        Ok((patch, "application/merge-patch+json"))
    }
}

fn is_not_found(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ApiError>()
        .is_some_and(ApiError::is_not_found)
}

/// Upstream names the patch and the object when a patch is refused.
fn with_patch_context(err: anyhow::Error, patch: &Value, info: &Info) -> anyhow::Error {
    let Some(api) = err.downcast_ref::<ApiError>() else {
        return err;
    };
    let what = format!(
        "applying patch:\n{}\nto:\n{}\nfor:",
        annotation::go_json(patch).trim_end(),
        info_string(info)
    );
    ApiError {
        message: format!(
            "error when {what} \"{}\": {}",
            info.source.as_deref().unwrap_or(""),
            api.message
        ),
        ..api.clone()
    }
    .into()
}

/// A failed force replacement as upstream words it: the manifest where the patch was (the
/// encoded manifest ends in a newline, hence the blank line), any error, not only a server's.
fn with_replace_context(err: anyhow::Error, modified: &Value, info: &Info) -> anyhow::Error {
    let what = format!(
        "error when applying patch:\n{}\n\nto:\n{}\nfor: \"{}\"",
        annotation::go_json(modified).trim_end(),
        info_string(info),
        info.source.as_deref().unwrap_or("")
    );
    match err.downcast_ref::<ApiError>() {
        Some(api) => ApiError {
            message: format!("{what}: {}", api.message),
            ..api.clone()
        }
        .into(),
        None => anyhow::anyhow!("{what}: {err:#}"),
    }
}

/// Upstream's `Info.String()`.
pub fn info_string(info: &Info) -> String {
    let r = &info.resource;
    format!(
        "Resource: \"{g}/{v}, Resource={res}\", GroupVersionKind: \"{g}/{v}, Kind={kind}\"\nName: \"{name}\", Namespace: \"{ns}\"",
        g = r.group,
        v = r.version,
        res = r.name,
        kind = r.kind,
        name = info.name.as_deref().unwrap_or(""),
        ns = info.namespace.as_deref().unwrap_or("")
    )
}
