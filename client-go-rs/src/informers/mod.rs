//! Shared informers: one list+watch per resource per process, a cache, and event handlers.
//!
//! Built on kube's [`watcher`](kube::runtime::watcher), which does the list, the watch, the
//! bookmarks and the relists; this module adds what client-go's `SharedIndexInformer` has on top:
//! the indexed cache, handlers with old/new updates and tombstones, resync, late handlers, and a
//! factory that shares one informer per resource between all controllers.

mod factory;
mod handler;
mod processor;
mod shared_informer;

pub use factory::{InformerOptions, SharedInformerFactory};
pub use handler::{Deleted, EventHandlerFuncs, ResourceEventHandler};
pub use processor::HandlerRegistration;
pub use shared_informer::{InformerObject, SharedInformer};
