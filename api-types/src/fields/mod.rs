//! Field selectors, as upstream's `k8s.io/apimachinery/pkg/fields`: `a=b,c!=d,e==f` with
//! `\,` `\=` `\\` escapes, matching against a set of field values, and translation against the
//! fields a resource supports.

mod error;
mod escape;
mod selector;

pub use error::FieldSelectorError;
pub use escape::{escape_value, unescape_value};
pub use selector::{Fields, Operator, Requirement, Selector, Set};

/// Fields every object can be selected on.
pub const OBJECT_META_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];
