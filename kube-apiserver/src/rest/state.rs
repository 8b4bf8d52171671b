//! Every resource the apiserver serves: its store and the watch cache of its key prefix.

use crate::admission::Chain;
use crate::auth::rbac::RbacStore;
use crate::http::auth::authorizer::{AlwaysAllow, Authorizer};
use crate::http::auth::service_account::TokenSigner;
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::registry::ResourceStore;
use crate::registry::keys;
use crate::registry::services::ServiceAllocator;
use crate::storage::backend::{Backend, StorageError};
use crate::storage::cacher::Cacher;
use api_types::registry::{self, ResourceInfo};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// One served (group, version, resource).
pub struct ResourceEntry {
    pub store: ResourceStore,
    /// Shared by every version of the resource stored under the same prefix.
    pub cacher: Arc<Cacher>,
    /// What a custom resource's version adds (schema, printer columns, scale); None for
    /// built-in resources.
    pub custom: Option<Arc<crate::crd::CustomResource>>,
}

impl ResourceEntry {
    /// An object as this entry serves it: a custom resource in the requested version (the
    /// `None` conversion sets `apiVersion`, the `Webhook` one calls the CRD's webhook) with
    /// its schema's defaults applied, as upstream defaults custom resources read from
    /// storage. Built-in resources are returned as they are, without awaiting anything.
    pub async fn output(&self, object: Value) -> Result<Value, ApiError> {
        match &self.custom {
            Some(custom) => custom.serve(self.store.info(), object).await,
            None => Ok(object),
        }
    }

    /// The items of a list as this entry serves them: one conversion review for the list.
    pub async fn output_list(&self, items: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        match &self.custom {
            Some(custom) => custom.serve_list(self.store.info(), items).await,
            None => Ok(items),
        }
    }
}

/// What the write path consults about who may do what: admission, the authorizer (for the
/// RBAC escalation check), the RBAC objects and the service account token signer. Set once
/// after start-up, because the authorizers themselves read the state's caches.
pub struct Security {
    pub admission: Arc<Chain>,
    pub authorizer: Arc<dyn Authorizer>,
    /// The RBAC objects, when `--authorization-mode` includes RBAC.
    pub rbac: Option<Arc<RbacStore>>,
    /// `--service-account-signing-key-file`: TokenRequest is served only with one.
    pub token_signer: Option<Arc<TokenSigner>>,
    /// `--api-audiences`: a TokenRequest naming none gets these.
    pub api_audiences: Vec<String>,
}

impl Default for Security {
    /// No admission plugin, everything allowed, no token signer.
    fn default() -> Self {
        Security {
            admission: Arc::new(Chain::of(Vec::new())),
            authorizer: Arc::new(AlwaysAllow),
            rbac: None,
            token_signer: None,
            api_audiences: Vec::new(),
        }
    }
}

/// The resources of the server, by (group, version, plural).
pub struct ApiState {
    entries: HashMap<(&'static str, &'static str, &'static str), Arc<ResourceEntry>>,
    pub backend: Arc<dyn Backend>,
    /// The OpenAPI documents of the established CRDs, rebuilt by the CRD controller.
    pub custom_openapi: crate::openapi::custom::CustomDocuments,
    security: OnceLock<Security>,
    /// How the proxying subresources reach kubelets (`--kubelet-*`).
    kubelet_client: OnceLock<Arc<crate::rest::proxy::KubeletClientConfig>>,
    /// The custom resources of the installed CRDs.
    pub crds: Arc<crate::crd::registry::CrdRegistry>,
}

impl ApiState {
    /// Starts one watch cache per storage prefix and a store for every persisted resource.
    pub async fn start(
        backend: Arc<dyn Backend>,
        services: Arc<ServiceAllocator>,
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
                Arc::new(ResourceEntry {
                    store,
                    cacher,
                    custom: None,
                }),
            );
        }
        // The CRD registry resolves conversion webhooks' services through the state that
        // owns it, hence the weak self-reference.
        Ok(Arc::new_cyclic(|state: &std::sync::Weak<Self>| {
            let lookup: std::sync::Weak<dyn ObjectLookup> = state.clone();
            Self {
                entries,
                crds: Arc::new(crate::crd::registry::CrdRegistry::new(
                    backend.clone(),
                    shutdown.clone(),
                    lookup,
                )),
                backend,
                security: OnceLock::new(),
                kubelet_client: OnceLock::new(),
                custom_openapi: Default::default(),
            }
        }))
    }

    /// Sets what the write path consults; only the first call counts.
    pub fn set_security(&self, security: Security) {
        if self.security.set(security).is_err() {
            tracing::warn!("the apiserver's security settings were already set");
        }
    }

    /// What the write path consults (permissive defaults until set).
    pub fn security(&self) -> &Security {
        static PERMISSIVE: std::sync::LazyLock<Security> =
            std::sync::LazyLock::new(Security::default);
        self.security.get().unwrap_or(&PERMISSIVE)
    }

    /// Sets the kubelet client (`--kubelet-*`); only the first call counts.
    pub fn set_kubelet_client(&self, config: crate::rest::proxy::KubeletClientConfig) {
        if self.kubelet_client.set(Arc::new(config)).is_err() {
            tracing::warn!("the apiserver's kubelet client was already set");
        }
    }

    /// The kubelet client (upstream's defaults until set).
    pub fn kubelet_client(&self) -> Arc<crate::rest::proxy::KubeletClientConfig> {
        self.kubelet_client.get_or_init(Default::default).clone()
    }

    /// The entry of a served resource.
    pub fn entry(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceEntry>> {
        registry::by_group_version_resource(group, version, plural).and_then(
            |info: &ResourceInfo| self.entries.get(&(info.group, info.version, info.plural)),
        )
    }

    /// The entry of a served resource, built-in or custom, as requests name it.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceEntry>> {
        match self.entry(group, version, plural) {
            Some(entry) => Some(entry.clone()),
            None => self.crds.entry(group, version, plural),
        }
    }

    /// The store of a served resource (for bootstrap and internal writers).
    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceStore> {
        self.entry(group, version, plural).map(|e| &e.store)
    }
}

impl ObjectLookup for ApiState {
    fn get(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<Value>> {
        let info = registry::by_group_resource(group, plural)?;
        let entry = self.entries.get(&(info.group, info.version, info.plural))?;
        let namespace = namespace.filter(|_| info.namespaced);
        entry.cacher.get(&keys::object_key(info, namespace, name))
    }

    fn list(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        filter: &(dyn Fn(&Value) -> bool + Send + Sync),
    ) -> Vec<Arc<Value>> {
        let Some(info) = registry::by_group_resource(group, plural) else {
            return Vec::new();
        };
        let Some(entry) = self.entries.get(&(info.group, info.version, info.plural)) else {
            return Vec::new();
        };
        let namespace = namespace.filter(|_| info.namespaced);
        let prefix = keys::namespace_prefix(info, namespace);
        entry.cacher.list_with(&prefix, filter)
    }
}
