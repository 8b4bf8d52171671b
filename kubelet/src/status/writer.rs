//! Sends changed statuses to `pods/status` (a merge patch from the apiserver's status to ours,
//! with the uid as precondition) and deletes the API objects of finished pods.
//!
//! Each changed pod is written as soon as one of `WRITERS` slots is free: a pod is never held
//! behind a batch of others. The patch is computed against the status the apiserver answered
//! our previous write with (or the one the pod arrived with), so a write is one request; the
//! pod is read first only when that base is unknown (after a failure) and for static pods,
//! whose status goes to a mirror pod the kubelet must find first.

use super::patch::merge_diff;
use super::{Entry, StatusManager};
use anyhow::Context;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How often every status is checked again, whatever the notifications said.
const RESYNC: Duration = Duration::from_secs(10);
/// Status writes in flight at once.
const WRITERS: usize = 16;
/// How long one pod's write (its reads, patch and delete) may take before it is dropped and
/// retried. kube-client has no read timeout, and a request stuck in its connection pool or on
/// the server would otherwise hold the pod's status back for good (one pod of 5000 stayed
/// ContainerCreating for 11 minutes in the 500-node hollow run).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

enum Outcome {
    /// Written; the apiserver's status after the write when it answered with the pod.
    Written(Option<Box<Written>>),
    /// The API object is gone (or replaced): forget the status.
    Gone,
}

/// The apiserver's answer to a status write.
struct Written {
    status: PodStatus,
    resource_version: Option<u64>,
}

/// Pods being written, and whether they changed again meanwhile (written once more after).
type InFlight = Mutex<HashMap<String, bool>>;

impl StatusManager {
    /// Writes statuses until `shutdown`.
    pub async fn run_writer(self: Arc<Self>, client: kube::Client, shutdown: CancellationToken) {
        let Some(mut rx) = self.dirty_rx.lock().take() else {
            tracing::warn!("the status writer runs once");
            return;
        };
        let slots = Arc::new(Semaphore::new(WRITERS));
        let in_flight: Arc<InFlight> = Arc::default();
        let mut resync = tokio::time::interval(RESYNC);
        loop {
            let uids: Vec<String> = tokio::select! {
                _ = shutdown.cancelled() => return,
                Some(uid) = rx.recv() => vec![uid],
                _ = resync.tick() => self.statuses.read().keys().cloned().collect(),
            };
            for uid in uids {
                if let Some(redo) = in_flight.lock().get_mut(&uid) {
                    // One write per pod at a time keeps its writes in order.
                    *redo = true;
                    continue;
                }
                in_flight.lock().insert(uid.clone(), false);
                let (this, client, slots, in_flight, shutdown) = (
                    self.clone(),
                    client.clone(),
                    slots.clone(),
                    in_flight.clone(),
                    shutdown.clone(),
                );
                tokio::spawn(async move {
                    let Ok(_slot) = slots.acquire().await else {
                        return;
                    };
                    loop {
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            done = tokio::time::timeout(WRITE_TIMEOUT, this.sync_one(&client, &uid)) => {
                                if done.is_err() {
                                    this.write_timed_out(&uid);
                                }
                            }
                        }
                        let mut in_flight = in_flight.lock();
                        if in_flight.get(&uid) == Some(&true) {
                            in_flight.insert(uid.clone(), false);
                            continue;
                        }
                        in_flight.remove(&uid);
                        return;
                    }
                });
            }
        }
    }

    /// A write that took too long was dropped: the next one reads the pod rather than trust
    /// a base, and is due at the next resync (the pod is left dirty).
    fn write_timed_out(&self, uid: &str) {
        let Some(entry) = self.statuses.write().get_mut(uid).map(|e| {
            e.base = None;
            format!("{}/{}", e.namespace, e.name)
        }) else {
            return;
        };
        tracing::warn!(pod = %entry, timeout = ?WRITE_TIMEOUT, "updating the pod status timed out; will retry");
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
                Outcome::Written(entry.base.clone().map(|status| {
                    Box::new(Written {
                        status,
                        resource_version: entry.written_rv,
                    })
                }))
            };
            if matches!(outcome, Outcome::Written(_)) && entry.deletable && !entry.is_static {
                delete(&api, uid, &entry).await?;
            }
            anyhow::Ok(outcome)
        }
        .await;
        match result {
            Ok(Outcome::Written(base)) => {
                if let Some(e) = self.statuses.write().get_mut(uid) {
                    e.written = e.written.max(entry.version);
                    // A write that sent nothing keeps the revision of the one before.
                    if let Some(rv) = base.as_ref().and_then(|b| b.resource_version) {
                        e.written_rv = Some(rv);
                    }
                    e.base = base.map(|b| b.status);
                }
            }
            Ok(Outcome::Gone) => {
                self.statuses.write().remove(uid);
            }
            Err(e) => {
                if let Some(e) = self.statuses.write().get_mut(uid) {
                    // Whatever failed, the next try reads the pod rather than trusting a base.
                    e.base = None;
                }
                tracing::warn!(pod = %format!("{}/{}", entry.namespace, entry.name), error = %format!("{e:#}"), "updating the pod status failed; will retry")
            }
        }
    }
}

/// Our status, never moving the apiserver's terminal phase.
pub(super) fn target_status(entry: &Entry, server: &PodStatus) -> PodStatus {
    let mut status = entry.status.clone();
    if super::phase::is_terminal(server.phase.as_deref()) && server.phase != status.phase {
        status.phase = server.phase.clone();
    }
    status
}

async fn write(api: &Api<Pod>, uid: &str, entry: &Entry) -> anyhow::Result<Outcome> {
    if !entry.is_static
        && let Some(base) = &entry.base
    {
        match patch(api, uid, &entry.name, base, &target_status(entry, base)).await {
            Ok(written) => return Ok(Outcome::Written(written.map(Box::new))),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Outcome::Gone),
            // A replaced pod (uid mismatch) or a base too stale to patch from: read it.
            Err(e) => {
                tracing::debug!(uid, error = %e, "patching the pod status from its base failed; reading the pod")
            }
        }
    }
    write_after_read(api, uid, entry).await
}

async fn write_after_read(api: &Api<Pod>, uid: &str, entry: &Entry) -> anyhow::Result<Outcome> {
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
    let old = current.status.clone().unwrap_or_default();
    let written = patch(
        api,
        &target_uid,
        &entry.name,
        &old,
        &target_status(entry, &old),
    )
    .await
    .context("patching pods/status")?
    .map(|mut w| {
        // Nothing to send: the pod as read is what a write would have left.
        if w.resource_version.is_none() {
            w.resource_version = current
                .metadata
                .resource_version
                .as_deref()
                .and_then(|rv| rv.parse().ok());
        }
        w
    });
    // A mirror pod's status is not ours to remember as a base: it is read every time.
    Ok(Outcome::Written(
        written.filter(|_| !entry.is_static).map(Box::new),
    ))
}

/// Patches `name`'s status from `old` to `new` (nothing when equal); the apiserver's status
/// after the write, when it answered with the pod.
async fn patch(
    api: &Api<Pod>,
    uid: &str,
    name: &str,
    old: &PodStatus,
    new: &PodStatus,
) -> Result<Option<Written>, kube::Error> {
    let json = |s: &PodStatus| serde_json::to_value(s).map_err(kube::Error::SerdeError);
    let Some(diff) = merge_diff(&json(old)?, &json(new)?) else {
        return Ok(Some(Written {
            status: old.clone(),
            resource_version: None,
        }));
    };
    let body = json!({"metadata": {"uid": uid}, "status": diff});
    let pod = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    tracing::debug!(uid, phase = ?new.phase, "pod status patched");
    let resource_version = pod
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok());
    Ok(pod.status.map(|status| Written {
        status,
        resource_version,
    }))
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

#[cfg(test)]
mod tests;
