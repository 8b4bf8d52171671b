//! Field selectors: a conjunction of `field=value` / `field!=value` terms.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::error::FieldSelectorError;
use super::escape::{escape_value, split_terms, unescape_value};

/// Anything a field selector can read fields from. A missing field reads as `""`.
pub trait Fields {
    /// The value of `field`, if present.
    fn get_field(&self, field: &str) -> Option<&str>;
}

impl Fields for BTreeMap<String, String> {
    fn get_field(&self, field: &str) -> Option<&str> {
        self.get(field).map(String::as_str)
    }
}

/// A map of field values, as upstream's `fields.Set` (e.g. `metadata.name` -> `p1`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set(pub BTreeMap<String, String>);

impl Set {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces one field, builder style.
    pub fn with(mut self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.insert(field.into(), value.into());
        self
    }

    /// A selector requiring every field of this set.
    pub fn as_selector(&self) -> Selector {
        let terms = self
            .0
            .iter()
            .map(|(k, v)| Requirement {
                field: k.clone(),
                operator: Operator::Equals,
                value: v.clone(),
            })
            .collect();
        Selector { terms }
    }
}

impl Fields for Set {
    fn get_field(&self, field: &str) -> Option<&str> {
        self.0.get(field).map(String::as_str)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Set {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// `a=b,c=d` with values escaped, sorted by field.
impl fmt::Display for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{k}={}", escape_value(v)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Field selector operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The field (e.g. `metadata.name`).
    pub field: String,
    /// The operator.
    pub operator: Operator,
    /// The value, unescaped.
    pub value: String,
}

impl Requirement {
    fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        let got = fields.get_field(&self.field).unwrap_or("");
        match self.operator {
            Operator::Equals => got == self.value,
            Operator::NotEquals => got != self.value,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A field selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    terms: Vec<Requirement>,
}

/// Operators in the order upstream tries them at each position.
const OPERATORS: [(&str, Operator); 3] = [
    ("!=", Operator::NotEquals),
    ("==", Operator::Equals),
    ("=", Operator::Equals),
];

fn split_term(term: &str) -> Option<(&str, Operator, &str)> {
    term.char_indices().find_map(|(i, _)| {
        OPERATORS.iter().find_map(|(text, op)| {
            term[i..]
                .starts_with(text)
                .then(|| (&term[..i], *op, &term[i + text.len()..]))
        })
    })
}

impl Selector {
    /// Matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// `field=value`.
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            terms: vec![Requirement {
                field: field.into(),
                operator: Operator::Equals,
                value: value.into(),
            }],
        }
    }

    /// Parses `a=b,c!=d,e==f`; values may escape `\,`, `\=`, `\\`. Empty terms are skipped;
    /// terms are ordered by their text, as upstream.
    pub fn parse(selector: &str) -> Result<Self, FieldSelectorError> {
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((field, operator, rhs)) = split_term(part) else {
                return Err(FieldSelectorError::InvalidTerm {
                    selector: selector.to_string(),
                    term: part.to_string(),
                });
            };
            let value = unescape_value(rhs)?;
            terms.push(Requirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(Self { terms })
    }

    /// Whether every term holds for `fields`.
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        self.terms.iter().all(|t| t.matches(fields))
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms.
    pub fn requirements(&self) -> &[Requirement] {
        &self.terms
    }

    /// The value `field` must equal, if a `=` term on it exists (upstream's
    /// `RequiresExactMatch`, used to serve `spec.nodeName=x` from an index).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.operator == Operator::Equals)
            .map(|t| t.value.as_str())
    }

    /// Rewrites each term with `f(field, value) -> (field, value)`; a term whose new field is
    /// empty is dropped (it then matches everything), as upstream's `Transform`.
    pub fn transform<E>(
        &self,
        mut f: impl FnMut(&str, &str) -> Result<(String, String), E>,
    ) -> Result<Self, E> {
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let (field, value) = f(&t.field, &t.value)?;
            if !field.is_empty() {
                terms.push(Requirement {
                    field,
                    operator: t.operator,
                    value,
                });
            }
        }
        Ok(Self { terms })
    }

    /// Checks every field against those `supported` for a resource; the first other field is
    /// upstream's `field label not supported: <field>` error.
    pub fn translate(&self, supported: &[&str]) -> Result<Self, FieldSelectorError> {
        self.transform(|field, value| {
            if supported.contains(&field) {
                Ok((field.to_string(), value.to_string()))
            } else {
                Err(FieldSelectorError::UnsupportedField(field.to_string()))
            }
        })
    }
}

impl FromStr for Selector {
    type Err = FieldSelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Canonical form: terms joined by `,` with values escaped; `==` prints as `=`.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.terms.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}
