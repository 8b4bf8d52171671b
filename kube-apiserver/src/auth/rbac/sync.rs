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
use crate::storage::cacher::{Cacher, WatchEvent};

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

/// The cache's current objects of `kind` and a watch of what follows them.
async fn open(
    cacher: &Cacher,
    kind: RbacKind,
) -> anyhow::Result<(Vec<RbacObject>, mpsc::Receiver<WatchEvent>)> {
    let (values, events) = cacher
        .snapshot_and_watch()
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    Ok((
        values.iter().filter_map(|v| decode(kind, v)).collect(),
        events,
    ))
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;
    use crate::test_support::test_state;

    async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn follows_writes_to_the_store() {
        let t = test_state().await;
        let state = t.state.clone();
        let cluster_roles = state.store(GROUP, VERSION, "clusterroles").unwrap();
        let role_bindings = state.store(GROUP, VERSION, "rolebindings").unwrap();
        cluster_roles
            .create(
                None,
                json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": "reader"},
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
                }),
            )
            .await
            .unwrap();
        let namespaces = state.store("", "v1", "namespaces").unwrap();
        namespaces
            .create(
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
            )
            .await
            .unwrap();
        // Written before start: in the initial load, which start waits for.
        let cached = state
            .entry(GROUP, VERSION, "clusterroles")
            .unwrap()
            .cacher
            .clone();
        eventually("the cache has the role", || {
            cached.get("/registry/clusterroles/reader").is_some()
        })
        .await;
        let rbac = Arc::new(RbacStore::default());
        start(state.clone(), rbac.clone(), t.shutdown.clone())
            .await
            .unwrap();
        assert!(rbac.snapshot().cluster_role("reader").is_some());

        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "ns1"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "reader"},
            "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "u"}],
        });
        role_bindings.create(Some("ns1"), binding).await.unwrap();
        eventually("the binding is seen", || {
            rbac.snapshot()
                .role_bindings("ns1")
                .any(|b| b.metadata.name.as_deref() == Some("b"))
        })
        .await;

        role_bindings
            .delete(Some("ns1"), "b", &crate::registry::DeleteOptions::default())
            .await
            .unwrap();
        eventually("the binding is gone", || {
            rbac.snapshot().role_bindings("ns1").next().is_none()
        })
        .await;
        // The role itself is untouched by binding events.
        assert!(rbac.snapshot().cluster_role("reader").is_some());
    }

    /// A watch that ends is re-opened from the cache, and that kind's objects are replaced
    /// with what the cache holds: an object deleted while no watch was open goes away.
    #[tokio::test]
    async fn a_watch_that_ends_is_reopened_and_relisted() {
        use api_types::k8s_openapi::api::rbac::v1::ClusterRole;
        use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

        let t = test_state().await;
        let cluster_roles = t.state.store(GROUP, VERSION, "clusterroles").unwrap();
        let role = |name: &str| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
            })
        };
        cluster_roles.create(None, role("kept")).await.unwrap();
        let cacher = t
            .state
            .entry(GROUP, VERSION, "clusterroles")
            .unwrap()
            .cacher
            .clone();
        eventually("the cache has the role", || {
            cacher.get("/registry/clusterroles/kept").is_some()
        })
        .await;
        let stale = RbacObject::ClusterRole(ClusterRole {
            metadata: ObjectMeta {
                name: Some("stale".into()),
                ..Default::default()
            },
            ..Default::default()
        });
        let rbac = Arc::new(RbacStore::new([stale]));
        let (ended, events) = mpsc::channel(1);
        drop(ended);
        tokio::spawn(follow(
            cacher,
            RbacKind::ClusterRole,
            events,
            rbac.clone(),
            t.shutdown.clone(),
        ));
        eventually("the relist replaced the stale role", || {
            let s = rbac.snapshot();
            s.cluster_role("stale").is_none() && s.cluster_role("kept").is_some()
        })
        .await;
        // And the new watch goes on.
        cluster_roles.create(None, role("later")).await.unwrap();
        eventually("the new watch delivers", || {
            rbac.snapshot().cluster_role("later").is_some()
        })
        .await;
    }
}
