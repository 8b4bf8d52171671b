//! A thread-safe object store with secondary indices, as client-go's `cache.Indexer`.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use kube::Resource;
use parking_lot::RwLock;

use super::key::object_key;

/// Computes the index values of an object (an object may have several, or none).
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The index every [`Indexer`] has: objects by namespace (`""` for cluster-scoped objects).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Errors from index operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexerError {
    /// The named index was never added.
    #[error("index with name {0} does not exist")]
    NoSuchIndex(String),
    /// An index of that name already exists.
    #[error("indexer conflict: {0}")]
    Conflict(String),
}

/// index value -> keys of the objects having that value.
type Index = HashMap<String, BTreeSet<String>>;

struct Inner<K> {
    items: HashMap<String, Arc<K>>,
    indexers: HashMap<String, IndexFunc<K>>,
    indices: HashMap<String, Index>,
}

impl<K> Inner<K> {
    fn index_add(&mut self, key: &str, obj: &K) {
        for (name, func) in &self.indexers {
            let index = self.indices.entry(name.clone()).or_default();
            for value in func(obj) {
                index.entry(value).or_default().insert(key.to_string());
            }
        }
    }

    fn index_remove(&mut self, key: &str, obj: &K) {
        for (name, func) in &self.indexers {
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            for value in func(obj) {
                if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    // Drop empty sets so the index does not grow with churn.
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }

    fn objects_for<'a>(&self, keys: impl IntoIterator<Item = &'a String>) -> Vec<Arc<K>> {
        keys.into_iter()
            .filter_map(|k| self.items.get(k).cloned())
            .collect()
    }
}

/// A thread-safe cache of objects keyed `namespace/name`, with secondary indices.
///
/// Objects are stored as `Arc<K>` and handed out as such: reading never copies an object.
pub struct Indexer<K> {
    inner: RwLock<Inner<K>>,
}

impl<K: Resource + 'static> Default for Indexer<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Indexer")
            .field("len", &inner.items.len())
            .field("indexers", &inner.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// client-go's `MetaNamespaceIndexFunc`: cluster-scoped objects index under `""`.
fn namespace_index_func<K: Resource>(obj: &K) -> Vec<String> {
    vec![obj.meta().namespace.clone().unwrap_or_default()]
}

impl<K: Resource + 'static> Indexer<K> {
    /// An empty indexer with the [`NAMESPACE_INDEX`].
    pub fn new() -> Self {
        let mut indexers: HashMap<String, IndexFunc<K>> = HashMap::new();
        indexers.insert(
            NAMESPACE_INDEX.to_string(),
            Arc::new(namespace_index_func::<K>),
        );
        Self {
            inner: RwLock::new(Inner {
                items: HashMap::new(),
                indexers,
                indices: HashMap::new(),
            }),
        }
    }

    /// Adds or replaces an object under its own key; returns the object it replaced.
    pub fn insert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key = object_key(obj.as_ref());
        self.insert_with_key(key, obj)
    }

    /// Adds or replaces an object under `key`; returns the object it replaced.
    pub fn insert_with_key(&self, key: String, obj: Arc<K>) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let old = inner.items.insert(key.clone(), obj.clone());
        if let Some(old) = &old {
            inner.index_remove(&key, old);
        }
        inner.index_add(&key, &obj);
        old
    }

    /// Removes the object under `key`; returns it if it was there.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let old = inner.items.remove(key)?;
        inner.index_remove(key, &old);
        Some(old)
    }

    /// Replaces the whole content with `objects` (each under its own key).
    pub fn replace(&self, objects: impl IntoIterator<Item = Arc<K>>) {
        let mut inner = self.inner.write();
        inner.items = objects
            .into_iter()
            .map(|o| (object_key(o.as_ref()), o))
            .collect();
        inner.indices.clear();
        let items: Vec<(String, Arc<K>)> = inner
            .items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, obj) in items {
            inner.index_add(&key, &obj);
        }
    }

    /// Adds a named index; the objects already stored are indexed at once.
    ///
    /// Fails with [`IndexerError::Conflict`] if an index of that name exists.
    pub fn add_indexer<F>(&self, name: &str, func: F) -> Result<(), IndexerError>
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.add_index_func(name, Arc::new(func))
    }

    fn add_index_func(&self, name: &str, func: IndexFunc<K>) -> Result<(), IndexerError> {
        let mut inner = self.inner.write();
        if inner.indexers.contains_key(name) {
            return Err(IndexerError::Conflict(format!(
                "index with name {name} already exists"
            )));
        }
        let mut index = Index::new();
        for (key, obj) in &inner.items {
            for value in func(obj) {
                index.entry(value).or_default().insert(key.clone());
            }
        }
        inner.indices.insert(name.to_string(), index);
        inner.indexers.insert(name.to_string(), func);
        Ok(())
    }

    /// Adds several named indices at once; nothing is added if any name conflicts.
    pub fn add_indexers(
        &self,
        indexers: impl IntoIterator<Item = (String, IndexFunc<K>)>,
    ) -> Result<(), IndexerError> {
        let indexers: Vec<(String, IndexFunc<K>)> = indexers.into_iter().collect();
        {
            let inner = self.inner.read();
            if let Some((name, _)) = indexers
                .iter()
                .find(|(n, _)| inner.indexers.contains_key(n))
            {
                return Err(IndexerError::Conflict(format!(
                    "index with name {name} already exists"
                )));
            }
        }
        for (name, func) in indexers {
            self.add_index_func(&name, func)?;
        }
        Ok(())
    }
}

impl<K> Indexer<K> {
    /// The object stored under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// The object `namespace/name`; an empty namespace means a cluster-scoped object.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        if namespace.is_empty() {
            self.get_by_key(name)
        } else {
            self.get_by_key(&format!("{namespace}/{name}"))
        }
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Every stored object for which `pred` holds (e.g. a label selector's `matches`).
    pub fn list_filtered(&self, pred: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.inner
            .read()
            .items
            .values()
            .filter(|o| pred(o))
            .cloned()
            .collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// The objects of one namespace (all objects for `""`, as client-go's `NamespaceAll`).
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.list_namespace_filtered(namespace, |_| true)
    }

    /// The objects of one namespace for which `pred` holds (all namespaces for `""`).
    pub fn list_namespace_filtered(
        &self,
        namespace: &str,
        pred: impl Fn(&K) -> bool,
    ) -> Vec<Arc<K>> {
        if namespace.is_empty() {
            return self.list_filtered(pred);
        }
        let inner = self.inner.read();
        match inner
            .indices
            .get(NAMESPACE_INDEX)
            .and_then(|i| i.get(namespace))
        {
            Some(keys) => inner
                .objects_for(keys)
                .into_iter()
                .filter(|o| pred(o))
                .collect(),
            None => Vec::new(),
        }
    }

    /// The objects whose index `index_name` contains `value`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        let inner = self.inner.read();
        if !inner.indexers.contains_key(index_name) {
            return Err(IndexerError::NoSuchIndex(index_name.to_string()));
        }
        Ok(inner
            .indices
            .get(index_name)
            .and_then(|i| i.get(value))
            .map(|keys| inner.objects_for(keys))
            .unwrap_or_default())
    }

    /// The keys of the objects whose index `index_name` contains `value`, sorted.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, IndexerError> {
        let inner = self.inner.read();
        if !inner.indexers.contains_key(index_name) {
            return Err(IndexerError::NoSuchIndex(index_name.to_string()));
        }
        Ok(inner
            .indices
            .get(index_name)
            .and_then(|i| i.get(value))
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// The values present in index `index_name`, in no particular order.
    pub fn list_index_values(&self, index_name: &str) -> Vec<String> {
        self.inner
            .read()
            .indices
            .get(index_name)
            .map(|i| i.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The names of the indices.
    pub fn index_names(&self) -> Vec<String> {
        self.inner.read().indexers.keys().cloned().collect()
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether no object is stored.
    pub fn is_empty(&self) -> bool {
        self.inner.read().items.is_empty()
    }
}
