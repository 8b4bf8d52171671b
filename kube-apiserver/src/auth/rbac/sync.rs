//! Keeps an `RbacStore` current from the apiserver's own watch caches, as upstream's RBAC
//! authorizer reads from shared informers: an initial load of Roles, ClusterRoles and their
//! bindings, then every change as it is stored. A watch that ends (the cache re-listed, or
//! this watcher fell behind) is re-opened from the cache's current state, and that resource's
//! objects are replaced with it, so a missed event cannot leave a stale grant behind.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::state::{RbacKind, RbacObject, RbacStore};
use crate::rest::state::ApiState;
use crate::storage::cacher::{Cacher, WatchEvent, WatchStart, everything};

const GROUP: &str = "rbac.authorization.k8s.io";
const VERSION: &str = "v1";

/// How long to wait before re-opening a watch that could not be opened.
const RETRY_DELAY: Duration = Duration::from_millis(500);

/// The four RBAC resources, with the kind each holds.
const RESOURCES: [(&str, RbacKind); 4] = [
    ("clusterroles", RbacKind::ClusterRole),
    ("clusterrolebindings", RbacKind::ClusterRoleBinding),
    ("roles", RbacKind::Role),
    ("rolebindings", RbacKind::RoleBinding),
];

/// Loads every RBAC object into `rbac`, then keeps it current in the background until
/// `shutdown`. Returns once the initial load is in `rbac`, so a server can start answering
/// requests only after RBAC knows the stored policy.
pub async fn start(
    state: Arc<ApiState>,
    rbac: Arc<RbacStore>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut objects = Vec::new();
    let mut streams = Vec::new();
    for (plural, kind) in RESOURCES {
        let cacher = state
            .entry(GROUP, VERSION, plural)
            .with_context(|| format!("{plural}.{GROUP} is not served"))?
            .cacher
            .clone();
        let (initial, events) = open(&cacher, kind)
            .await
            .with_context(|| format!("watching {plural}.{GROUP}"))?;
        objects.extend(initial);
        streams.push((cacher, kind, events));
    }
    rbac.replace(objects);
    for (cacher, kind, events) in streams {
        tokio::spawn(follow(cacher, kind, events, rbac.clone(), shutdown.clone()));
    }
    Ok(())
}

/// [`start`] for callers that run the whole thing as one task: loads, then follows until
/// `shutdown`.
pub async fn keep_current(
    state: Arc<ApiState>,
    rbac: Arc<RbacStore>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    start(state, rbac, shutdown.clone()).await?;
    shutdown.cancelled().await;
    Ok(())
}

/// Opens a watch of the cache's whole prefix from its current state and reads that state up to
/// the end-of-initial-events marker: no change can fall between the list and the watch.
async fn open(
    cacher: &Cacher,
    kind: RbacKind,
) -> anyhow::Result<(Vec<RbacObject>, mpsc::Receiver<WatchEvent>)> {
    let mut events = cacher
        .watch(
            cacher.prefix(),
            WatchStart::InitialState { end_bookmark: true },
            everything(),
            false,
        )
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let mut objects = Vec::new();
    loop {
        match events.recv().await {
            Some(WatchEvent::Added(v) | WatchEvent::Modified(v)) => {
                objects.extend(decode(kind, &v));
            }
            Some(WatchEvent::InitialEventsEnd(_)) => return Ok((objects, events)),
            Some(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => {}
            Some(WatchEvent::Error(err)) => anyhow::bail!("{err}"),
            None => anyhow::bail!("the watch ended before its initial events"),
        }
    }
}

/// Applies one resource's events to `rbac`, re-opening the watch whenever it ends.
async fn follow(
    cacher: Arc<Cacher>,
    kind: RbacKind,
    mut events: mpsc::Receiver<WatchEvent>,
    rbac: Arc<RbacStore>,
    shutdown: CancellationToken,
) {
    loop {
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                event = events.recv() => event,
            };
            match event {
                Some(WatchEvent::Added(v) | WatchEvent::Modified(v)) => {
                    if let Some(object) = decode(kind, &v) {
                        rbac.upsert(object);
                    }
                }
                Some(WatchEvent::Deleted(v)) => {
                    if let Some(object) = decode(kind, &v) {
                        rbac.delete(&object);
                    }
                }
                Some(WatchEvent::Bookmark(_) | WatchEvent::InitialEventsEnd(_)) => {}
                Some(WatchEvent::Error(err)) => {
                    tracing::info!(?kind, "RBAC watch ended: {err}; re-listing");
                    break;
                }
                None => break,
            }
        }
        events = loop {
            if shutdown.is_cancelled() {
                return;
            }
            match open(&cacher, kind).await {
                Ok((objects, events)) => {
                    rbac.replace_kind(kind, objects);
                    break events;
                }
                Err(err) => {
                    tracing::warn!(?kind, "re-opening the RBAC watch: {err:#}");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(RETRY_DELAY) => {}
                    }
                }
            }
        };
    }
}

/// The typed object, or `None` (logged) for one that does not parse: a malformed object must
/// not stop the authorizer from learning of the others.
fn decode(kind: RbacKind, value: &Value) -> Option<RbacObject> {
    let v = value.clone();
    let parsed = match kind {
        RbacKind::Role => serde_json::from_value(v).map(RbacObject::Role),
        RbacKind::ClusterRole => serde_json::from_value(v).map(RbacObject::ClusterRole),
        RbacKind::RoleBinding => serde_json::from_value(v).map(RbacObject::RoleBinding),
        RbacKind::ClusterRoleBinding => {
            serde_json::from_value(v).map(RbacObject::ClusterRoleBinding)
        }
    };
    match parsed {
        Ok(object) => Some(object),
        Err(err) => {
            let name = value["metadata"]["name"].as_str().unwrap_or_default();
            let namespace = value["metadata"]["namespace"].as_str().unwrap_or_default();
            tracing::warn!(?kind, namespace, name, "skipping an RBAC object: {err}");
            None
        }
    }
}
