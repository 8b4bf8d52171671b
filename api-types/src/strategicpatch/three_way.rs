//! The client half of strategic merge: the three-way patch `kubectl apply` sends. Deletions are
//! what the user removed from the last applied configuration (original → modified); additions
//! and changes are what the live object lacks (current → modified), so fields that others set
//! and the user never managed survive.

use serde_json::{Map, Value};

use super::SmpError;
use super::schema::Schema;
use super::strategies::{FieldMeta, Strategy};

const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Which half of the diff a pass computes (upstream's `DiffOptions`).
#[derive(Clone, Copy)]
struct Diff {
    ignore_deletions: bool,
    ignore_changes_and_additions: bool,
    build_retain_keys: bool,
}

/// Upstream's `CreateThreeWayMergePatch`. With `overwrite` false, a patch that changes a field
/// someone else changed since the last apply is refused as a conflict.
pub fn create_three_way_merge_patch(
    original: &Value,
    modified: &Value,
    current: &Value,
    schema: Schema,
    overwrite: bool,
) -> Result<Value, SmpError> {
    let empty = Map::new();
    let as_map = |v: &'_ Value| -> Result<Map<String, Value>, SmpError> {
        match v {
            Value::Object(m) => Ok(m.clone()),
            Value::Null => Ok(empty.clone()),
            _ => Err(SmpError::BadJsonDoc),
        }
    };
    let (original, modified, current) = (as_map(original)?, as_map(modified)?, as_map(current)?);
    let delta = diff_maps(
        &current,
        &modified,
        schema,
        Diff {
            ignore_deletions: true,
            ignore_changes_and_additions: false,
            build_retain_keys: false,
        },
    )?;
    let deletions = diff_maps(
        &original,
        &modified,
        schema,
        Diff {
            ignore_deletions: false,
            ignore_changes_and_additions: true,
            build_retain_keys: false,
        },
    )?;
    let patch = combine(deletions, delta, schema);
    if !overwrite {
        let changed = diff_maps(
            &original,
            &current,
            schema,
            Diff {
                ignore_deletions: false,
                ignore_changes_and_additions: false,
                build_retain_keys: false,
            },
        )?;
        if conflicts(&patch, &changed) {
            return Err(SmpError::Other(format!(
                "patch:\n{}\nconflicts with changes made from original to current:\n{}\n",
                Value::Object(patch),
                Value::Object(changed)
            )));
        }
    }
    Ok(Value::Object(patch))
}

/// Upstream's `diffMaps`: the patch that turns `original` into `modified`, within the options.
fn diff_maps(
    original: &Map<String, Value>,
    modified: &Map<String, Value>,
    schema: Schema,
    opts: Diff,
) -> Result<Map<String, Value>, SmpError> {
    let mut patch = Map::new();
    let mut retain: Vec<String> = Vec::new();
    for (key, new) in modified {
        if opts.build_retain_keys && !new.is_null() {
            retain.push(key.clone());
        }
        let Some(old) = original.get(key) else {
            if !opts.ignore_changes_and_additions {
                patch.insert(key.clone(), new.clone());
            }
            continue;
        };
        let (meta, child) = schema.field(key);
        match (old, new) {
            (Value::Object(old), Value::Object(new)) => {
                let opts = Diff {
                    build_retain_keys: meta.retain_keys,
                    ..opts
                };
                if meta.strategy == Strategy::Replace {
                    if !opts.ignore_changes_and_additions && old != new {
                        patch.insert(key.clone(), Value::Object(new.clone()));
                    }
                } else {
                    let sub = diff_maps(old, new, child, opts)?;
                    if !sub.is_empty() {
                        patch.insert(key.clone(), Value::Object(sub));
                    }
                }
            }
            (Value::Array(old), Value::Array(new)) if meta.strategy == Strategy::Merge => {
                let opts = Diff {
                    build_retain_keys: meta.retain_keys,
                    ..opts
                };
                diff_merge_list(key, old, new, &meta, child, opts, &mut patch)?;
            }
            _ => {
                if !opts.ignore_changes_and_additions && old != new {
                    patch.insert(key.clone(), new.clone());
                }
            }
        }
    }
    if !opts.ignore_deletions {
        for key in original.keys() {
            if !modified.contains_key(key) {
                patch.insert(key.clone(), Value::Null);
            }
        }
    }
    let extra_in_original = original.keys().any(|k| !modified.contains_key(k));
    if !retain.is_empty() && (!patch.is_empty() || extra_in_original) {
        sort_scalars(&mut retain);
        let retain = retain.into_iter().map(Value::String).collect();
        patch.insert(RETAIN_KEYS.to_string(), Value::Array(retain));
    }
    Ok(patch)
}

/// Upstream's `handleSliceDiff` for merged lists: the additions and changes under `key`, the
/// deletions (as `$patch: delete` elements or `$deleteFromPrimitiveList`), and the order.
fn diff_merge_list(
    key: &str,
    old: &[Value],
    new: &[Value],
    meta: &FieldMeta,
    schema: Schema,
    opts: Diff,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    if old.is_empty() {
        if !new.is_empty() && !opts.ignore_changes_and_additions {
            patch.insert(key.to_string(), Value::Array(new.to_vec()));
        }
        return Ok(());
    }
    let objects = old.iter().chain(new).find(|v| !v.is_null());
    let (list, deletions, order) = match objects {
        Some(Value::Array(_)) => return Err(SmpError::ListOfLists),
        Some(Value::Object(_)) => {
            let merge_key = meta.merge_key.ok_or_else(|| {
                SmpError::Other(format!(
                    "cannot merge lists without merge key for {}",
                    schema.name()
                ))
            })?;
            let (changes, deletions) = diff_lists_of_maps(old, new, merge_key, schema, opts)?;
            let changes = order_like(changes, new, Some(merge_key));
            let same_order = old.len() == new.len()
                && old
                    .iter()
                    .zip(new)
                    .all(|(a, b)| a.get(merge_key) == b.get(merge_key));
            let mut list = changes;
            list.extend(deletions);
            let wants_order = (!opts.ignore_changes_and_additions
                && (!list.is_empty() || !same_order))
                || (!opts.ignore_deletions && !list.is_empty());
            let order = wants_order.then(|| {
                new.iter()
                    .map(|v| {
                        let id = v.get(merge_key).cloned().unwrap_or(Value::Null);
                        Value::Object(Map::from_iter([(merge_key.to_string(), id)]))
                    })
                    .collect::<Vec<_>>()
            });
            (list, Vec::new(), order)
        }
        _ => {
            let (additions, deletions) = diff_lists_of_scalars(old, new, opts);
            let additions = order_like(additions, new, None);
            let wants_order = (!opts.ignore_deletions && !deletions.is_empty())
                || (!opts.ignore_changes_and_additions && old != new);
            (additions, deletions, wants_order.then(|| new.to_vec()))
        }
    };
    if !list.is_empty() {
        patch.insert(key.to_string(), Value::Array(list));
    }
    if !deletions.is_empty() {
        patch.insert(
            format!("{DELETE_FROM_PRIMITIVE_LIST}{key}"),
            Value::Array(deletions),
        );
    }
    if let Some(order) = order.filter(|o| !o.is_empty()) {
        patch.insert(format!("{SET_ELEMENT_ORDER}{key}"), Value::Array(order));
    }
    Ok(())
}

/// How upstream compares merge keys and scalars: by their `%v` text.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn sort_scalars(items: &mut [String]) {
    items.sort();
}

/// A list element with its merge key's text.
type Keyed = (String, Map<String, Value>);

/// Both lists walked in merge-key order: matching elements diff recursively, the rest are
/// additions or `$patch: delete` directives.
fn diff_lists_of_maps(
    old: &[Value],
    new: &[Value],
    merge_key: &str,
    schema: Schema,
    opts: Diff,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let sorted = |list: &[Value]| -> Result<Vec<Keyed>, SmpError> {
        let mut out = Vec::with_capacity(list.len());
        for item in list {
            let Value::Object(map) = item else {
                return Err(SmpError::Other(
                    "list elements are not all of the same type".to_string(),
                ));
            };
            let id = map.get(merge_key).ok_or_else(|| {
                SmpError::Other(format!(
                    "map: {item} does not contain declared merge key: {merge_key}"
                ))
            })?;
            out.push((text(id), map.clone()));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    };
    let (old, new) = (sorted(old)?, sorted(new)?);
    let (mut changes, mut deletions) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let added = i >= old.len() || (j < new.len() && old[i].0 > new[j].0);
        let removed = j >= new.len() || (i < old.len() && old[i].0 < new[j].0);
        if added {
            if !opts.ignore_changes_and_additions {
                changes.push(Value::Object(new[j].1.clone()));
            }
            j += 1;
        } else if removed {
            if !opts.ignore_deletions {
                let id = old[i].1.get(merge_key).cloned().unwrap_or(Value::Null);
                deletions.push(Value::Object(Map::from_iter([
                    ("$patch".to_string(), Value::String("delete".to_string())),
                    (merge_key.to_string(), id),
                ])));
            }
            i += 1;
        } else {
            let mut sub = diff_maps(&old[i].1, &new[j].1, schema, opts)?;
            if !sub.is_empty() {
                let id = new[j].1.get(merge_key).cloned().unwrap_or(Value::Null);
                sub.insert(merge_key.to_string(), id);
                changes.push(Value::Object(sub));
            }
            i += 1;
            j += 1;
        }
    }
    Ok((changes, deletions))
}

/// Additions and deletions of a list of primitives merged as a set.
fn diff_lists_of_scalars(old: &[Value], new: &[Value], opts: Diff) -> (Vec<Value>, Vec<Value>) {
    let sorted = |list: &[Value]| {
        let mut l: Vec<(String, Value)> = list.iter().map(|v| (text(v), v.clone())).collect();
        l.sort_by(|a, b| a.0.cmp(&b.0));
        l
    };
    let (old, new) = (sorted(old), sorted(new));
    let (mut additions, mut deletions): (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i].0 == new[j].0 {
            i += 1;
            j += 1;
        } else if i >= old.len() || (j < new.len() && old[i].0 > new[j].0) {
            if !opts.ignore_changes_and_additions {
                additions.push(new[j].1.clone());
            }
            j += 1;
        } else {
            if !opts.ignore_deletions && !deletions.contains(&old[i].1) {
                deletions.push(old[i].1.clone());
            }
            i += 1;
        }
    }
    (additions, deletions)
}

/// Sorts patch elements by where `order` has them (upstream's `normalizeSliceOrder`).
fn order_like(mut items: Vec<Value>, order: &[Value], key: Option<&str>) -> Vec<Value> {
    let id = |v: &Value| match key {
        Some(k) => v.get(k).cloned(),
        None => Some(v.clone()),
    };
    items.sort_by_key(|item| {
        let me = id(item);
        order
            .iter()
            .position(|o| me.is_some() && id(o) == me)
            .unwrap_or(usize::MAX)
    });
    items
}

/// Adds the additions and changes to the deletions; the two never touch the same element, as
/// a field deleted from the configuration cannot also be in it.
fn combine(
    mut deletions: Map<String, Value>,
    delta: Map<String, Value>,
    schema: Schema,
) -> Map<String, Value> {
    for (key, value) in delta {
        let (meta, child) = schema.field(&key);
        let merged = match (deletions.remove(&key), value) {
            (Some(Value::Object(d)), Value::Object(c)) if meta.strategy != Strategy::Replace => {
                Value::Object(combine(d, c, child))
            }
            (Some(Value::Array(d)), Value::Array(c)) if meta.strategy == Strategy::Merge => {
                Value::Array(combine_lists(d, c, meta.merge_key, child))
            }
            (_, value) => value,
        };
        deletions.insert(key, merged);
    }
    deletions
}

/// Merged lists of both halves: elements with the same merge key combine (both halves may say
/// something about one container), the changes keep the configuration's order and the delete
/// directives go last.
fn combine_lists(
    deletions: Vec<Value>,
    changes: Vec<Value>,
    merge_key: Option<&str>,
    schema: Schema,
) -> Vec<Value> {
    let Some(key) = merge_key else {
        let mut all = changes;
        for d in deletions {
            if !all.contains(&d) {
                all.push(d);
            }
        }
        return all;
    };
    let mut rest = deletions;
    let mut out = Vec::with_capacity(rest.len() + changes.len());
    for change in changes {
        let id = change.get(key).cloned();
        let twin = rest
            .iter()
            .position(|d| d.get("$patch").is_none() && id.is_some() && d.get(key) == id.as_ref());
        match (twin.map(|i| rest.remove(i)), change) {
            (Some(Value::Object(d)), Value::Object(c)) => {
                out.push(Value::Object(combine(d, c, schema)))
            }
            (_, change) => out.push(change),
        }
    }
    let (plain, directives): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|d| d.get("$patch").is_none());
    out.extend(plain);
    out.extend(directives);
    out
}

/// Upstream's `MergingMapsHaveConflicts`, simplified to what apply needs: a path both maps set
/// to different values.
fn conflicts(patch: &Map<String, Value>, changed: &Map<String, Value>) -> bool {
    patch.iter().any(|(key, left)| {
        if key.starts_with('$') {
            return false;
        }
        match (left, changed.get(key)) {
            (_, None) => false,
            (Value::Object(l), Some(Value::Object(r))) => conflicts(l, r),
            (l, Some(r)) => l != r,
        }
    })
}

#[cfg(test)]
#[path = "three_way_tests.rs"]
mod tests;
