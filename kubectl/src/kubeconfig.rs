//! kubeconfig files as `kubectl config` reads, merges, prints and writes them, with upstream's
//! rules and byte-for-byte output.

pub mod load;
pub mod model;
pub mod write;

pub use load::{Loaded, PathOptions};
pub use model::Config;
