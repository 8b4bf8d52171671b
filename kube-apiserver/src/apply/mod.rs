//! Server-side apply and managedFields, with structured-merge-diff's semantics: field sets and
//! their `FieldsV1` encoding (`fieldpath`), the type facts of a kind (`schema`), typed merge,
//! comparison and removal (`typed`), managedFields entries (`managed`), the field manager of
//! an endpoint (`manager`: Update tracking, apply, conflicts) and the request side (`request`:
//! options, manager names, the store hook).

pub mod fieldpath;
pub mod managed;
pub mod manager;
pub mod request;
pub mod schema;
pub mod serve;
pub mod typed;

pub use manager::{ApplyError, FieldManager, Reset};
pub use request::{AppliedFields, Endpoint, UpdateTracker, WriteTracker};
pub use schema::ApplySchema;
