//! `Selector`: a conjunction of requirements, or the selector that matches nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::error::SelectorError;
use super::parser::parse_requirements;
use super::requirement::{Operator, Requirement};
use super::set::Labels;

/// A label selector. The empty selector matches every set; [`Selector::nothing`] matches none
/// (what a nil `metav1.LabelSelector` converts to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// Matches everything.
    pub fn everything() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: false,
        }
    }

    /// Matches nothing.
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses upstream's string syntax: comma-separated `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
    /// `k notin (a)`, `k`, `!k`, `k>n`, `k<n`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        Ok(Self {
            requirements: parse_requirements(s)?,
            nothing: false,
        })
    }

    /// A selector requiring each `key=value` of `map` (upstream's `SelectorFromValidatedSet`
    /// after validating keys and values).
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Self, crate::validation::ErrorList> {
        let mut s = Self::everything();
        for (k, v) in map {
            s.requirements
                .push(Requirement::new(k.clone(), Operator::Equals, [v.clone()])?);
        }
        Ok(s)
    }

    /// Converts a `metav1.LabelSelector`: `None` matches nothing, an empty selector matches
    /// everything, otherwise `matchLabels` and `matchExpressions` are all required.
    pub fn from_label_selector(ls: Option<&LabelSelector>) -> Result<Self, SelectorError> {
        let Some(ls) = ls else {
            return Ok(Self::nothing());
        };
        let mut s = Self::everything();
        for (k, v) in ls.match_labels.iter().flatten() {
            s.requirements
                .push(Requirement::new(k.clone(), Operator::Equals, [v.clone()])?);
        }
        for expr in ls.match_expressions.iter().flatten() {
            let op = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(SelectorError::UnknownOperator(other.to_string())),
            };
            let values = expr.values.clone().unwrap_or_default();
            s.requirements
                .push(Requirement::new(expr.key.clone(), op, values)?);
        }
        s.requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(s)
    }

    /// Adds a requirement (kept sorted by key).
    pub fn with_requirement(mut self, r: Requirement) -> Self {
        self.requirements.push(r);
        self.requirements.sort_by(|a, b| a.key().cmp(b.key()));
        self
    }

    /// Whether every requirement holds for `labels`.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is the match-nothing selector.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The value `key` must equal for this selector to match, if there is exactly one
    /// (upstream's `RequiresExactMatch`, useful for indexes).
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find_map(|r| match (r.operator(), r.values()) {
                (Operator::Equals | Operator::DoubleEquals | Operator::In, [v])
                    if r.key() == key =>
                {
                    Some(v.as_str())
                }
                _ => None,
            })
    }
}

impl Default for Selector {
    fn default() -> Self {
        Self::everything()
    }
}

impl FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Canonical form: requirements sorted by key, joined by `,`; both the empty and the nothing
/// selector render as `""`, as upstream.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}
