//! The shared informer factory: one informer per resource (and selectors) per process.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject};
use kube::core::NamespaceScope;
use kube::runtime::watcher;
use kube::{Api, Client};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::shared_informer::{InformerObject, SharedInformer};

/// Which objects an informer lists and watches, beyond its resource type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InformerOptions {
    /// Only this namespace (all namespaces if `None`); ignored for cluster-scoped resources.
    pub namespace: Option<String>,
    /// A label selector, as the apiserver parses it.
    pub label_selector: Option<String>,
    /// A field selector, as the apiserver parses it.
    pub field_selector: Option<String>,
}

impl InformerOptions {
    /// Restricts to one namespace.
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }

    /// Restricts by label selector.
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Restricts by field selector.
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    fn watcher_config(&self) -> watcher::Config {
        let mut config = watcher::Config::default().any_semantic();
        if let Some(l) = &self.label_selector {
            config = config.labels(l);
        }
        if let Some(f) = &self.field_selector {
            config = config.fields(f);
        }
        config
    }
}

/// What makes two informer requests the same informer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    /// `apiVersion/plural`: tells dynamic resources apart (they share one Rust type).
    resource: String,
    options: InformerOptions,
}

/// The factory's view of an informer whatever its type.
trait ErasedInformer: Send + Sync {
    fn spawn(self: Arc<Self>, shutdown: CancellationToken) -> JoinHandle<()>;
    fn has_synced(&self) -> bool;
    fn wait_for_cache_sync<'a>(
        &'a self,
        shutdown: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, bool>;
}

impl<K: InformerObject> ErasedInformer for SharedInformer<K> {
    fn spawn(self: Arc<Self>, shutdown: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(self.run(shutdown))
    }
    fn has_synced(&self) -> bool {
        SharedInformer::has_synced(self)
    }
    fn wait_for_cache_sync<'a>(
        &'a self,
        shutdown: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, bool> {
        Box::pin(SharedInformer::wait_for_cache_sync(self, shutdown))
    }
}

struct Entry {
    typed: Arc<dyn Any + Send + Sync>,
    erased: Arc<dyn ErasedInformer>,
    started: bool,
}

#[derive(Default)]
struct Inner {
    informers: HashMap<InformerKey, Entry>,
    tasks: Vec<JoinHandle<()>>,
}

/// Hands out shared informers, as client-go's `SharedInformerFactory`: asking twice for the same
/// resource with the same options returns the same informer, so a process runs one list+watch
/// per resource however many controllers use it.
///
/// Informers are created on request and run from [`start`](Self::start); informers requested
/// after a `start` need another `start` (as in client-go).
pub struct SharedInformerFactory {
    client: Client,
    default_resync: Option<Duration>,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("default_resync", &self.default_resync)
            .field("informers", &self.inner.lock().informers.len())
            .finish()
    }
}

impl SharedInformerFactory {
    /// A factory whose informers resync every `default_resync` (never if `None`).
    pub fn new(client: Client, default_resync: Option<Duration>) -> Self {
        Self {
            client,
            default_resync,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The client the informers use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The shared informer of every `K` object, in all namespaces.
    pub fn informer<K>(&self) -> Arc<SharedInformer<K>>
    where
        K: InformerObject,
        K::DynamicType: Default,
    {
        self.informer_with_api::<K>(InformerOptions::default(), |c| Api::all(c))
    }

    /// The shared informer of `K` objects matching `options` (namespace and selectors).
    pub fn informer_with<K>(&self, options: InformerOptions) -> Arc<SharedInformer<K>>
    where
        K: InformerObject,
        K::DynamicType: Default,
        K::Scope: NamespaceScope,
    {
        let ns = options.namespace.clone();
        self.informer_with_api::<K>(options, move |c| match &ns {
            Some(ns) => Api::all(c).constrain(ns),
            None => Api::all(c),
        })
    }

    /// The shared informer of a cluster-scoped `K` filtered by selectors (the namespace option
    /// is ignored: the resource has none).
    pub fn cluster_informer_with<K>(&self, mut options: InformerOptions) -> Arc<SharedInformer<K>>
    where
        K: InformerObject,
        K::DynamicType: Default,
    {
        options.namespace = None;
        self.informer_with_api::<K>(options, |c| Api::all(c))
    }

    /// The shared informer of a resource known at run time (CRDs, `kubectl`-style dynamic use).
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        options: InformerOptions,
    ) -> Arc<SharedInformer<DynamicObject>> {
        let key = InformerKey {
            type_id: TypeId::of::<DynamicObject>(),
            resource: format!("{}/{}", resource.api_version, resource.plural),
            options: options.clone(),
        };
        let ar = resource.clone();
        self.get_or_create(key, || {
            let api = Api::<DynamicObject>::all_with(self.client.clone(), &ar);
            let api = match &options.namespace {
                Some(ns) => api.constrain(ns),
                None => api,
            };
            SharedInformer::new(api, options.watcher_config(), self.default_resync)
        })
    }

    fn informer_with_api<K>(
        &self,
        options: InformerOptions,
        make_api: impl FnOnce(Client) -> Api<K>,
    ) -> Arc<SharedInformer<K>>
    where
        K: InformerObject,
        K::DynamicType: Default,
    {
        let dt = K::DynamicType::default();
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource: format!("{}/{}", K::api_version(&dt), K::plural(&dt)),
            options: options.clone(),
        };
        self.get_or_create(key, || {
            SharedInformer::new(
                make_api(self.client.clone()),
                options.watcher_config(),
                self.default_resync,
            )
        })
    }

    fn get_or_create<K: InformerObject>(
        &self,
        key: InformerKey,
        create: impl FnOnce() -> SharedInformer<K>,
    ) -> Arc<SharedInformer<K>> {
        let mut inner = self.inner.lock();
        if let Some(entry) = inner.informers.get(&key)
            && let Ok(informer) = entry.typed.clone().downcast::<SharedInformer<K>>()
        {
            return informer;
        }
        let informer = Arc::new(create());
        inner.informers.insert(
            key,
            Entry {
                typed: informer.clone(),
                erased: informer.clone(),
                started: false,
            },
        );
        informer
    }

    /// How many distinct informers were requested.
    pub fn informer_count(&self) -> usize {
        self.inner.lock().informers.len()
    }

    /// Runs every informer not yet started until `shutdown` is cancelled.
    ///
    /// Must be called within a tokio runtime.
    pub fn start(&self, shutdown: &CancellationToken) {
        let mut inner = self.inner.lock();
        let Inner { informers, tasks } = &mut *inner;
        for entry in informers.values_mut().filter(|e| !e.started) {
            entry.started = true;
            tasks.push(entry.erased.clone().spawn(shutdown.child_token()));
        }
    }

    /// Waits until every started informer has synced; false if `shutdown` came first.
    pub async fn wait_for_cache_sync(&self, shutdown: &CancellationToken) -> bool {
        let started: Vec<Arc<dyn ErasedInformer>> = self
            .inner
            .lock()
            .informers
            .values()
            .filter(|e| e.started)
            .map(|e| e.erased.clone())
            .collect();
        for informer in started {
            if !informer.wait_for_cache_sync(shutdown).await {
                return false;
            }
        }
        true
    }

    /// Whether every started informer has synced.
    pub fn has_synced(&self) -> bool {
        self.inner
            .lock()
            .informers
            .values()
            .filter(|e| e.started)
            .all(|e| e.erased.has_synced())
    }

    /// Waits for the informer tasks to end (after the `start` token is cancelled), as
    /// client-go's `factory.Shutdown()`.
    pub async fn shutdown(&self) {
        let tasks = std::mem::take(&mut self.inner.lock().tasks);
        for t in tasks {
            if let Err(err) = t.await
                && err.is_panic()
            {
                tracing::error!(error = %err, "informer task panicked");
            }
        }
    }
}
