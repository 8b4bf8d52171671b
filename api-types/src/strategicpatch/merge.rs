//! The strategic merge itself: maps, lists and the `$` directives.

use serde_json::{Map, Value};

use super::SmpError;
use super::order;
use super::schema::Schema;
use super::strategies::{FieldMeta, Strategy};

/// `$patch: replace | delete | merge`, in a map or as a list element.
const PATCH_DIRECTIVE: &str = "$patch";
/// `$retainKeys: [..]`: the keys of the map to keep; the others are cleared.
const RETAIN_KEYS: &str = "$retainKeys";
/// `$deleteFromPrimitiveList/<field>: [..]`: values to drop from a list of primitives.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
/// `$setElementOrder/<field>: [..]`: the order of the merged list.
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Merges `patch` into `original`, two maps of type `schema`.
pub(super) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema,
) -> Result<Map<String, Value>, SmpError> {
    if let Some(directive) = patch.remove(PATCH_DIRECTIVE) {
        return match directive.as_str() {
            // Still merged into nothing, so nested directives and nulls do not leak through.
            Some("replace") => merge_map(Map::new(), patch, schema),
            Some("delete") => Ok(Map::new()),
            _ => Err(SmpError::Other(format!(
                "unknown patch type: {directive} in map: {}",
                Value::Object(patch)
            ))),
        };
    }

    apply_retain_keys(&mut original, &mut patch)?;
    apply_set_element_order(&mut original, &mut patch, schema)?;

    let mut deletions = Vec::new();
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            deletions.push((field.to_string(), value));
            continue;
        }
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let (meta, child) = schema.field(&key);
        let merged = match original.remove(&key) {
            Some(current) => Some(merge_value(current, value, &meta, child)?),
            None => new_value(value, &meta, child)?,
        };
        if let Some(merged) = merged {
            original.insert(key, merged);
        }
    }

    for (field, values) in deletions {
        let Value::Array(values) = values else {
            return Err(SmpError::BadPrimitiveList);
        };
        if let Some(Value::Array(list)) = original.get_mut(&field) {
            list.retain(|item| !values.contains(item));
        }
    }
    Ok(original)
}

/// `$retainKeys`: drop every key of `original` the list does not name.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(SmpError::BadRetainKeys);
    };
    let mut keep = Vec::with_capacity(retain.len());
    for key in &retain {
        keep.push(key.as_str().ok_or(SmpError::BadRetainKeys)?);
    }
    // A value the patch sets must survive the clearing, or the patch contradicts itself.
    let contradicts = patch
        .iter()
        .any(|(k, v)| !k.starts_with('$') && !v.is_null() && !keep.contains(&k.as_str()));
    if contradicts {
        return Err(SmpError::NotMatchingRetainKeys);
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// `$setElementOrder/<field>`: merge `<field>` now and order it as the directive says, removing
/// both from the patch so the main loop does not merge them again.
fn apply_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema,
) -> Result<(), SmpError> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(Value::Array(order)) = patch.remove(&directive) else {
            return Err(SmpError::BadSetElementOrder);
        };
        let field = &directive[SET_ELEMENT_ORDER.len()..];
        let (meta, child) = schema.field(field);

        let current = match original.get(field) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(_) => return Err(SmpError::BadSetElementOrder),
        };
        let patched = match patch.remove(field) {
            None => None,
            Some(Value::Array(items)) => Some(items),
            // Not a list (say `null`, deleting it): leave it to the main loop, no order to set.
            Some(other) => {
                patch.insert(field.to_string(), other);
                continue;
            }
        };
        let key = element_key(current.as_deref(), patched.as_deref(), &meta)?;
        if let Some(patched) = &patched {
            check_order_matches(patched, &order, key)?;
        }
        let merged = match (current.clone(), patched) {
            (Some(current), None) => current,
            (None, Some(patched)) => merge_list(Vec::new(), patched, &meta, child)?,
            (Some(current), Some(patched)) => merge_list(current, patched, &meta, child)?,
            (None, None) => continue,
        };
        let (in_order, server_only) = order::partition(merged, &order, key);
        let current = current.unwrap_or_default();
        let ordered = order::normalize_element_order(in_order, server_only, &order, &current, key);
        original.insert(field.to_string(), Value::Array(ordered));
    }
    Ok(())
}

/// The merge key to identify elements by: the field's key for lists of objects, none for lists
/// of primitives.
fn element_key<'m>(
    current: Option<&[Value]>,
    patched: Option<&[Value]>,
    meta: &'m FieldMeta,
) -> Result<Option<&'m str>, SmpError> {
    let items = current.unwrap_or(&[]).iter().chain(patched.unwrap_or(&[]));
    Ok(match element_kind(items)? {
        ElementKind::Object => meta.merge_key,
        ElementKind::Primitive | ElementKind::Empty => None,
    })
}

/// Upstream's check that the patch list is in the order `$setElementOrder` gives.
fn check_order_matches(
    patched: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), SmpError> {
    let identity = |v: &Value| -> Option<Value> {
        match key {
            Some(k) => v.get(k).cloned(),
            None => Some(v.clone()),
        }
    };
    let listed: Vec<&Value> = patched
        .iter()
        .filter(|item| item.get(PATCH_DIRECTIVE).is_none())
        .collect();
    let (mut p, mut o) = (0, 0);
    while p < listed.len() && o < order.len() {
        if identity(listed[p]).is_some() && identity(listed[p]) == identity(&order[o]) {
            p += 1;
        }
        o += 1;
    }
    if p < listed.len() {
        return Err(SmpError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            Value::Array(patched.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

/// Merges a non-null patch value into the current value of a field.
fn merge_value(
    current: Value,
    patch: Value,
    meta: &FieldMeta,
    schema: Schema,
) -> Result<Value, SmpError> {
    match (current, patch) {
        (Value::Object(current), Value::Object(patch)) if meta.strategy != Strategy::Replace => {
            merge_map(current, patch, schema).map(Value::Object)
        }
        (Value::Array(current), Value::Array(patch)) => {
            merge_list(current, patch, meta, schema).map(Value::Array)
        }
        // Different types, scalars, or a map to replace: the patch value wins, cleaned.
        (_, patch) => Ok(new_value(patch, meta, schema)?.unwrap_or(Value::Null)),
    }
}

/// A patch value for a field the object does not have: the value with its directives applied
/// to nothing and its nulls dropped. `None` when the value deletes itself (`$patch: delete`).
fn new_value(patch: Value, meta: &FieldMeta, schema: Schema) -> Result<Option<Value>, SmpError> {
    match patch {
        Value::Object(map) => {
            if map.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                return Ok(None);
            }
            merge_map(Map::new(), map, schema).map(|m| Some(Value::Object(m)))
        }
        Value::Array(items) => merge_list(Vec::new(), items, meta, schema).map(|l| Some(l.into())),
        scalar => Ok(Some(scalar)),
    }
}

enum ElementKind {
    Empty,
    Primitive,
    Object,
}

/// The kind of the elements of a list, which must all agree (nulls aside).
fn element_kind<'a>(items: impl Iterator<Item = &'a Value>) -> Result<ElementKind, SmpError> {
    let mut kind = ElementKind::Empty;
    for item in items {
        let this = match item {
            Value::Null => continue,
            Value::Array(_) => return Err(SmpError::ListOfLists),
            Value::Object(_) => ElementKind::Object,
            _ => ElementKind::Primitive,
        };
        match (&kind, &this) {
            (ElementKind::Empty, _) => kind = this,
            (ElementKind::Object, ElementKind::Object)
            | (ElementKind::Primitive, ElementKind::Primitive) => {}
            _ => {
                return Err(SmpError::Other(
                    "list elements are not all of the same type".to_string(),
                ));
            }
        }
    }
    Ok(kind)
}

/// Merges a patch list into the current list of a field.
fn merge_list(
    current: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta,
    schema: Schema,
) -> Result<Vec<Value>, SmpError> {
    if meta.strategy != Strategy::Merge {
        return replace_list(patch, schema);
    }
    if current.is_empty() && patch.is_empty() {
        return Ok(current);
    }
    match element_kind(current.iter().chain(&patch))? {
        ElementKind::Empty => Ok(patch),
        ElementKind::Primitive => Ok(merge_primitives(current, patch)),
        ElementKind::Object => {
            let Some(key) = meta.merge_key else {
                return Err(SmpError::Other(format!(
                    "cannot merge lists without merge key for {}",
                    schema.name()
                )));
            };
            merge_keyed(current, patch, key, schema)
        }
    }
}

/// A list that is not merged: the patch's list, its objects cleaned of directives and nulls.
fn replace_list(patch: Vec<Value>, schema: Schema) -> Result<Vec<Value>, SmpError> {
    patch
        .into_iter()
        .map(|item| match item {
            Value::Object(map) => merge_map(Map::new(), map, schema).map(Value::Object),
            other => Ok(other),
        })
        .collect()
}

/// A list of primitives merged as a set: the union, without duplicates.
fn merge_primitives(current: Vec<Value>, patch: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(current.len() + patch.len());
    for item in current.iter().chain(&patch) {
        if !merged.contains(item) {
            merged.push(item.clone());
        }
    }
    let (in_patch, server_only) = order::partition(merged, &patch, None);
    order::normalize_element_order(in_patch, server_only, &patch, &current, None)
}

/// A list of objects merged by `key`: `$patch: delete` elements remove, `$patch: replace`
/// replaces the whole list, elements with a known key merge into theirs, new ones are added.
fn merge_keyed(
    current: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    schema: Schema,
) -> Result<Vec<Value>, SmpError> {
    let mut base = current;
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(map) = item else {
            continue; // nulls: element_kind has ruled out anything else
        };
        let Some(directive) = map.get(PATCH_DIRECTIVE) else {
            plain.push(map);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let doomed = merge_key_of(&map, key)?.clone();
                base.retain(|item| item.get(key) != Some(&doomed));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(SmpError::Other(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            _ => {
                return Err(SmpError::Other(format!(
                    "unknown patch type: {directive} in map: {}",
                    Value::Object(map.clone())
                )));
            }
        }
    }
    if replace {
        base.clear();
    }

    let mut merged = base.clone();
    let mut patch_order = Vec::with_capacity(plain.len());
    for item in plain {
        let id = merge_key_of(&item, key)?.clone();
        patch_order.push(Value::Object(Map::from_iter([(
            key.to_string(),
            id.clone(),
        )])));
        match merged.iter().position(|m| m.get(key) == Some(&id)) {
            Some(i) => {
                let updated = match std::mem::take(&mut merged[i]) {
                    Value::Object(current) => merge_map(current, item, schema)?,
                    _ => merge_map(Map::new(), item, schema)?,
                };
                merged[i] = Value::Object(updated);
            }
            None => merged.push(Value::Object(merge_map(Map::new(), item, schema)?)),
        }
    }
    let (in_patch, server_only) = order::partition(merged, &patch_order, Some(key));
    Ok(order::normalize_element_order(
        in_patch,
        server_only,
        &patch_order,
        &base,
        Some(key),
    ))
}

fn merge_key_of<'a>(item: &'a Map<String, Value>, key: &str) -> Result<&'a Value, SmpError> {
    item.get(key).ok_or_else(|| {
        SmpError::Other(format!(
            "map: {} does not contain declared merge key: {key}",
            Value::Object(item.clone())
        ))
    })
}
