//! Label sets: the thing selectors match against.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::selector::Selector;

/// Anything a selector can read labels from.
pub trait Labels {
    /// The value of label `key`, if present.
    fn get_label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: std::hash::BuildHasher> Labels for HashMap<String, String, S> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<L: Labels + ?Sized> Labels for Option<&L> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.and_then(|l| l.get_label(key))
    }
}

/// A map of labels, as upstream's `labels.Set`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set(pub BTreeMap<String, String>);

impl Set {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Value of `key`, `""` when absent (as upstream).
    pub fn get(&self, key: &str) -> &str {
        self.0.get(key).map(String::as_str).unwrap_or("")
    }

    /// A selector requiring every `key=value` of this set. Keys and values are validated.
    pub fn as_selector(&self) -> Result<Selector, crate::validation::ErrorList> {
        Selector::from_map(&self.0)
    }

    /// Parses `a=b,c=d` (only equality terms) into a set, as upstream's
    /// `ConvertSelectorToLabelsMap`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out = BTreeMap::new();
        if s.is_empty() {
            return Ok(Self(out));
        }
        for term in s.split(',') {
            let parts: Vec<&str> = term.split('=').collect();
            let [k, v] = parts.as_slice() else {
                return Err(format!("invalid selector: {s}"));
            };
            let key = k.trim();
            let value = v.trim();
            let errs = crate::validation::names::is_qualified_name(key);
            if !errs.is_empty() {
                return Err(format!("invalid label key {key:?}: {}", errs.join("; ")));
            }
            let errs = crate::validation::names::is_valid_label_value(value);
            if !errs.is_empty() {
                return Err(format!(
                    "invalid label value: {value:?}: {}",
                    errs.join("; ")
                ));
            }
            out.insert(key.to_string(), value.to_string());
        }
        Ok(Self(out))
    }

    /// Merges two sets; `other` wins on conflicts.
    pub fn merge(&self, other: &Set) -> Set {
        let mut m = self.0.clone();
        m.extend(other.0.iter().map(|(k, v)| (k.clone(), v.clone())));
        Set(m)
    }

    /// Whether the two sets have a key with different values.
    pub fn conflicts(&self, other: &Set) -> bool {
        self.0
            .iter()
            .any(|(k, v)| other.0.get(k).is_some_and(|o| o != v))
    }
}

impl Labels for Set {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

impl From<BTreeMap<String, String>> for Set {
    fn from(m: BTreeMap<String, String>) -> Self {
        Self(m)
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

/// `a=b,c=d`, sorted by key.
impl fmt::Display for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}
