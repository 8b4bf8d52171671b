//! Operations on objects walked with their schema, as structured-merge-diff's typed values:
//! the set of fields a value sets, the comparison of two values, the merge of an applied
//! configuration into a live object, and removing a set of fields from a value.

use super::fieldpath::{FieldSet, PathElement};
use super::schema::{ListKind, Node, Shape, item_element};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The fields `value` sets: scalars, atomic maps and lists, list items, and maps that are
/// empty, null or not declared fields.
pub fn to_field_set(value: &Value, node: Node<'_>) -> FieldSet {
    let mut set = FieldSet::new();
    walk_set(value, node, &mut Vec::new(), &mut set);
    set
}

fn walk_set(value: &Value, node: Node<'_>, path: &mut Vec<PathElement>, set: &mut FieldSet) {
    match node.shape(value) {
        Shape::Leaf | Shape::List(ListKind::Atomic) => set.insert(path),
        Shape::Map => {
            let Some(map) = value.as_object() else {
                set.insert(path);
                return;
            };
            for (key, child) in map {
                let (child_node, declared) = node.field(key);
                path.push(PathElement::Field(key.clone()));
                walk_set(child, child_node, path, set);
                let empty_map = child.as_object().is_some_and(Map::is_empty);
                if child.is_null() || empty_map || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(kind) => {
            let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
            for (index, item) in items.iter().enumerate() {
                path.push(item_element(&kind, index, item));
                walk_set(item, node.items(), path, set);
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// What changed between two values.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Added or modified: what the writer of the new value set.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    /// The comparison without the fields of `ignored` (and what is below them).
    pub fn excluding(&self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compares `lhs` (the old value) with `rhs` (the new one). With `created` (no old value),
/// what upstream's typed empty object already holds (structs, required lists) is not counted
/// itself, only what is set in it.
pub fn compare(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    node: Node<'_>,
    created: bool,
) -> Comparison {
    let mut walker = Compare {
        out: Comparison::default(),
    };
    if lhs.is_some() || rhs.is_some() {
        walker.walk(lhs, rhs, node, &mut Vec::new(), created);
    }
    walker.out
}

struct Compare {
    out: Comparison,
}

/// The shape both sides agree on; None when they differ (compared as leaves).
fn common_shape(lhs: Option<&Value>, rhs: Option<&Value>, node: &Node<'_>) -> Option<Shape> {
    match (lhs, rhs) {
        (Some(l), Some(r)) => {
            let (ls, rs) = (node.shape(l), node.shape(r));
            let same_kind = l.is_object() == r.is_object() && l.is_array() == r.is_array();
            (ls == rs && same_kind).then_some(rs)
        }
        (Some(v), None) | (None, Some(v)) => Some(node.shape(v)),
        (None, None) => None,
    }
}

fn is_empty_container(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

impl Compare {
    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, path: &[PathElement]) {
        match (lhs, rhs) {
            (None, Some(_)) => self.out.added.insert(path),
            (Some(_), None) => self.out.removed.insert(path),
            (Some(l), Some(r)) if l != r => self.out.modified.insert(path),
            _ => {}
        }
    }

    /// `in_zero_object`: on create, whether the node exists in the typed empty object upstream
    /// compares with (non-pointer structs and fields without `omitempty`, which the schema
    /// marks required), so that its appearance is not counted.
    fn walk(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        node: Node<'_>,
        path: &mut Vec<PathElement>,
        in_zero_object: bool,
    ) {
        let shape = common_shape(lhs, rhs, &node);
        let both_empty = is_empty_container(lhs) && is_empty_container(rhs);
        match shape {
            Some(Shape::Map) if !both_empty => {
                let empty = Map::new();
                let l = lhs.and_then(Value::as_object).unwrap_or(&empty);
                let r = rhs.and_then(Value::as_object).unwrap_or(&empty);
                let keys: BTreeSet<&String> = l.keys().chain(r.keys()).collect();
                for key in keys {
                    let child = node.field(key).0;
                    let zero = in_zero_object && (child.is_struct() || node.requires(key));
                    path.push(PathElement::Field(key.clone()));
                    self.walk(l.get(key), r.get(key), child, path, zero);
                    path.pop();
                }
                if lhs.is_none() && !in_zero_object {
                    self.out.added.insert(path);
                } else if rhs.is_none() {
                    self.out.removed.insert(path);
                }
            }
            Some(Shape::List(kind)) if kind != ListKind::Atomic && !both_empty => {
                let l = index_items(&kind, lhs);
                let r = index_items(&kind, rhs);
                let items = node.items();
                for (element, value) in &r {
                    path.push(element.clone());
                    self.walk(l.get(element).copied(), Some(value), items, path, false);
                    path.pop();
                }
                for (element, value) in &l {
                    if !r.contains_key(element) {
                        path.push(element.clone());
                        self.walk(Some(value), None, items, path, false);
                        path.pop();
                    }
                }
                if lhs.is_none() && !in_zero_object {
                    self.out.added.insert(path);
                } else if rhs.is_none() {
                    self.out.removed.insert(path);
                }
            }
            _ => self.leaf(lhs, rhs, path),
        }
    }
}

/// A list's items by path element (the first of duplicates).
fn index_items<'v>(kind: &ListKind, list: Option<&'v Value>) -> BTreeMap<PathElement, &'v Value> {
    let mut out = BTreeMap::new();
    for (index, item) in list
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        out.entry(item_element(kind, index, item)).or_insert(item);
    }
    out
}

/// Merges `rhs` (an applied configuration) into `lhs` (the live object): scalars and atomic
/// values from `rhs` win, granular maps and lists are merged item by item. A configuration
/// listing one key twice is an error (the duplicated path).
pub fn merge(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    node: Node<'_>,
) -> Result<Option<Value>, String> {
    merge_at(lhs, rhs, node, &mut Vec::new())
}

fn merge_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    node: Node<'_>,
    path: &mut Vec<PathElement>,
) -> Result<Option<Value>, String> {
    let (Some(l), Some(r)) = (lhs, rhs) else {
        if let Some(r) = rhs {
            check_duplicates(r, node, path)?;
        }
        return Ok(rhs.or(lhs).cloned());
    };
    let both_empty = is_empty_container(lhs) && is_empty_container(rhs);
    match common_shape(lhs, rhs, &node) {
        Some(Shape::Map) if !both_empty => {
            let (Some(lm), Some(rm)) = (l.as_object(), r.as_object()) else {
                return Ok(Some(r.clone()));
            };
            let mut out = Map::new();
            for (key, lv) in lm {
                path.push(PathElement::Field(key.clone()));
                if let Some(v) = merge_at(Some(lv), rm.get(key), node.field(key).0, path)? {
                    out.insert(key.clone(), v);
                }
                path.pop();
            }
            for (key, rv) in rm {
                if !lm.contains_key(key) {
                    path.push(PathElement::Field(key.clone()));
                    check_duplicates(rv, node.field(key).0, path)?;
                    path.pop();
                    out.insert(key.clone(), rv.clone());
                }
            }
            Ok(Some(Value::Object(out)))
        }
        Some(Shape::List(kind)) if kind != ListKind::Atomic && !both_empty => {
            merge_list(l, r, &kind, node.items(), path).map(Some)
        }
        _ => Ok(Some(r.clone())),
    }
}

fn duplicate_error(path: &[PathElement], element: &PathElement) -> String {
    let at: String = path.iter().map(ToString::to_string).collect();
    format!("{at}: duplicate entries for key {element}")
}

/// Refuses a configuration that names one list item twice.
fn check_duplicates(
    value: &Value,
    node: Node<'_>,
    path: &mut Vec<PathElement>,
) -> Result<(), String> {
    match node.shape(value) {
        Shape::Map => {
            for (key, child) in value.as_object().into_iter().flatten() {
                path.push(PathElement::Field(key.clone()));
                check_duplicates(child, node.field(key).0, path)?;
                path.pop();
            }
        }
        Shape::List(kind) if kind != ListKind::Atomic => {
            let mut seen = BTreeSet::new();
            for (index, item) in value.as_array().into_iter().flatten().enumerate() {
                let element = item_element(&kind, index, item);
                if !seen.insert(element.clone()) {
                    return Err(duplicate_error(path, &element));
                }
                path.push(element);
                check_duplicates(item, node.items(), path)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// Merges two granular lists. Items only in the live list keep their place; items of the
/// configuration come in its order (upstream's ordering).
fn merge_list(
    l: &Value,
    r: &Value,
    kind: &ListKind,
    items: Node<'_>,
    path: &mut Vec<PathElement>,
) -> Result<Value, String> {
    let element_list = |list: &Value| -> Vec<(PathElement, Value)> {
        list.as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, item)| (item_element(kind, i, item), item.clone()))
            .collect()
    };
    let lhs = element_list(l);
    let rhs = element_list(r);
    let mut rhs_map = BTreeMap::new();
    for (element, value) in &rhs {
        if rhs_map.insert(element.clone(), value.clone()).is_some() {
            return Err(duplicate_error(path, element));
        }
    }
    let mut lhs_map = BTreeMap::new();
    for (element, value) in &lhs {
        lhs_map
            .entry(element.clone())
            .or_insert_with(|| value.clone());
    }
    let mut shared: std::collections::VecDeque<PathElement> = rhs
        .iter()
        .filter(|(e, _)| lhs_map.contains_key(e))
        .map(|(e, _)| e.clone())
        .collect();
    let mut merged = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    let merge_item = |element: &PathElement,
                      lv: Option<&Value>,
                      rv: Option<&Value>,
                      out: &mut Vec<Value>,
                      path: &mut Vec<PathElement>|
     -> Result<(), String> {
        path.push(element.clone());
        let value = merge_at(lv, rv, items, path)?;
        path.pop();
        if let Some(value) = value {
            out.push(value);
        }
        Ok(())
    };
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let element = &lhs[li].0;
            if *element == rhs[ri].0 {
                merged.insert(element.clone());
                merge_item(
                    element,
                    Some(&lhs_map[element]),
                    Some(&rhs[ri].1),
                    &mut out,
                    path,
                )?;
                li += 1;
                ri += 1;
                if shared.front() == Some(element) {
                    shared.pop_front();
                }
                continue;
            }
            if rhs_map.contains_key(element) && shared.front().is_some_and(|next| next != element) {
                // A shared item whose turn (in the configuration's order) has not come.
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let element = &lhs[li].0;
            if !rhs_map.contains_key(element) {
                out.push(lhs[li].1.clone());
                li += 1;
                continue;
            }
            if merged.contains(element) {
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let element = rhs[ri].0.clone();
            merged.insert(element.clone());
            merge_item(
                &element,
                lhs_map.get(&element),
                Some(&rhs[ri].1),
                &mut out,
                path,
            )?;
            ri += 1;
            if shared.front() == Some(&element) {
                shared.pop_front();
            }
        }
    }
    Ok(Value::Array(out))
}

/// Removes the members of `set` (whole, with what is below them) from `value`. A map or list
/// emptied by the removal is removed too, as upstream leaves it null.
pub fn remove_items(value: &mut Value, set: &FieldSet, node: Node<'_>) {
    match node.shape(value) {
        Shape::Map => {
            let Some(map) = value.as_object_mut() else {
                return;
            };
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let element = PathElement::Field(key.clone());
                if set.has_member(&element) {
                    map.remove(&key);
                } else if let Some(below) = set.child(&element)
                    && let Some(child) = map.get_mut(&key)
                {
                    remove_items(child, below, node.field(&key).0);
                    if is_empty_container(Some(child)) {
                        map.remove(&key);
                    }
                }
            }
        }
        Shape::List(kind) if kind != ListKind::Atomic => {
            let Some(list) = value.as_array_mut() else {
                return;
            };
            let items = node.items();
            let mut kept = Vec::with_capacity(list.len());
            for (index, mut item) in std::mem::take(list).into_iter().enumerate() {
                let element = item_element(&kind, index, &item);
                if set.has_member(&element) {
                    continue;
                }
                if let Some(below) = set.child(&element) {
                    remove_items(&mut item, below, items);
                }
                kept.push(item);
            }
            *list = kept;
        }
        _ => {}
    }
}

/// `set` with every declared struct field that has paths below it also a member, so removing
/// it removes the field (upstream's `EnsureNamedFieldsAreMembers`).
pub fn ensure_named_fields(set: &FieldSet, node: Node<'_>) -> FieldSet {
    let mut out = set.clone();
    for (element, child) in set.children() {
        let child_node = match element {
            PathElement::Field(name) => {
                if node.declares(name) {
                    out.add_member(element.clone());
                }
                node.field(name).0
            }
            _ => node.items(),
        };
        *out.child_mut(element) = ensure_named_fields(child, child_node);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::fieldpath::Path;
    use crate::apply::schema::ApplySchema;
    use serde_json::json;

    fn deployment() -> Node<'static> {
        ApplySchema::BuiltIn {
            group: "apps",
            version: "v1",
            kind: "Deployment",
        }
        .root()
    }

    fn paths(set: &FieldSet) -> Vec<String> {
        set.paths().iter().map(Path::to_string).collect()
    }

    #[test]
    fn field_set_of_a_deployment() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "args": ["a"]}]}}}});
        let set = to_field_set(&d, deployment());
        let encoded = set.to_fields_v1();
        assert_eq!(encoded["f:metadata"]["f:labels"], json!({"f:app": {}}));
        assert_eq!(
            encoded["f:spec"]["f:selector"],
            json!({}),
            "atomic selector"
        );
        assert_eq!(
            encoded["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"],
            json!({".": {}, "f:args": {}, "f:image": {}, "f:name": {}})
        );
    }

    #[test]
    fn compare_reports_added_modified_removed() {
        let old = json!({"spec": {"replicas": 1, "paused": true, "template": {"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}}});
        let new = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "a", "image": "2"}, {"name": "c", "image": "1"}]}}}});
        let cmp = compare(Some(&old), Some(&new), deployment(), false);
        assert_eq!(
            paths(&cmp.modified),
            vec![
                ".spec.replicas",
                ".spec.template.spec.containers[name=\"a\"].image"
            ]
        );
        assert!(cmp.added.has(&[
            PathElement::Field("spec".into()),
            PathElement::Field("template".into()),
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::key(&[("name".into(), json!("c"))]),
        ]));
        assert!(paths(&cmp.removed).contains(&".spec.paused".to_string()));
        assert!(
            paths(&cmp.removed).contains(&".spec.template.spec.containers[name=\"b\"]".to_string())
        );
    }

    #[test]
    fn compare_on_create_does_not_own_structs_themselves() {
        let new = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 1,
            "template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}}});
        let cmp = compare(None, Some(&new), deployment(), true);
        let encoded = cmp.added.to_fields_v1();
        // As upstream's kubectl-create entries: labels and new items count themselves (`.`),
        // the required containers list and the structs do not.
        assert_eq!(
            encoded,
            json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {"f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                    ".": {}, "f:name": {}, "f:ports": {".": {},
                        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
        );
    }

    #[test]
    fn merge_keeps_live_fields_and_merges_lists_by_key() {
        let live = json!({"spec": {"replicas": 1, "paused": true, "template": {"spec": {"containers": [
            {"name": "a", "image": "1", "imagePullPolicy": "Always"}, {"name": "b", "image": "1"}]}}}});
        let config = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "9"}, {"name": "a", "image": "2"}]}}}});
        let merged = merge(Some(&live), Some(&config), deployment())
            .unwrap()
            .unwrap();
        assert_eq!(merged["spec"]["replicas"], 3);
        assert_eq!(merged["spec"]["paused"], true);
        let containers = merged["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        let names: Vec<&str> = containers
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c", "a", "b"]);
        assert_eq!(containers[1]["image"], "2");
        assert_eq!(containers[1]["imagePullPolicy"], "Always");
    }

    #[test]
    fn merge_replaces_atomic_lists_and_refuses_duplicates() {
        let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}}});
        let config =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}}});
        let merged = merge(Some(&live), Some(&config), deployment())
            .unwrap()
            .unwrap();
        assert_eq!(
            merged["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["z"])
        );

        let dup =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
        let err = merge(Some(&live), Some(&dup), deployment()).unwrap_err();
        assert_eq!(
            err,
            ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"
        );
        assert!(merge(None, Some(&dup), deployment()).is_err());
    }

    #[test]
    fn untyped_lists_are_atomic_and_maps_merge() {
        let node = ApplySchema::Untyped.root();
        let live = json!({"a": {"x": 1}, "l": [1, 2]});
        let config = json!({"a": {"y": 2}, "l": [3]});
        let merged = merge(Some(&live), Some(&config), node).unwrap().unwrap();
        assert_eq!(merged, json!({"a": {"x": 1, "y": 2}, "l": [3]}));
    }

    #[test]
    fn remove_items_drops_members_and_emptied_parents() {
        let mut value = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 2, "paused": true,
            "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        let mut set = FieldSet::new();
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("a".into()),
        ]);
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("paused".into()),
        ]);
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("template".into()),
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::key(&[("name".into(), json!("b"))]),
        ]);
        remove_items(&mut value, &set, deployment());
        assert_eq!(
            value,
            json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a"}]}}}})
        );
    }

    #[test]
    fn named_fields_become_members() {
        let mut set = FieldSet::new();
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("replicas".into()),
        ]);
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("a".into()),
        ]);
        let named = ensure_named_fields(&set, deployment());
        assert!(named.has(&[PathElement::Field("spec".into())]));
        assert!(named.has(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into())
        ]));
        assert!(!named.has(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("b".into())
        ]));
    }
}
