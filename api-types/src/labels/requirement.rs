//! A single label requirement (`key op values`) and how it matches a label set.

use std::collections::BTreeSet;
use std::fmt;

use super::set::Labels;
use crate::validation::names::{is_qualified_name, is_valid_label_value};
use crate::validation::{BadValue, ErrorList, FieldError, FieldPath};

/// Selector operators, as upstream's `selection.Operator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`
    NotEquals,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>n` (integers)
    GreaterThan,
    /// `key<n` (integers)
    LessThan,
}

impl Operator {
    /// Upstream's operator string (`in`, `notin`, `=`, `==`, `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One requirement of a selector. Values are kept sorted and without duplicates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

/// Upstream checks label keys against the qualified-name rule.
pub(crate) fn validate_label_key(key: &str, path: &FieldPath) -> Option<FieldError> {
    let errs = is_qualified_name(key);
    if errs.is_empty() {
        None
    } else {
        Some(FieldError::invalid(path, key, errs.join("; ")))
    }
}

fn validate_label_value(key: &str, value: &str, path: &FieldPath) -> Option<FieldError> {
    let errs = is_valid_label_value(value);
    if errs.is_empty() {
        None
    } else {
        Some(FieldError::invalid(&path.key(key), value, errs.join("; ")))
    }
}

impl Requirement {
    /// Builds a requirement, checking the key, the values and their count for the operator
    /// (upstream's `NewRequirement`, with the same messages).
    pub fn new<S: Into<String>>(
        key: impl Into<String>,
        operator: Operator,
        values: impl IntoIterator<Item = S>,
    ) -> Result<Self, ErrorList> {
        Self::new_at(
            key.into(),
            operator,
            values.into_iter().map(Into::into).collect(),
            &FieldPath::root(),
        )
    }

    pub(crate) fn new_at(
        key: String,
        operator: Operator,
        values: Vec<String>,
        path: &FieldPath,
    ) -> Result<Self, ErrorList> {
        let mut errs = ErrorList::new();
        errs.extend(validate_label_key(&key, &path.child("key")));
        let value_path = path.child("values");
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(FieldError::invalid(
                        &value_path,
                        BadValue::string_list(&values),
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid(
                        &value_path,
                        BadValue::string_list(&values),
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(FieldError::invalid(
                        &value_path,
                        BadValue::string_list(&values),
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid(
                        &value_path,
                        BadValue::string_list(&values),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid(
                            &value_path.index(i),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            errs.extend(validate_label_value(&key, v, &value_path.index(i)));
        }
        errs.into_result()?;
        let values: Vec<String> = values
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Ok(Self {
            key,
            operator,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.binary_search_by(|x| x.as_str().cmp(v)).is_ok()
    }

    /// Whether `labels` satisfies this requirement. A missing key fails `in`/`=`/`gt`/`lt`
    /// and `exists`, and passes `notin`/`!=`/`!`.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let got = labels.get_label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                got.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => !got.is_some_and(|v| self.has_value(v)),
            Operator::Exists => got.is_some(),
            Operator::DoesNotExist => got.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(got), [want]) = (got, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(got), Ok(want)) = (got.parse::<i64>(), want.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    got > want
                } else {
                    got < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}
