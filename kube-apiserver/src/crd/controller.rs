//! The apiserver's own CRD controller (upstream runs several in apiextensions-apiserver: naming,
//! establishing, finalizing). It follows the CRD watch cache: every change to a CRD decides
//! its names, serves or stops serving its versions, keeps `status` (acceptedNames, conditions,
//! storedVersions) current, and cleans up the instances of a deleted CRD before letting it go.

use super::conditions::{self, Condition};
use super::finalizer;
use super::registry::storage_version;
use crate::registry::{Part, RegistryError, ResourceStore};
use crate::rest::state::ApiState;
use crate::storage::cacher::{Cacher, WatchEvent};
use anyhow::Context;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub const GROUP: &str = "apiextensions.k8s.io";
pub const VERSION: &str = "v1";
pub const PLURAL: &str = "customresourcedefinitions";

/// Serves every stored CRD, then follows changes in the background until `shutdown`. Returns
/// once the stored CRDs are served, so the server's first requests already find them.
pub async fn start(state: Arc<ApiState>, shutdown: CancellationToken) -> anyhow::Result<()> {
    let cacher = state
        .entry(GROUP, VERSION, PLURAL)
        .context("customresourcedefinitions are not served")?
        .cacher
        .clone();
    let controller = Arc::new(Controller {
        state,
        finalizing: Mutex::new(HashSet::new()),
        shutdown: shutdown.clone(),
    });
    let (initial, events) = open(&cacher).await?;
    for crd in initial {
        controller.sync(crd).await;
    }
    tokio::spawn(controller.follow(cacher, events));
    Ok(())
}

struct Controller {
    state: Arc<ApiState>,
    /// CRDs whose instances are being deleted (one task each).
    finalizing: Mutex<HashSet<String>>,
    shutdown: CancellationToken,
}

async fn open(cacher: &Cacher) -> anyhow::Result<(Vec<Arc<Value>>, mpsc::Receiver<WatchEvent>)> {
    cacher
        .snapshot_and_watch()
        .await
        .map_err(|err| anyhow::anyhow!("watching CRDs: {err}"))
}

impl Controller {
    fn crd_store(&self) -> Option<&ResourceStore> {
        self.state.store(GROUP, VERSION, PLURAL)
    }

    /// Handles the CRD watch's events, re-opening it (and re-syncing everything) when it ends.
    async fn follow(self: Arc<Self>, cacher: Arc<Cacher>, mut events: mpsc::Receiver<WatchEvent>) {
        loop {
            loop {
                let event = tokio::select! {
                    _ = self.shutdown.cancelled() => return,
                    event = events.recv() => event,
                };
                match event {
                    Some(WatchEvent::Added(crd) | WatchEvent::Modified(crd)) => {
                        self.sync(crd).await
                    }
                    Some(WatchEvent::Deleted(crd)) => {
                        if self.state.crds.uninstall(name_of(&crd)) {
                            self.rebuild_openapi();
                        }
                    }
                    Some(WatchEvent::Bookmark(_) | WatchEvent::InitialEventsEnd(_)) => {}
                    Some(WatchEvent::Error(_)) | None => break,
                }
            }
            match open(&cacher).await {
                Ok((initial, reopened)) => {
                    let present: HashSet<&str> = initial.iter().map(|c| name_of(c)).collect();
                    for gone in self.state.crds.installed() {
                        if !present.contains(name_of(&gone)) {
                            self.state.crds.uninstall(name_of(&gone));
                        }
                    }
                    for crd in initial {
                        self.sync(crd).await;
                    }
                    events = reopened;
                }
                Err(err) => {
                    tracing::warn!("{err:#}; retrying");
                    tokio::select! {
                        _ = self.shutdown.cancelled() => return,
                        _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                    }
                }
            }
        }
    }

    /// Brings one CRD's serving and status in line with its spec.
    async fn sync(self: &Arc<Self>, crd: Arc<Value>) {
        let name = name_of(&crd).to_owned();
        let terminating = crd["metadata"]["deletionTimestamp"].is_string();
        let others: Vec<Arc<Value>> = self
            .state
            .crds
            .installed()
            .into_iter()
            .filter(|c| name_of(c) != name)
            .collect();
        let verdict = conditions::names_verdict(&crd, &others);
        // Once accepted, names stay served while the CRD is terminating.
        let accepted = verdict.accepted || (terminating && is_established(&crd));
        let changed = if accepted && storage_version(&crd).is_some() {
            let mut served = (*crd).clone();
            if !crd["status"]["acceptedNames"]["plural"].is_string() {
                served["status"]["acceptedNames"] = conditions::requested_names(&crd);
            }
            match self.state.crds.install(Arc::new(served)).await {
                Ok(changed) => changed,
                Err(err) => {
                    tracing::warn!(crd = %name, %err, "serving the custom resource failed");
                    return;
                }
            }
        } else {
            self.state.crds.uninstall(&name)
        };
        if changed {
            self.rebuild_openapi();
        }
        if !terminating {
            self.update_status(&name, |status| {
                conditions::apply_verdict(status, &verdict, &crd);
            })
            .await;
        } else if crate::registry::meta::finalizers(&crd)
            .iter()
            .any(|f| f == super::CLEANUP_FINALIZER)
        {
            self.start_finalizer(name);
        }
    }

    fn rebuild_openapi(&self) {
        let established: Vec<Arc<Value>> = self
            .state
            .crds
            .installed()
            .into_iter()
            .filter(|c| !c["metadata"]["deletionTimestamp"].is_string())
            .collect();
        self.state.custom_openapi.rebuild(&established);
    }

    /// Writes the CRD's status through `change`, when that changes anything.
    async fn update_status(&self, name: &str, change: impl Fn(&mut Value)) {
        let Some(store) = self.crd_store() else {
            return;
        };
        let result = store
            .guaranteed_update(None, name, Part::Status, |old| {
                let mut new = old.clone();
                if !new["status"].is_object() {
                    new["status"] = json!({});
                }
                change(&mut new["status"]);
                Ok(new)
            })
            .await;
        match result {
            Ok(_) | Err(RegistryError::NotFound { .. }) => {}
            Err(err) => tracing::warn!(crd = %name, %err, "updating the CRD's status failed"),
        }
    }

    fn start_finalizer(self: &Arc<Self>, name: String) {
        if !self.finalizing.lock().insert(name.clone()) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            this.finalize(&name).await;
            this.finalizing.lock().remove(&name);
        });
    }

    /// Deletes every instance of a terminating CRD, then removes its cleanup finalizer (which
    /// lets the store delete the CRD).
    async fn finalize(&self, name: &str) {
        self.update_status(name, |status| {
            conditions::set(
                status,
                Condition::new(
                    "Terminating",
                    true,
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                ),
            );
        })
        .await;
        let Some(crd) = self.state.crds.installed_crd(name) else {
            self.remove_finalizer(name).await;
            return;
        };
        match finalizer::delete_instances(&self.state, &crd, &self.shutdown).await {
            Ok(()) => {
                self.update_status(name, |status| {
                    conditions::set(
                        status,
                        Condition::new(
                            "Terminating",
                            false,
                            "InstanceDeletionCompleted",
                            "removed all instances",
                        ),
                    );
                })
                .await;
                self.remove_finalizer(name).await;
            }
            Err(message) => {
                self.update_status(name, |status| {
                    conditions::set(
                        status,
                        Condition::new("Terminating", true, "InstanceDeletionFailed", &message),
                    );
                })
                .await;
            }
        }
    }

    async fn remove_finalizer(&self, name: &str) {
        let Some(store) = self.crd_store() else {
            return;
        };
        let result = store
            .guaranteed_update(None, name, Part::Main, |old| {
                let mut new = old.clone();
                let kept: Vec<String> = crate::registry::meta::finalizers(old)
                    .into_iter()
                    .filter(|f| f != super::CLEANUP_FINALIZER)
                    .collect();
                crate::registry::meta::set_finalizers(&mut new, &kept);
                Ok(new)
            })
            .await;
        match result {
            Ok(_) | Err(RegistryError::NotFound { .. }) => {}
            Err(err) => tracing::warn!(crd = %name, %err, "removing the cleanup finalizer failed"),
        }
    }
}

fn is_established(crd: &Value) -> bool {
    conditions::is_true(&crd["status"], "Established")
}

fn name_of(crd: &Value) -> &str {
    crd["metadata"]["name"].as_str().unwrap_or_default()
}
