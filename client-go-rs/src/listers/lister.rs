//! Read-only listers over an [`Indexer`], as client-go's generated listers.

use std::sync::Arc;

use api_types::labels::Selector;
use kube::Resource;

use super::indexer::{Indexer, IndexerError};

/// A read-only view of an informer's cache, the type controllers keep.
///
/// Cloning is cheap (it shares the indexer).
pub struct Lister<K> {
    indexer: Arc<Indexer<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
        }
    }
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .finish()
    }
}

impl<K> Lister<K> {
    /// A lister reading `indexer`.
    pub fn new(indexer: Arc<Indexer<K>>) -> Self {
        Self { indexer }
    }

    /// Every object in the cache.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.indexer.list()
    }

    /// Every object for which `pred` holds (a label selector's `matches`, typically).
    pub fn list_matching(&self, pred: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.indexer.list_filtered(pred)
    }

    /// A cluster-scoped object by name.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer.get("", name)
    }

    /// The objects of namespace `namespace`, as client-go's `Pods(ns)`.
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            indexer: self.indexer.clone(),
            namespace: namespace.to_string(),
        }
    }

    /// The objects whose index `index_name` contains `value`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        self.indexer.by_index(index_name, value)
    }

    /// The indexer behind this lister.
    pub fn indexer(&self) -> &Arc<Indexer<K>> {
        &self.indexer
    }
}

/// A lister limited to one namespace.
pub struct NamespaceLister<K> {
    indexer: Arc<Indexer<K>>,
    namespace: String,
}

impl<K> NamespaceLister<K> {
    /// Every object of the namespace.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.indexer.list_namespace(&self.namespace)
    }

    /// The objects of the namespace for which `pred` holds.
    pub fn list_matching(&self, pred: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.indexer.list_namespace_filtered(&self.namespace, pred)
    }

    /// One object of the namespace by name.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer.get(&self.namespace, name)
    }
}

impl<K: Resource> Lister<K> {
    /// The objects whose labels match `selector`, as client-go's `List(selector)`.
    pub fn list_selected(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.indexer
            .list_filtered(|o| selector.matches(&o.meta().labels.as_ref()))
    }
}

impl<K: Resource> NamespaceLister<K> {
    /// The objects of the namespace whose labels match `selector`.
    pub fn list_selected(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.indexer.list_namespace_filtered(&self.namespace, |o| {
            selector.matches(&o.meta().labels.as_ref())
        })
    }
}
