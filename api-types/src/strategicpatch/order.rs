//! Element order of merged lists, as upstream settles it: the items named in the patch (or in
//! `$setElementOrder`) keep the patch's order, the items only the server has keep the server's
//! order, and the two runs are interleaved by where the server had them.

use std::collections::VecDeque;

use serde_json::Value;

/// What identifies a list element: its merge-key value for lists of objects, itself otherwise.
fn identity<'a>(item: &'a Value, key: Option<&str>) -> Option<&'a Value> {
    match key {
        Some(k) => item.get(k),
        None => Some(item),
    }
}

/// Where an element with the identity of `item` sits in `list`.
fn index_of(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    let id = identity(item, key)?;
    list.iter().position(|x| identity(x, key) == Some(id))
}

/// Splits `merged` into the items present in `by` and the others, each keeping its order.
pub(super) fn partition(
    merged: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> (Vec<Value>, Vec<Value>) {
    merged
        .into_iter()
        .partition(|item| index_of(by, item, key).is_some())
}

/// Orders the patch items by `patch_order` and the server-only items by `server_order`, then
/// interleaves them (upstream's `normalizeElementOrder`).
pub(super) fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let patch_items = sort_by(patch_items, patch_order, key);
    let server_only = sort_by(server_only, server_order, key);
    interleave(server_only, patch_items, server_order, key)
}

/// A stable sort by position in `order`; items `order` does not name go last, in their order.
fn sort_by(mut items: Vec<Value>, order: &[Value], key: Option<&str>) -> Vec<Value> {
    items.sort_by_key(|item| index_of(order, item, key).unwrap_or(usize::MAX));
    items
}

/// Inserts each server-only item (`left`) before the first patch item (`right`) that the server
/// had after it; the relative order within each run is kept.
fn interleave(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut left = VecDeque::from(left);
    let mut right = VecDeque::from(right);
    let mut out = Vec::with_capacity(left.len() + right.len());
    loop {
        let take_left = match (left.front(), right.front()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (index_of(server_order, l, key), index_of(server_order, r, key)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left {
            left.pop_front()
        } else {
            right.pop_front()
        };
        out.extend(next);
    }
    out
}
