//! `/configz`: each component publishes the configuration it runs with, under its API group name.

use parking_lot::RwLock;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The set of published configurations; cloning shares it.
#[derive(Clone, Default)]
pub struct Configz {
    entries: Arc<RwLock<Map<String, Value>>>,
}

impl Configz {
    /// Publishes (or replaces) the configuration under `name`, e.g. `kubescheduler.config.k8s.io`.
    pub fn set(&self, name: &str, config: Value) {
        self.entries.write().insert(name.to_string(), config);
    }

    /// The JSON document `/configz` serves.
    pub fn to_json(&self) -> Value {
        Value::Object(self.entries.read().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serves_every_entry_by_name() {
        let configz = Configz::default();
        configz.set("a.config.k8s.io", json!({"x": 1}));
        configz.set("b.config.k8s.io", json!({"y": 2}));
        configz.set("a.config.k8s.io", json!({"x": 3}));
        assert_eq!(
            configz.to_json(),
            json!({"a.config.k8s.io": {"x": 3}, "b.config.k8s.io": {"y": 2}})
        );
    }
}
