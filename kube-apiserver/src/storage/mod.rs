//! Storage: the revisioned key space (`backend`), its two implementations (`embedded` on redb,
//! `etcd`), and the watch cache above them (`cacher`). Only the apiserver opens storage.

pub mod backend;
pub mod cacher;
pub mod codec;
/// The backend contract as checks, run by `tests/storage_*.rs` against each backend.
#[doc(hidden)]
pub mod conformance;
pub mod embedded;
pub mod etcd;
