//! Every resource the apiserver serves: its store and the watch cache of its key prefix.

use crate::registry::ResourceStore;
use crate::registry::keys;
use crate::registry::services::ServiceAllocator;
use crate::rest::reviews::Reviewers;
use crate::storage::backend::{Backend, StorageError};
use crate::storage::cacher::Cacher;
use api_types::registry::{self, ResourceInfo};
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One served (group, version, resource).
pub struct ResourceEntry {
    pub store: ResourceStore,
    /// Shared by every version of the resource stored under the same prefix.
    pub cacher: Arc<Cacher>,
}

/// The resources of the server, by (group, version, plural).
pub struct ApiState {
    entries: HashMap<(&'static str, &'static str, &'static str), Arc<ResourceEntry>>,
    pub backend: Arc<dyn Backend>,
    /// What the review APIs (whoami, can-i) consult.
    pub reviewers: Reviewers,
}

impl ApiState {
    /// Starts one watch cache per storage prefix and a store for every persisted resource.
    pub async fn start(
        backend: Arc<dyn Backend>,
        services: Arc<ServiceAllocator>,
        reviewers: Reviewers,
        shutdown: CancellationToken,
    ) -> Result<Arc<Self>, StorageError> {
        let mut cachers: HashMap<String, Arc<Cacher>> = HashMap::new();
        let mut entries = HashMap::new();
        for info in registry::all().iter().filter(|i| i.storage.is_some()) {
            let prefix = keys::resource_prefix(info);
            let cacher = match cachers.get(&prefix) {
                Some(cacher) => cacher.clone(),
                None => {
                    let cacher =
                        Cacher::start(backend.clone(), prefix.clone(), shutdown.clone()).await?;
                    cachers.insert(prefix, cacher.clone());
                    cacher
                }
            };
            let mut store = ResourceStore::new(info, backend.clone());
            if info.group.is_empty() && info.plural == "services" {
                store = store.with_service_allocator(services.clone());
            }
            entries.insert(
                (info.group, info.version, info.plural),
                Arc::new(ResourceEntry { store, cacher }),
            );
        }
        Ok(Arc::new(Self {
            entries,
            backend,
            reviewers,
        }))
    }

    /// The entry of a served resource.
    pub fn entry(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceEntry>> {
        registry::by_group_version_resource(group, version, plural).and_then(
            |info: &ResourceInfo| self.entries.get(&(info.group, info.version, info.plural)),
        )
    }

    /// The store of a served resource (for bootstrap and internal writers).
    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceStore> {
        self.entry(group, version, plural).map(|e| &e.store)
    }
}
