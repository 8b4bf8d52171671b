//! Errors from parsing or building label selectors.

use crate::validation::ErrorList;

/// Why a label selector could not be built. Messages are upstream's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectorError {
    /// The string is not a sequence of comma-separated requirements.
    #[error("{0}")]
    Syntax(String),
    /// One requirement is malformed or has an invalid key or value.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// A requirement built from structured input has an invalid key or values.
    #[error("{0}")]
    Invalid(ErrorList),
    /// A `matchExpressions` operator is not In, NotIn, Exists or DoesNotExist.
    #[error("{} is not a valid label selector operator", crate::validation::go_quote(.0))]
    UnknownOperator(String),
}

impl From<ErrorList> for SelectorError {
    fn from(e: ErrorList) -> Self {
        SelectorError::Invalid(e)
    }
}
