//! Leader election on coordination.k8s.io/v1 `Lease` objects, with client-go's semantics.
//!
//! A candidate creates the lease if it is missing, renews it every retry period while it
//! leads, and steps down when renewals keep failing for the renew deadline. Others take the
//! lease over only once `leaseDurationSeconds` have passed since they last saw it change,
//! measured on their own clock. Every write carries the resourceVersion it read, so two
//! candidates can never both win an attempt.

mod config;
mod elector;
mod lock;
mod memory;
mod record;
mod run;

pub use config::{ConfigError, LeaderElectionConfig};
pub use elector::{LeaderCallbacks, LeaderElector, LeaderStatus};
pub use lock::{KubeLeaseLock, LeaseLock, LockError};
pub use memory::InMemoryLeaseLock;
pub use record::LeaderElectionRecord;
pub use run::{LeaderRunError, LeaseSettings, default_identity, run_while_leading, run_with_lock};
