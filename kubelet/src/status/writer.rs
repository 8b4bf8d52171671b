//! Sends changed statuses to `pods/status` (a merge patch from the apiserver's status to ours,
//! with the uid as precondition) and deletes the API objects of finished pods.

use super::patch::merge_diff;
use super::{Entry, StatusManager};
use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often every status is checked again, whatever the notifications said.
const RESYNC: Duration = Duration::from_secs(10);
/// Status writes in flight at once.
const WRITERS: usize = 16;

enum Outcome {
    Written,
    /// The API object is gone (or replaced): forget the status.
    Gone,
}

impl StatusManager {
    /// Writes statuses until `shutdown`.
    pub async fn run_writer(self: Arc<Self>, client: kube::Client, shutdown: CancellationToken) {
        let Some(mut rx) = self.dirty_rx.lock().take() else {
            tracing::warn!("the status writer runs once");
            return;
        };
        let mut resync = tokio::time::interval(RESYNC);
        loop {
            let uids: Vec<String> = tokio::select! {
                _ = shutdown.cancelled() => return,
                Some(uid) = rx.recv() => {
                    let mut uids = vec![uid];
                    while let Ok(more) = rx.try_recv() {
                        if !uids.contains(&more) {
                            uids.push(more);
                        }
                    }
                    uids
                }
                _ = resync.tick() => self.statuses.read().keys().cloned().collect(),
            };
            // Pods are independent: a burst of new pods is written in parallel, each pod's
            // writes still in order (a uid appears once per batch).
            futures::stream::iter(uids)
                .for_each_concurrent(WRITERS, |uid| {
                    let this = &self;
                    let client = &client;
                    async move { this.sync_one(client, &uid).await }
                })
                .await;
        }
    }

    async fn sync_one(&self, client: &kube::Client, uid: &str) {
        let Some(entry) = self.statuses.read().get(uid).cloned() else {
            return;
        };
        let needs_write = entry.written < entry.version;
        if !needs_write && !entry.deletable {
            return;
        }
        let api: Api<Pod> = Api::namespaced(client.clone(), &entry.namespace);
        let result = async {
            let outcome = if needs_write {
                write(&api, uid, &entry).await?
            } else {
                Outcome::Written
            };
            if matches!(outcome, Outcome::Written) && entry.deletable && !entry.is_static {
                delete(&api, uid, &entry).await?;
            }
            anyhow::Ok(outcome)
        }
        .await;
        match result {
            Ok(Outcome::Written) => {
                if let Some(e) = self.statuses.write().get_mut(uid) {
                    e.written = e.written.max(entry.version);
                }
            }
            Ok(Outcome::Gone) => {
                self.statuses.write().remove(uid);
            }
            Err(e) => {
                tracing::warn!(pod = %format!("{}/{}", entry.namespace, entry.name), error = %format!("{e:#}"), "updating the pod status failed; will retry")
            }
        }
    }
}

async fn write(api: &Api<Pod>, uid: &str, entry: &Entry) -> anyhow::Result<Outcome> {
    let Some(current) = api.get_opt(&entry.name).await.context("reading the pod")? else {
        return Ok(Outcome::Gone);
    };
    let current_uid = current.metadata.uid.clone().unwrap_or_default();
    let target_uid = if entry.is_static {
        if !crate::pod::is_mirror_pod(&current) {
            // No mirror pod yet: housekeeping creates it and the resync writes later.
            anyhow::bail!("the static pod has no mirror pod yet");
        }
        let mirror_of = current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(crate::pod::CONFIG_MIRROR_ANNOTATION));
        if mirror_of.map(String::as_str) != Some(uid) {
            // The mirror of another version of this static pod (edited manifest).
            return Ok(Outcome::Gone);
        }
        current_uid
    } else if current_uid != uid {
        return Ok(Outcome::Gone);
    } else {
        current_uid
    };
    let mut status = entry.status.clone();
    let old = current.status.clone().unwrap_or_default();
    if super::phase::is_terminal(old.phase.as_deref()) && old.phase != status.phase {
        status.phase = old.phase.clone();
    }
    let old_json = serde_json::to_value(&old)?;
    let new_json = serde_json::to_value(&status)?;
    let Some(diff) = merge_diff(&old_json, &new_json) else {
        return Ok(Outcome::Written);
    };
    let body = json!({"metadata": {"uid": target_uid}, "status": diff});
    api.patch_status(&entry.name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .context("patching pods/status")?;
    Ok(Outcome::Written)
}

async fn delete(api: &Api<Pod>, uid: &str, entry: &Entry) -> anyhow::Result<()> {
    let Some(current) = api.get_opt(&entry.name).await? else {
        return Ok(());
    };
    if current.metadata.uid.as_deref() != Some(uid) || current.metadata.deletion_timestamp.is_none()
    {
        return Ok(());
    }
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(&entry.name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e).context("deleting the finished pod"),
    }
}
