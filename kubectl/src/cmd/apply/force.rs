//! `kubectl apply`'s delete flags (`--force`, `--grace-period`, `--cascade`, `--timeout`,
//! `--wait`) and upstream's `Patcher.deleteAndCreate`: with `--force`, a patch the server
//! refuses as a conflict or as invalid (an immutable field) becomes a delete, a wait until the
//! object is gone, and a create of the manifest; the old object is put back if that create fails.

use super::Run;
use crate::app::config::parse_go_duration;
use crate::cmd::mutate::DryRun;
use crate::errors::ApiError;
use crate::resource::{self, Info};
use clap::Args;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The delete flags apply shares with `kubectl delete` (upstream's `DeleteFlags`).
#[derive(Debug, Clone, Args)]
pub struct DeleteFlags {
    /// Must be "background", "orphan", or "foreground". Selects the deletion cascading strategy
    /// for the dependents (e.g. Pods created by a ReplicationController). Defaults to background.
    #[arg(long, default_value = "background", num_args = 0..=1, default_missing_value = "background", value_name = "string")]
    pub cascade: String,
    /// If true, immediately remove resources from API and bypass graceful deletion. Note that
    /// immediate deletion of some resources may result in inconsistency or data loss and
    /// requires confirmation.
    #[arg(long)]
    pub force: bool,
    /// Period of time in seconds given to the resource to terminate gracefully. Ignored if
    /// negative. Set to 1 for immediate shutdown. Can only be set to 0 when --force is true
    /// (force deletion).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "int")]
    pub grace_period: i64,
    /// The length of time to wait before giving up on a delete, zero means determine a timeout
    /// from the size of the object
    #[arg(long, default_value = "0s", value_name = "duration")]
    pub timeout: String,
    /// If true, wait for resources to be gone before returning. This waits for finalizers.
    // Upstream 1.33 reads it only for ApplySet pruning (alpha); its plain --prune does not wait.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_name = "bool")]
    pub wait: bool,
}

/// The checked flags.
#[derive(Debug, Clone)]
pub struct Force {
    pub enabled: bool,
    /// The body of the DELETE requests (force replacement and pruning).
    pub delete_options: Value,
    /// How long a replaced object may take to be gone.
    pub timeout: Duration,
}

impl DeleteFlags {
    /// Upstream's checks, in its order, against the other apply flags.
    pub fn check(&self, server_side: bool, dry_run: DryRun, prune: bool) -> anyhow::Result<Force> {
        let propagation = match self.cascade.as_str() {
            "background" => "Background",
            "foreground" => "Foreground",
            "orphan" => "Orphan",
            "true" => {
                eprintln!(
                    "warning: --cascade=true is deprecated (boolean value) and can be replaced with --cascade=background."
                );
                "Background"
            }
            "false" => {
                eprintln!(
                    "warning: --cascade=false is deprecated (boolean value) and can be replaced with --cascade=orphan."
                );
                "Orphan"
            }
            other => anyhow::bail!(
                "invalid cascade value ({other}). Must be \"background\", \"foreground\", or \"orphan\""
            ),
        };
        let timeout = parse_go_duration(&self.timeout).ok_or_else(|| {
            anyhow::anyhow!(
                "invalid argument \"{t}\" for \"--timeout\" flag: time: invalid duration \"{t}\"\nSee 'kubectl apply --help' for usage.",
                t = self.timeout
            )
        })?;
        if self.force && server_side {
            anyhow::bail!("--force cannot be used with --server-side");
        }
        if self.force && dry_run == DryRun::Server {
            anyhow::bail!("--dry-run=server cannot be used with --force");
        }
        if self.force && prune {
            anyhow::bail!("--force cannot be used with --prune");
        }
        let mut delete_options = json!({ "propagationPolicy": propagation });
        if self.grace_period >= 0 {
            delete_options["gracePeriodSeconds"] = json!(self.grace_period);
        }
        Ok(Force {
            enabled: self.force,
            delete_options,
            timeout,
        })
    }
}

impl Force {
    /// Whether a refused patch is replaced: `--force` and a conflict or an invalid object.
    pub fn replaces(&self, err: &anyhow::Error) -> bool {
        self.enabled
            && err
                .downcast_ref::<ApiError>()
                .is_some_and(|e| e.code == 409 || e.code == 422)
    }

    /// Deletes the live object, waits until it is gone and creates `modified`; if that create
    /// fails, `current` is created again and the error says both.
    pub async fn delete_and_create(
        &self,
        ctx: &Run<'_>,
        info: &Info,
        current: &Value,
        modified: &Value,
    ) -> anyhow::Result<Value> {
        let path = info.path();
        let body = serde_json::to_vec(&self.delete_options)?;
        ctx.factory
            .request(
                http::Method::DELETE,
                &path,
                Some((body, "application/json")),
                None,
            )
            .await?;
        self.wait_gone(ctx, &path).await?;
        let collection = resource::with_query(
            &info.resource.collection_path(info.namespace.as_deref()),
            &ctx.query(),
        );
        let create = |object: &Value| {
            let mut object = object.clone();
            // As the Helper's create with modify: a resourceVersion would be refused.
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
            let url = collection.clone();
            async move { crate::cmd::create::post(ctx.factory, &url, &object).await }
        };
        match create(modified).await {
            Ok(created) => Ok(created),
            Err(err) => match create(current).await {
                // The old object is back; the error still says why the new one is not.
                Ok(_) => Err(err),
                Err(restore) => Err(anyhow::anyhow!(
                    "An error occurred force-replacing the existing object with the newly provided one:\n\n{}.\n\nAdditionally, an error occurred attempting to restore the original object:\n\n{}",
                    go_error(&err),
                    go_error(&restore)
                )),
            },
        }
    }

    /// Polls every second until the object's GET is a 404, as upstream's `PollImmediate` on a
    /// context of `--timeout`: the default 0 checks once (a graceful delete then fails).
    async fn wait_gone(&self, ctx: &Run<'_>, path: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if crate::cmd::delete::is_gone(ctx.factory, path, None).await? {
                return Ok(());
            }
            if Instant::now() + Duration::from_secs(1) > deadline {
                anyhow::bail!("context deadline exceeded");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// An error as Go's `%v` prints it: a server's refusal is its message.
fn go_error(err: &anyhow::Error) -> String {
    match err.downcast_ref::<ApiError>() {
        Some(api) => api.message.clone(),
        None => format!("{err:#}"),
    }
}
