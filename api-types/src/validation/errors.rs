//! Field errors and error lists, as upstream's `k8s.io/apimachinery/pkg/util/validation/field`.

use std::collections::BTreeSet;
use std::fmt;

use super::path::FieldPath;
use super::quote::go_quote;

/// Kind of a validation error; each has upstream's reason string (the `StatusCause.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// A referenced value was not found.
    NotFound,
    /// A required field is missing.
    Required,
    /// A value appears more than once where it must be unique.
    Duplicate,
    /// A value is malformed or out of range.
    Invalid,
    /// A value has the wrong JSON type (upstream's `TypeInvalid`, shown as `Invalid value`).
    TypeInvalid,
    /// A value is not one of an enumerated set.
    NotSupported,
    /// A value is valid but not allowed here (e.g. immutable field changed).
    Forbidden,
    /// A value is longer than allowed.
    TooLong,
    /// A list has more items than allowed.
    TooMany,
    /// The validator itself failed.
    Internal,
}

impl ErrorType {
    /// Upstream's machine-readable reason, e.g. `FieldValueRequired`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
        }
    }

    /// Upstream's human-readable label, e.g. `Required value`.
    pub fn label(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The offending value carried by an error, rendered as Go's `%v`/`%q` would.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// No value is shown (upstream's `<value omitted>`).
    Omitted,
    /// Rendered as `null`.
    Null,
    /// Rendered quoted: `"x"`.
    Str(String),
    /// Rendered plain.
    Int(i64),
    /// Rendered plain.
    Float(f64),
    /// Rendered plain.
    Bool(bool),
    /// Already rendered text, shown as is (e.g. a list or an object).
    Raw(String),
}

impl BadValue {
    /// A list of strings, rendered as JSON (`["a","b"]`), as upstream renders composite
    /// values since it switched from Go syntax to JSON.
    pub fn string_list<S: AsRef<str>>(values: &[S]) -> Self {
        let list: Vec<&str> = values.iter().map(AsRef::as_ref).collect();
        Self::json(&list)
    }

    /// Any serialisable value rendered as compact JSON (maps, lists, structs).
    pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> Self {
        match serde_json::to_string(value) {
            Ok(s) => BadValue::Raw(s),
            Err(_) => BadValue::Omitted,
        }
    }
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        BadValue::Str(s.to_string())
    }
}
impl From<String> for BadValue {
    fn from(s: String) -> Self {
        BadValue::Str(s)
    }
}
impl From<&String> for BadValue {
    fn from(s: &String) -> Self {
        BadValue::Str(s.clone())
    }
}
impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        BadValue::Int(v)
    }
}
impl From<i32> for BadValue {
    fn from(v: i32) -> Self {
        BadValue::Int(v.into())
    }
}
impl From<usize> for BadValue {
    fn from(v: usize) -> Self {
        BadValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        BadValue::Bool(v)
    }
}
impl From<&serde_json::Value> for BadValue {
    fn from(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => BadValue::Null,
            serde_json::Value::Bool(b) => BadValue::Bool(*b),
            serde_json::Value::String(s) => BadValue::Str(s.clone()),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => BadValue::Int(i),
                None => BadValue::Float(n.as_f64().unwrap_or_default()),
            },
            other => BadValue::Raw(other.to_string()),
        }
    }
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Omitted => f.write_str("<value omitted>"),
            BadValue::Null => f.write_str("null"),
            BadValue::Str(s) => f.write_str(&go_quote(s)),
            BadValue::Int(i) => write!(f, "{i}"),
            BadValue::Float(x) => write!(f, "{x}"),
            BadValue::Bool(b) => write!(f, "{b}"),
            BadValue::Raw(r) => f.write_str(r),
        }
    }
}

/// One validation error: which field, what kind, the bad value and a detail.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The kind of error.
    pub error_type: ErrorType,
    /// The field's path, rendered (`spec.containers[0].image`).
    pub field: String,
    /// The offending value.
    pub bad_value: BadValue,
    /// Free-form explanation.
    pub detail: String,
}

impl FieldError {
    fn new(error_type: ErrorType, field: &FieldPath, bad_value: BadValue, detail: String) -> Self {
        Self {
            error_type,
            field: field.to_string(),
            bad_value,
            detail,
        }
    }

    /// A required value is missing.
    pub fn required(field: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(
            ErrorType::Required,
            field,
            BadValue::Str(String::new()),
            detail.into(),
        )
    }

    /// A value is invalid.
    pub fn invalid(
        field: &FieldPath,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(ErrorType::Invalid, field, value.into(), detail.into())
    }

    /// A value has the wrong type (reason `FieldValueTypeInvalid`).
    pub fn type_invalid(
        field: &FieldPath,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(ErrorType::TypeInvalid, field, value.into(), detail.into())
    }

    /// A value is not one of `supported` (listed in the detail, quoted, as upstream).
    pub fn not_supported<S: AsRef<str>>(
        field: &FieldPath,
        value: impl Into<BadValue>,
        supported: &[S],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, field, value.into(), detail)
    }

    /// A value is repeated.
    pub fn duplicate(field: &FieldPath, value: impl Into<BadValue>) -> Self {
        Self::new(ErrorType::Duplicate, field, value.into(), String::new())
    }

    /// A value is not allowed here.
    pub fn forbidden(field: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(
            ErrorType::Forbidden,
            field,
            BadValue::Str(String::new()),
            detail.into(),
        )
    }

    /// A value is longer than `max_len` bytes.
    pub fn too_long(field: &FieldPath, max_len: usize) -> Self {
        let unit = if max_len == 1 { "byte" } else { "bytes" };
        Self::new(
            ErrorType::TooLong,
            field,
            BadValue::Omitted,
            format!("may not be more than {max_len} {unit}"),
        )
    }

    /// A list has `actual` items where at most `max` are allowed.
    pub fn too_many(field: &FieldPath, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            ErrorType::TooMany,
            field,
            BadValue::from(actual),
            format!("must have at most {max} {unit}"),
        )
    }

    /// A referenced value does not exist.
    pub fn not_found(field: &FieldPath, value: impl Into<BadValue>) -> Self {
        Self::new(ErrorType::NotFound, field, value.into(), String::new())
    }

    /// The validator failed for a reason unrelated to the input.
    pub fn internal(field: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, field, BadValue::Omitted, detail.into())
    }

    /// The message without the field, as upstream's `ErrorBody` (used for `StatusCause.message`).
    pub fn body(&self) -> String {
        let mut s = match self.error_type {
            ErrorType::Required
            | ErrorType::Forbidden
            | ErrorType::TooLong
            | ErrorType::Internal => self.error_type.label().to_string(),
            _ if self.bad_value == BadValue::Omitted => self.error_type.label().to_string(),
            _ => format!("{}: {}", self.error_type.label(), self.bad_value),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A list of field errors. Its `Display` is upstream's aggregate message: one error alone,
/// several as `[e1, e2]` with repeated messages shown once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorList(Vec<FieldError>);

impl ErrorList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one error.
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    /// Adds all errors of `other`.
    pub fn append(&mut self, other: ErrorList) {
        self.0.extend(other.0);
    }

    /// Whether there is no error.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The errors, in the order found.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// Keeps only the errors for which `f` returns true.
    pub fn retain(&mut self, f: impl FnMut(&FieldError) -> bool) {
        self.0.retain(f);
    }

    /// Drops errors on `metadata` (update validators re-check the new object's spec with the
    /// create validator, and metadata has its own update rules).
    pub(crate) fn without_meta_create_only(mut self) -> Self {
        self.retain(|e| e.field != "metadata" && !e.field.starts_with("metadata."));
        self
    }

    /// `Ok(())` when empty, the list otherwise.
    pub fn into_result(self) -> Result<(), ErrorList> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }
}

impl From<Vec<FieldError>> for ErrorList {
    fn from(v: Vec<FieldError>) -> Self {
        Self(v)
    }
}

impl From<FieldError> for ErrorList {
    fn from(e: FieldError) -> Self {
        Self(vec![e])
    }
}

impl Extend<FieldError> for ErrorList {
    fn extend<T: IntoIterator<Item = FieldError>>(&mut self, iter: T) {
        self.0.extend(iter);
    }
}

impl IntoIterator for ErrorList {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ErrorList {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for ErrorList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut seen = BTreeSet::new();
        let mut msgs = Vec::new();
        for e in &self.0 {
            let m = e.to_string();
            if seen.insert(m.clone()) {
                msgs.push(m);
            }
        }
        match msgs.len() {
            0 => Ok(()),
            1 => f.write_str(&msgs[0]),
            _ => write!(f, "[{}]", msgs.join(", ")),
        }
    }
}

impl std::error::Error for ErrorList {}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> FieldPath {
        FieldPath::from_names(&s.split('.').collect::<Vec<_>>())
    }

    #[test]
    fn messages_match_upstream() {
        let cases = [
            (
                FieldError::required(&p("spec.containers"), ""),
                "spec.containers: Required value",
            ),
            (
                FieldError::required(&p("metadata.name"), "name or generateName is required"),
                "metadata.name: Required value: name or generateName is required",
            ),
            (
                FieldError::invalid(
                    &p("spec.replicas"),
                    -1i64,
                    "must be greater than or equal to 0",
                ),
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                FieldError::invalid(&p("metadata.name"), "A_b", "bad"),
                "metadata.name: Invalid value: \"A_b\": bad",
            ),
            (
                FieldError::not_supported(
                    &p("spec.restartPolicy"),
                    "Sometimes",
                    &["Always", "OnFailure", "Never"],
                ),
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ),
            (
                FieldError::duplicate(&p("spec.containers").index(1).child("name"), "a"),
                "spec.containers[1].name: Duplicate value: \"a\"",
            ),
            (
                FieldError::forbidden(&p("spec"), "pod updates may not change fields"),
                "spec: Forbidden: pod updates may not change fields",
            ),
            (
                FieldError::too_long(&p("metadata.annotations"), 262144),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
            ),
            (
                FieldError::too_many(&p("spec.x"), 5, 1),
                "spec.x: Too many: 5: must have at most 1 item",
            ),
            (
                FieldError::not_found(&p("spec.x"), "y"),
                "spec.x: Not found: \"y\"",
            ),
            (
                FieldError::invalid(&FieldPath::root(), BadValue::string_list(&["a", "b"]), "d"),
                "<nil>: Invalid value: [\"a\",\"b\"]: d",
            ),
            (
                FieldError::invalid(&p("x"), BadValue::Null, "d"),
                "x: Invalid value: null: d",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn reasons() {
        assert_eq!(ErrorType::Required.reason(), "FieldValueRequired");
        assert_eq!(ErrorType::Invalid.reason(), "FieldValueInvalid");
        assert_eq!(ErrorType::TypeInvalid.reason(), "FieldValueTypeInvalid");
        assert_eq!(
            FieldError::type_invalid(&p("spec.n"), "string", "d").to_string(),
            "spec.n: Invalid value: \"string\": d"
        );
        assert_eq!(ErrorType::NotSupported.reason(), "FieldValueNotSupported");
        assert_eq!(ErrorType::Duplicate.reason(), "FieldValueDuplicate");
        assert_eq!(ErrorType::Forbidden.reason(), "FieldValueForbidden");
        assert_eq!(ErrorType::TooLong.reason(), "FieldValueTooLong");
        assert_eq!(ErrorType::TooMany.reason(), "FieldValueTooMany");
        assert_eq!(ErrorType::NotFound.reason(), "FieldValueNotFound");
    }

    #[test]
    fn aggregate_brackets_and_dedup() {
        let mut l = ErrorList::new();
        assert_eq!(l.to_string(), "");
        l.push(FieldError::required(&p("a"), ""));
        assert_eq!(l.to_string(), "a: Required value");
        l.push(FieldError::required(&p("a"), ""));
        assert_eq!(
            l.to_string(),
            "a: Required value",
            "duplicates are collapsed"
        );
        l.push(FieldError::required(&p("b"), ""));
        assert_eq!(l.to_string(), "[a: Required value, b: Required value]");
        assert_eq!(l.len(), 3);
    }
}
