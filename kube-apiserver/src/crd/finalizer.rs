//! The cleanup of a deleted CRD: every instance is deleted through the store (so their own
//! finalizers and graceful deletion are honoured), and the CRD is released only once none is
//! left, as upstream's CRD finalizer does.

use crate::registry::list::ListOptions;
use crate::registry::{DeleteOptions, RegistryError};
use crate::rest::state::ApiState;
use crate::storage::cacher::{WatchEvent, WatchStart, everything};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Deletes every instance of `crd` and waits until they are gone; an error names what failed.
pub async fn delete_instances(
    state: &ApiState,
    crd: &Value,
    shutdown: &CancellationToken,
) -> Result<(), String> {
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd["status"]["acceptedNames"]["plural"]
        .as_str()
        .or_else(|| crd["spec"]["names"]["plural"].as_str())
        .unwrap_or_default();
    let Some(entry) = state.crds.preferred_entry(group, plural) else {
        // Nothing served means nothing was ever created through the API.
        return Ok(());
    };
    loop {
        let page = entry
            .store
            .list(None, &ListOptions::default())
            .await
            .map_err(|err| format!("could not list instances: {err}"))?;
        if page.items.is_empty() {
            return Ok(());
        }
        // Watch from the list's revision so no deletion falls between the pass and the wait.
        let mut events = entry
            .cacher
            .watch(
                entry.cacher.prefix(),
                WatchStart::After(page.resource_version),
                everything(),
                false,
            )
            .await
            .map_err(|err| format!("could not watch instances: {err}"))?;
        for item in &page.items {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            let namespace = item["metadata"]["namespace"].as_str();
            match entry
                .store
                .delete(namespace, name, &DeleteOptions::default())
                .await
            {
                Ok(_) | Err(RegistryError::NotFound { .. }) => {}
                Err(err) => return Err(format!("could not delete {name}: {err}")),
            }
        }
        // Instances held by finalizers go when their controllers let them: wait for a change.
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return Err("the server is shutting down".into()),
                event = events.recv() => event,
            };
            match event {
                Some(WatchEvent::Deleted(_)) | Some(WatchEvent::Error(_)) | None => break,
                Some(_) => {}
            }
        }
    }
}
