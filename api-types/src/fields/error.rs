//! Errors from parsing or translating field selectors. Messages are upstream's.

/// Why a field selector was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term has no `=`, `==` or `!=` operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidTerm {
        /// The whole selector.
        selector: String,
        /// The term that could not be read.
        term: String,
    },
    /// A backslash escape other than `\\`, `\,`, `\=`.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscapeSequence(String),
    /// A bare `,` or `=` in a value. Upstream prints the character's code point.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedRune(char),
    /// The field cannot be selected on for this resource.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}
