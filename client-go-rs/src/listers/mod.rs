//! Listers and indexers: the read side of an informer's cache.
//!
//! An [`Indexer`] is a thread-safe map of objects keyed `namespace/name` (or `name` for
//! cluster-scoped objects) with secondary indices computed by index functions; it always has the
//! [`NAMESPACE_INDEX`]. A [`Lister`] is a read-only view over an indexer, the type controllers
//! hold. Reads hand out `Arc<K>`, never deep copies: callers must clone before mutating.

mod indexer;
mod key;
mod lister;

pub use indexer::{IndexFunc, Indexer, IndexerError, NAMESPACE_INDEX};
pub use key::{object_key, split_key};
pub use lister::{Lister, NamespaceLister};
