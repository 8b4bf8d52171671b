//! The JSON merge patch (RFC 7386) that turns one JSON value into another: keys gone from the
//! new value become `null`, objects recurse, anything else is replaced. A status patch built
//! this way leaves no stale key behind (a merge would keep `waiting` beside a new `running`).

use serde_json::{Map, Value};

/// The merge patch from `old` to `new`; None when they are equal.
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, ov) in o {
                match n.get(k) {
                    None => {
                        patch.insert(k.clone(), Value::Null);
                    }
                    Some(nv) => {
                        if let Some(p) = merge_diff(ov, nv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                }
            }
            for (k, nv) in n {
                if !o.contains_key(k) {
                    patch.insert(k.clone(), nv.clone());
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Applies a merge patch as RFC 7386 does, to check the diff round-trips.
    fn apply(target: &mut Value, patch: &Value) {
        match (target.as_object_mut(), patch.as_object()) {
            (Some(t), Some(p)) => {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        apply(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
            _ => *target = patch.clone(),
        }
    }

    #[test]
    fn diffs_round_trip() {
        let cases = [
            (json!({"a": 1}), json!({"a": 1})),
            (json!({"a": 1}), json!({"a": 2})),
            (
                json!({"s": {"waiting": {"reason": "X"}}}),
                json!({"s": {"running": {}}}),
            ),
            (json!({"l": [1, 2]}), json!({"l": [2]})),
            (json!({"a": 1, "b": 2}), json!({"b": 3, "c": {"d": 4}})),
        ];
        for (old, new) in cases {
            let mut got = old.clone();
            match merge_diff(&old, &new) {
                Some(p) => apply(&mut got, &p),
                None => assert_eq!(old, new),
            }
            assert_eq!(got, new, "{old} -> {new}");
        }
        assert_eq!(merge_diff(&json!({"a": 1}), &json!({"a": 1})), None);
    }
}
