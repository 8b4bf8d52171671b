//! Strategic merge patch (upstream's apimachinery `util/strategicpatch`): the apiserver applies
//! one (`application/strategic-merge-patch+json`), kubectl computes one for `apply`.
//!
//! Lists tagged `merge` merge by their merge key (or as a set of primitives), other lists are
//! replaced, maps merge, `null` deletes, and the directives `$patch`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` that kubectl sends are
//! honoured. The strategies come from the table in [`strategies`].

mod json_merge;
mod merge;
mod order;
pub mod schema;
pub mod strategies;
mod three_way;

use serde_json::Value;

pub use json_merge::create_three_way_json_merge_patch;
pub use schema::Schema;
pub use three_way::create_three_way_merge_patch;

/// What the patched object is, so strategic merge can find its patch strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchTarget<'a> {
    /// A built-in kind (`group` is `""` for the core group).
    BuiltIn {
        /// API group, `""` for core.
        group: &'a str,
        /// Kind, e.g. `Deployment`.
        kind: &'a str,
    },
    /// A custom resource: it has no patch strategies, so strategic merge is refused.
    Custom,
}

/// A strategic merge patch that is malformed or does not fit the object. The messages are
/// upstream's (k8s.io/apimachinery/pkg/util/mergepatch).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SmpError {
    /// The patch (or the object) is not a JSON object.
    #[error("invalid JSON document")]
    BadJsonDoc,
    /// A `$deleteFromPrimitiveList/...` value is not a list.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveList,
    /// A `$retainKeys` value is not a list of strings.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeys,
    /// A `$setElementOrder/...` value is not a list, or disagrees with its list.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrder,
    /// A list holds lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// The patch sets a field that its `$retainKeys` drops.
    #[error("patch content doesn't match retainKeys list")]
    NotMatchingRetainKeys,
    /// Any other misfit (a missing merge key, an unknown `$patch` value, mixed element types).
    #[error("{0}")]
    Other(String),
}

impl SmpError {
    /// The HTTP status upstream answers with: 400 for bad formats, 422 for lists of lists and
    /// retainKeys mismatches, and 500 for the rest (upstream passes those through untyped).
    pub fn status_code(&self) -> u16 {
        match self {
            SmpError::BadJsonDoc
            | SmpError::BadPrimitiveList
            | SmpError::BadRetainKeys
            | SmpError::BadSetElementOrder => 400,
            SmpError::ListOfLists | SmpError::NotMatchingRetainKeys => 422,
            SmpError::Other(_) => 500,
        }
    }
}

/// Merges a strategic merge `patch` into `original`, both whole objects of type `schema`.
pub fn merge_objects(original: &Value, patch: &Value, schema: Schema) -> Result<Value, SmpError> {
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        return Err(SmpError::BadJsonDoc);
    };
    merge::merge_map(original.clone(), patch.clone(), schema).map(Value::Object)
}
