//! Event handlers: what controllers register on a shared informer.

use std::sync::Arc;

/// The last state of a deleted object.
///
/// `FinalStateUnknown` is client-go's `DeletedFinalStateUnknown`: the informer missed the delete
/// (the watch broke and a relist no longer returned the object), so `obj` is the last state it
/// saw, possibly stale.
#[derive(Debug)]
pub enum Deleted<K> {
    /// The delete was observed on the watch; `0` is the object's final state.
    Known(Arc<K>),
    /// The object vanished between two lists.
    FinalStateUnknown {
        /// The cache key (`namespace/name`) of the object.
        key: String,
        /// The last state the informer saw.
        obj: Arc<K>,
    },
}

impl<K> Clone for Deleted<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Known(o) => Self::Known(o.clone()),
            Self::FinalStateUnknown { key, obj } => Self::FinalStateUnknown {
                key: key.clone(),
                obj: obj.clone(),
            },
        }
    }
}

impl<K> Deleted<K> {
    /// The object, whether its final state is known or not.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Known(o) => o,
            Self::FinalStateUnknown { obj, .. } => obj,
        }
    }

    /// Whether the informer missed the actual delete.
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, Self::FinalStateUnknown { .. })
    }
}

/// Receives the changes of a shared informer's cache, as client-go's `ResourceEventHandler`.
///
/// Calls for one handler are sequential and in cache order; each handler has its own queue, so
/// a slow handler does not delay the others. Handlers should be quick (typically: enqueue a key).
pub trait ResourceEventHandler<K>: Send + Sync {
    /// An object entered the cache; `in_initial_list` is true for the objects of the first list.
    fn on_add(&self, obj: &Arc<K>, in_initial_list: bool) {
        let _ = (obj, in_initial_list);
    }
    /// An object changed; on a periodic resync `old` and `new` are the same object.
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }
    /// An object left the cache.
    fn on_delete(&self, deleted: &Deleted<K>) {
        let _ = deleted;
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&Deleted<K>) + Send + Sync>;

/// A handler made of closures, as client-go's `ResourceEventHandlerFuncs`; unset ones do nothing.
pub struct EventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for EventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> EventHandlerFuncs<K> {
    /// A handler that does nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the add callback.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the update callback.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete callback.
    pub fn on_delete(mut self, f: impl Fn(&Deleted<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K> ResourceEventHandler<K> for EventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        if let Some(f) = &self.delete {
            f(deleted);
        }
    }
}

/// One change to deliver to a handler.
#[derive(Debug)]
pub(crate) enum Notification<K> {
    Add { obj: Arc<K>, in_initial_list: bool },
    Update { old: Arc<K>, new: Arc<K> },
    Delete(Deleted<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                in_initial_list,
            } => Self::Add {
                obj: obj.clone(),
                in_initial_list: *in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Self::Delete(d) => Self::Delete(d.clone()),
        }
    }
}

impl<K> Notification<K> {
    pub(crate) fn deliver(&self, handler: &dyn ResourceEventHandler<K>) {
        match self {
            Self::Add {
                obj,
                in_initial_list,
            } => handler.on_add(obj, *in_initial_list),
            Self::Update { old, new } => handler.on_update(old, new),
            Self::Delete(d) => handler.on_delete(d),
        }
    }
}
