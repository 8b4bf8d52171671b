//! The scheduler cache: nodes and the pods counted on them (bound or assumed), and the
//! incremental update of the per-cycle [`crate::framework::Snapshot`].

mod images;
pub mod node_tree;
mod scheduler_cache;
mod snapshot_update;
#[cfg(test)]
mod tests;

pub use scheduler_cache::{Cache, CacheDump};
