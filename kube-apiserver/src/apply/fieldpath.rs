//! Field paths and field sets as structured-merge-diff has them, and their `FieldsV1` encoding
//! (`f:<name>`, `k:<json key>`, `v:<json value>`, `i:<index>`, `.` for the node itself).

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One step of a path. The derived order (fields, then keys, values, indices) is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of a map or struct.
    Field(String),
    /// An item of an associative list, by its keys: canonical JSON of `{key: value}` with the
    /// keys sorted (what `k:` carries).
    Key(String),
    /// An item of a set, by its whole value (canonical JSON).
    Value(String),
    /// An item of a list without keys, by position.
    Index(usize),
}

impl PathElement {
    /// The element of an associative list item with the given key fields.
    pub fn key(fields: &[(String, Value)]) -> Self {
        let map: Map<String, Value> = fields.iter().cloned().collect();
        PathElement::Key(Value::Object(map).to_string())
    }

    /// The element of a set item.
    pub fn value(value: &Value) -> Self {
        PathElement::Value(value.to_string())
    }

    /// The `FieldsV1` key of this element.
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(json) => format!("k:{json}"),
            PathElement::Value(json) => format!("v:{json}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key; None for `.` and anything malformed.
    pub fn decode(text: &str) -> Option<Self> {
        let (prefix, rest) = text.split_once(':')?;
        match prefix {
            "f" => Some(PathElement::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                // Re-encoded so equal keys compare equal whatever the sender's spacing.
                key @ Value::Object(_) => Some(PathElement::Key(key.to_string())),
                _ => None,
            },
            "v" => serde_json::from_str::<Value>(rest)
                .ok()
                .map(|v| PathElement::value(&v)),
            "i" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

/// A scalar as upstream's `value.ToString` prints it in paths (strings quoted).
fn display_value(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", display_value(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(display_value).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(json) => {
                let parsed: Value = serde_json::from_str(json).unwrap_or(Value::Null);
                let parts: Vec<String> = parsed
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| format!("{k}={}", display_value(v)))
                            .collect()
                    })
                    .unwrap_or_default();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(json) => {
                let parsed: Value = serde_json::from_str(json).unwrap_or(Value::Null);
                write!(f, "[={}]", display_value(&parsed))
            }
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the root of an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of fields (`Path::fields(&["spec", "replicas"])`).
    pub fn fields(names: &[&str]) -> Self {
        Path(
            names
                .iter()
                .map(|n| PathElement::Field((*n).to_string()))
                .collect(),
        )
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for element in &self.0 {
            write!(f, "{element}")?;
        }
        Ok(())
    }
}

/// A set of paths kept as a tree: `members` are paths ending here, `children` hold the paths
/// going deeper. A node may be both (the `.` of `FieldsV1`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no path is in the set.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds `path` (the empty path adds nothing: the root is never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is in the set.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether `element` is a member here.
    pub fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element` (empty when none).
    pub fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element).filter(|c| !c.is_empty())
    }

    pub(crate) fn child_mut(&mut self, element: &PathElement) -> &mut FieldSet {
        self.children.entry(element.clone()).or_default()
    }

    pub(crate) fn add_member(&mut self, element: PathElement) {
        self.members.insert(element);
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out.pruned()
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(e, c)| Some((e.clone(), c.intersection(other.children.get(e)?))))
            .collect();
        FieldSet { members, children }.pruned()
    }

    /// Paths of `self` not in `other` (paths below a member of `other` are kept).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(e, c)| {
                let rest = match other.children.get(e) {
                    Some(o) => c.difference(o),
                    None => c.clone(),
                };
                (e.clone(), rest)
            })
            .collect();
        FieldSet { members, children }.pruned()
    }

    /// Paths of `self` neither in `other` nor below one of its members.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(e, _)| !other.members.contains(*e))
            .map(|(e, c)| {
                let rest = match other.children.get(e) {
                    Some(o) => c.recursive_difference(o),
                    None => c.clone(),
                };
                (e.clone(), rest)
            })
            .collect();
        FieldSet { members, children }.pruned()
    }

    /// Every path in the set: members before children at each level, in order (upstream's
    /// `Iterate`, which is the order conflicts are reported in).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(Path(path));
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Drops empty children so equal sets compare equal.
    fn pruned(mut self) -> FieldSet {
        self.children.retain(|_, c| !c.is_empty());
        self
    }

    /// The `FieldsV1` object of the set.
    pub fn to_fields_v1(&self) -> Value {
        self.encode(false)
    }

    fn encode(&self, include_self: bool) -> Value {
        let mut map = Map::new();
        if include_self {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for member in &self.members {
            if self.children.get(member).is_none_or(|c| c.is_empty()) {
                map.insert(member.encode(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            if child.is_empty() {
                continue;
            }
            map.insert(
                element.encode(),
                child.encode(self.members.contains(element)),
            );
        }
        Value::Object(map)
    }

    /// Parses a `FieldsV1` object; None when it is not one.
    pub fn from_fields_v1(value: &Value) -> Option<FieldSet> {
        let map = value.as_object()?;
        let mut set = FieldSet::new();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let element = PathElement::decode(key)?;
            let child_map = child.as_object()?;
            if child_map.is_empty() || child_map.contains_key(".") {
                set.members.insert(element.clone());
            }
            let below = FieldSet::from_fields_v1(child)?;
            if !below.is_empty() {
                set.children.insert(element, below);
            }
        }
        Some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    fn name_key(name: &str) -> PathElement {
        PathElement::key(&[("name".into(), json!(name))])
    }

    #[test]
    fn fields_v1_round_trips_with_dot_entries() {
        let encoded = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}
                }}},
            },
        });
        let set = FieldSet::from_fields_v1(&encoded).unwrap();
        assert!(set.has(&[f("spec"), f("replicas")]));
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(!set.has(&[f("metadata")]));
        let item = [
            f("spec"),
            f("template"),
            f("spec"),
            f("containers"),
            name_key("nginx"),
        ];
        assert!(set.has(&item));
        assert_eq!(set.to_fields_v1(), encoded);
    }

    #[test]
    fn malformed_fields_v1_is_refused() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_none());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 3})).is_none());
        assert!(FieldSet::from_fields_v1(&json!({"k:notjson": {}})).is_none());
    }

    #[test]
    fn paths_print_as_upstream() {
        let path = Path(vec![
            f("spec"),
            f("containers"),
            name_key("nginx"),
            f("image"),
        ]);
        assert_eq!(path.to_string(), ".spec.containers[name=\"nginx\"].image");
        let ports = PathElement::key(&[
            ("containerPort".into(), json!(80)),
            ("protocol".into(), json!("TCP")),
        ]);
        assert_eq!(ports.to_string(), "[containerPort=80,protocol=\"TCP\"]");
        assert_eq!(PathElement::value(&json!("a")).to_string(), "[=\"a\"]");
        assert_eq!(PathElement::Index(2).to_string(), "[2]");
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&[f("spec"), f("replicas")]);
        a.insert(&[f("spec"), f("paused")]);
        a.insert(&[f("metadata"), f("labels")]);
        let mut b = FieldSet::new();
        b.insert(&[f("spec"), f("replicas")]);
        b.insert(&[f("metadata"), f("labels"), f("app")]);

        let both = a.intersection(&b);
        assert_eq!(both.paths(), vec![Path::fields(&["spec", "replicas"])]);
        let only_a = a.difference(&b);
        assert!(only_a.has(&[f("spec"), f("paused")]));
        assert!(only_a.has(&[f("metadata"), f("labels")]));
        assert!(!only_a.has(&[f("spec"), f("replicas")]));
        let u = a.union(&b);
        assert_eq!(u.paths().len(), 4);

        // labels.app sits below the member labels: recursive difference drops it.
        assert!(
            b.difference(&a)
                .has(&[f("metadata"), f("labels"), f("app")])
        );
        let rd = b.recursive_difference(&a);
        assert!(rd.is_empty(), "{rd:?}");
        assert!(a.difference(&a).is_empty());
        assert_eq!(a.difference(&a), FieldSet::new());
    }
}
