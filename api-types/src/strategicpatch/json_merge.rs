//! The three-way patch for objects without patch strategies (custom resources), as upstream's
//! `jsonmergepatch.CreateThreeWayJSONMergePatch`: a JSON merge patch (RFC 7386) carrying the
//! deletions from the last applied configuration and the additions and changes against live.

use serde_json::{Map, Value};

/// The merge patch that turns `current` into `modified`, with only its deletions (`nulls`) or
/// only its additions and changes, combined with the deletions from `original`.
pub fn create_three_way_json_merge_patch(
    original: &Value,
    modified: &Value,
    current: &Value,
) -> Value {
    let mut add_and_change = merge_diff(current, modified);
    keep_nulls(&mut add_and_change, false);
    let mut deletions = merge_diff(original, modified);
    keep_nulls(&mut deletions, true);
    deep_merge(deletions, add_and_change)
}

/// RFC 7386's patch from `from` to `to`: changed or added keys with their new value, removed
/// keys as `null`; anything but two objects is replaced whole.
fn merge_diff(from: &Value, to: &Value) -> Value {
    let (Value::Object(from), Value::Object(to)) = (from, to) else {
        return to.clone();
    };
    let mut patch = Map::new();
    for (key, new) in to {
        match from.get(key) {
            Some(old) if old == new => {}
            Some(old @ Value::Object(_)) if new.is_object() => {
                patch.insert(key.clone(), merge_diff(old, new));
            }
            _ => {
                patch.insert(key.clone(), new.clone());
            }
        }
    }
    for key in from.keys() {
        if !to.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    Value::Object(patch)
}

/// Keeps only the `null`s (and the maps leading to them), or drops them all. A map the patch
/// sets empty is a value; a map emptied by the filtering is no patch at all.
fn keep_nulls(patch: &mut Value, keep: bool) {
    let Value::Object(map) = patch else {
        return;
    };
    map.retain(|_, v| match v {
        Value::Null => keep,
        Value::Object(m) if m.is_empty() => !keep,
        Value::Object(_) => {
            keep_nulls(v, keep);
            v.as_object().is_some_and(|m| !m.is_empty())
        }
        _ => !keep,
    });
}

fn deep_merge(base: Value, over: Value) -> Value {
    match (base, over) {
        (Value::Object(mut base), Value::Object(over)) => {
            for (key, value) in over {
                let merged = match base.remove(&key) {
                    Some(old) => deep_merge(old, value),
                    None => value,
                };
                base.insert(key, merged);
            }
            Value::Object(base)
        }
        (_, over) => over,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::create_three_way_json_merge_patch as three_way;

    #[test]
    fn three_way_json_merge() {
        let cases = [
            (
                "removed field from config, added by others kept",
                json!({"spec": {"a": 1, "b": 2}}),
                json!({"spec": {"a": 1}}),
                json!({"spec": {"a": 1, "b": 2, "c": 3}}),
                json!({"spec": {"b": null}}),
            ),
            (
                "changed value against live",
                json!({"spec": {"a": 1}}),
                json!({"spec": {"a": 2}}),
                json!({"spec": {"a": 5}}),
                json!({"spec": {"a": 2}}),
            ),
            (
                "nothing to do",
                json!({"spec": {"a": 1}}),
                json!({"spec": {"a": 1}}),
                json!({"spec": {"a": 1}, "status": {}}),
                json!({}),
            ),
            (
                "live-only fields are no patch",
                json!({"spec": {"a": 1}}),
                json!({"spec": {"a": 1}}),
                json!({"metadata": {"uid": "u"}, "spec": {"a": 1, "z": {"q": 1}}}),
                json!({}),
            ),
            (
                "list replaced whole",
                json!({"l": [1, 2]}),
                json!({"l": [1]}),
                json!({"l": [1, 2]}),
                json!({"l": [1]}),
            ),
        ];
        for (name, original, modified, current, want) in cases {
            assert_eq!(three_way(&original, &modified, &current), want, "{name}");
        }
    }
}
