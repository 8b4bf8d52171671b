//! Server-side apply of one object: the manifest sent whole as an apply patch; the server
//! merges it by field ownership and answers a conflict with the fields and their managers.

use super::Run;
use crate::errors::ApiError;
use crate::resource::{self, Info};
use serde_json::Value;

/// Upstream's advice after the server's conflict message.
const CONFLICT_ADVICE: &str =
    "Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts";

pub async fn apply_one(ctx: &Run<'_>, info: &Info) -> anyhow::Result<(Value, &'static str)> {
    let object = info.object.clone().unwrap_or_default();
    let mut query = ctx.query();
    if ctx.force_conflicts {
        query.push(("force".to_owned(), "true".to_owned()));
    }
    let url = resource::with_query(&info.path(), &query);
    let body = serde_json::to_vec(&object)?;
    match ctx
        .factory
        .request(
            http::Method::PATCH,
            &url,
            Some((body, "application/apply-patch+yaml")),
            None,
        )
        .await
    {
        Ok(applied) => Ok((applied, "serverside-applied")),
        Err(err) => Err(match err.downcast_ref::<ApiError>() {
            // A plain error, not a server error: upstream wraps it with the advice.
            Some(api) if api.is_conflict() => {
                anyhow::anyhow!("{}\n{CONFLICT_ADVICE}", api.message)
            }
            _ => err,
        }),
    }
}
