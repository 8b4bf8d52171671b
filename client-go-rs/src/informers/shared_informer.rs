//! One shared list+watch of one resource, its cache, and the handlers fed from it.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::handler::{Deleted, Notification, ResourceEventHandler};
use super::processor::{HandlerRegistration, Processor};
use crate::listers::{Indexer, IndexerError, Lister, object_key};

/// The bounds an informed type needs (all k8s-openapi types and `DynamicObject` have them).
pub trait InformerObject:
    Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}
impl<K> InformerObject for K where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

struct DispatchState<K> {
    processor: Processor<K>,
    /// Objects of a relist in progress (between `Init` and `InitDone`).
    relist: Option<HashMap<String, Arc<K>>>,
}

/// A shared informer: one list+watch feeding a cache and any number of handlers.
///
/// Get one from [`SharedInformerFactory`](super::SharedInformerFactory) so that every
/// controller of the process shares it.
pub struct SharedInformer<K> {
    api: Api<K>,
    config: watcher::Config,
    resync: Option<Duration>,
    indexer: Arc<Indexer<K>>,
    /// Serialises cache changes with handler registration, so a handler added late sees each
    /// object exactly once: in its synthetic adds or in a later notification.
    state: Mutex<DispatchState<K>>,
    synced: watch::Sender<bool>,
    started: AtomicBool,
}

impl<K> Debug for SharedInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformer")
            .field("indexer", &self.indexer)
            .field("synced", &*self.synced.borrow())
            .finish()
    }
}

impl<K: InformerObject> SharedInformer<K> {
    /// An informer over `api` with the selectors of `config`, re-delivering every cached object
    /// as an update every `resync` (none if `None`). It does nothing until [`run`](Self::run).
    pub fn new(api: Api<K>, config: watcher::Config, resync: Option<Duration>) -> Self {
        Self {
            api,
            config,
            resync,
            indexer: Arc::new(Indexer::new()),
            state: Mutex::new(DispatchState {
                processor: Processor::new(),
                relist: None,
            }),
            synced: watch::channel(false).0,
            started: AtomicBool::new(false),
        }
    }

    /// The cache.
    pub fn indexer(&self) -> &Arc<Indexer<K>> {
        &self.indexer
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.indexer.clone())
    }

    /// Adds an index to the cache (objects already cached are indexed too).
    pub fn add_indexer<F>(&self, name: &str, func: F) -> Result<(), IndexerError>
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.indexer.add_indexer(name, func)
    }

    /// Registers a handler. If the cache already holds objects, the handler first gets an add
    /// for each of them (as client-go does for handlers added after start).
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
    ) -> HandlerRegistration {
        self.add_shared_event_handler(Arc::new(handler))
    }

    /// [`add_event_handler`](Self::add_event_handler) for a handler already behind an `Arc`.
    pub fn add_shared_event_handler(
        &self,
        handler: Arc<dyn ResourceEventHandler<K>>,
    ) -> HandlerRegistration {
        let mut st = self.state.lock();
        let in_initial_list = !self.has_synced();
        let initial: Vec<Notification<K>> = self
            .indexer
            .list()
            .into_iter()
            .map(|obj| Notification::Add {
                obj,
                in_initial_list,
            })
            .collect();
        st.processor.add(handler, initial)
    }

    /// Unregisters a handler; returns whether it was registered.
    pub fn remove_event_handler(&self, reg: HandlerRegistration) -> bool {
        self.state.lock().processor.remove(reg)
    }

    /// How many handlers are registered.
    pub fn handler_count(&self) -> usize {
        self.state.lock().processor.len()
    }

    /// Waits until the first full list has reached the cache; false if `shutdown` came first.
    pub async fn wait_for_cache_sync(&self, shutdown: &CancellationToken) -> bool {
        let mut rx = self.synced.subscribe();
        tokio::select! {
            r = rx.wait_for(|s| *s) => r.is_ok(),
            _ = shutdown.cancelled() => self.has_synced(),
        }
    }

    /// Whether [`run`](Self::run) was called.
    pub fn is_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Lists and watches until `shutdown`, keeping the cache and handlers up to date.
    ///
    /// kube's watcher does the list, the watch, bookmarks and the relist after `410 Gone`;
    /// errors are retried with backoff. A second call returns at once.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        self.state
            .lock()
            .processor
            .spawn_pending(&tokio::runtime::Handle::current());
        let events = watcher::watcher(self.api.clone(), self.config.clone()).default_backoff();
        let mut events = std::pin::pin!(events);
        let mut resync = self.resync.map(|p| {
            let mut t = tokio::time::interval_at(tokio::time::Instant::now() + p, p);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                ev = events.next() => match ev {
                    Some(Ok(ev)) => self.handle_event(ev),
                    Some(Err(err)) => tracing::warn!(
                        url = self.api.resource_url(),
                        error = %err,
                        "watch failed, retrying"
                    ),
                    None => break,
                },
                _ = tick(&mut resync) => {
                    self.resync();
                }
            }
        }
        self.state.lock().processor.stop();
    }
}

impl<K: Resource + Send + Sync + 'static> SharedInformer<K> {
    /// Whether the first full list has reached the cache.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Applies one event of kube's watcher to the cache and notifies the handlers.
    ///
    /// [`run`](SharedInformer::run) calls it for each event; it is public so the translation can
    /// be driven without a server. A relist (`Init`, `InitApply`..., `InitDone`) is applied at
    /// `InitDone`: objects new to the cache are adds, known ones are updates (skipped when the
    /// resourceVersion did not change, since nothing did), and cached objects the relist did not
    /// return are deletes with [`Deleted::FinalStateUnknown`].
    pub fn handle_event(&self, event: Event<K>) {
        let mut st = self.state.lock();
        match event {
            Event::Init => st.relist = Some(HashMap::new()),
            Event::InitApply(obj) => {
                let obj = Arc::new(obj);
                match st.relist.as_mut() {
                    Some(buf) => {
                        buf.insert(object_key(obj.as_ref()), obj);
                    }
                    // Not in a relist (cannot happen with kube's watcher): apply directly.
                    None => self.apply(&mut st.processor, obj),
                }
            }
            Event::InitDone => {
                let listed = st.relist.take().unwrap_or_default();
                self.replace(&mut st.processor, listed);
                self.synced.send_replace(true);
            }
            Event::Apply(obj) => self.apply(&mut st.processor, Arc::new(obj)),
            Event::Delete(obj) => {
                let key = object_key(&obj);
                // As client-go: a delete of an object the cache never had is not delivered.
                if self.indexer.delete(&key).is_some() {
                    st.processor
                        .distribute(&Notification::Delete(Deleted::Known(Arc::new(obj))));
                }
            }
        }
    }

    /// Re-delivers every cached object as an update with `old == new`, as client-go's resync.
    pub fn resync(&self) {
        let mut st = self.state.lock();
        for obj in self.indexer.list() {
            st.processor.distribute(&Notification::Update {
                old: obj.clone(),
                new: obj,
            });
        }
    }

    fn apply(&self, processor: &mut Processor<K>, obj: Arc<K>) {
        let n = match self.indexer.insert(obj.clone()) {
            Some(old) => Notification::Update { old, new: obj },
            None => Notification::Add {
                obj,
                in_initial_list: false,
            },
        };
        processor.distribute(&n);
    }

    fn replace(&self, processor: &mut Processor<K>, listed: HashMap<String, Arc<K>>) {
        let in_initial_list = !self.has_synced();
        let vanished: Vec<String> = self
            .indexer
            .list_keys()
            .into_iter()
            .filter(|k| !listed.contains_key(k))
            .collect();
        for (key, obj) in listed {
            match self.indexer.insert_with_key(key, obj.clone()) {
                Some(old) if same_version(old.as_ref(), obj.as_ref()) => {}
                Some(old) => processor.distribute(&Notification::Update { old, new: obj }),
                None => processor.distribute(&Notification::Add {
                    obj,
                    in_initial_list,
                }),
            }
        }
        for key in vanished {
            if let Some(obj) = self.indexer.delete(&key) {
                processor.distribute(&Notification::Delete(Deleted::FinalStateUnknown {
                    key,
                    obj,
                }));
            }
        }
    }
}

fn same_version<K: Resource>(a: &K, b: &K) -> bool {
    match (&a.meta().resource_version, &b.meta().resource_version) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Waits for the next resync tick; never resolves without a resync period.
async fn tick(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}
