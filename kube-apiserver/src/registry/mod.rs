//! The generic registry (shared/DESIGN.md section 2): ONE store for every resource, shaped per
//! resource by its `Strategy`, over the storage `Backend`.

pub mod admission;
pub mod ephemeral;
pub mod error;
pub mod fields;
pub mod keys;
pub mod list;
pub mod lookup;
pub mod meta;
pub mod services;
pub mod store;
pub mod strategy;
pub mod validate;

pub use admission::WriteAdmission;
pub use error::RegistryError;
pub use lookup::ObjectLookup;
pub use store::{DeleteOptions, DeleteOutcome, ResourceStore};
pub use strategy::{Part, Strategy};
