//! Bounding the work of rules. The `cel` crate counts no cost while it runs, so each run is
//! priced before it starts, from the expression and the data it will see: a rule nested `d`
//! comprehensions deep over collections of at most `L` elements costs about
//! `size × L^d`, plus one pass over its data. A rule priced over the per-call limit does not
//! run, nor do any rules once the object's budget is spent (upstream's two limits).

use super::check::Facts;
use serde_json::Value;

/// The most one evaluation may cost.
pub(super) const PER_CALL_LIMIT: u64 = 10_000_000;

/// The most the rules of one object may cost together.
pub(super) const OBJECT_BUDGET: u64 = 100_000_000;

/// How big the data a rule sees is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct DataSize {
    /// Values plus string bytes / 8: what one pass over the data costs.
    pub weight: u64,
    /// The length of the longest list or map (a comprehension's trip count).
    pub widest: u64,
}

impl DataSize {
    /// Measures `v` (and `old`, when the rule also sees it).
    pub fn of(v: &Value, old: Option<&Value>) -> DataSize {
        let mut size = DataSize::default();
        measure(v, &mut size);
        if let Some(old) = old {
            measure(old, &mut size);
        }
        size
    }
}

fn measure(v: &Value, size: &mut DataSize) {
    size.weight = size.weight.saturating_add(1);
    match v {
        Value::String(s) => size.weight = size.weight.saturating_add(s.len() as u64 / 8),
        Value::Array(items) => {
            size.widest = size.widest.max(items.len() as u64);
            items.iter().for_each(|i| measure(i, size));
        }
        Value::Object(map) => {
            size.widest = size.widest.max(map.len() as u64);
            map.values().for_each(|i| measure(i, size));
        }
        _ => {}
    }
}

/// The price of running an expression with `facts` on data of `size`.
pub(super) fn price(facts: &Facts, size: DataSize) -> u64 {
    let trips = size.widest.max(1).saturating_pow(facts.loop_depth);
    facts.size.saturating_mul(trips).saturating_add(size.weight)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_loops_over_wide_data_are_priced_over_the_limit() {
        let items: Vec<Value> = (0..5000)
            .map(|i| json!({"name": format!("n{i}")}))
            .collect();
        let data = json!({ "items": items });
        let size = DataSize::of(&data, None);
        assert_eq!(size.widest, 5000);
        let flat = Facts {
            uses_old_self: false,
            loop_depth: 1,
            size: 12,
            ..Facts::default()
        };
        let nested = Facts {
            uses_old_self: false,
            loop_depth: 2,
            size: 20,
            ..Facts::default()
        };
        assert!(price(&flat, size) < PER_CALL_LIMIT);
        assert!(price(&nested, size) > PER_CALL_LIMIT);
        let deep = Facts {
            uses_old_self: false,
            loop_depth: 40,
            size: 20,
            ..Facts::default()
        };
        assert_eq!(price(&deep, size), u64::MAX);
    }
}
