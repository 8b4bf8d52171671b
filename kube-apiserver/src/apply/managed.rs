//! `metadata.managedFields`: decoding the entries into field sets per manager, and encoding them
//! back in upstream's order, with upstream's cap on Update entries.

use super::fieldpath::FieldSet;
use serde_json::{Map, Value, json};

/// `Apply` or `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Upstream's cap on Update entries; the oldest beyond it merge into [`ANCIENT_CHANGES`].
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager the oldest Update entries are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// One managedFields entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// RFC 3339, seconds.
    pub time: Option<String>,
    pub subresource: String,
    pub fields: FieldSet,
}

impl Entry {
    /// Whether `self` is the entry of this manager, operation and subresource (and, for
    /// updates, apiVersion): upstream's manager identifier ignores an applier's apiVersion.
    pub fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    fn same_identity(&self, other: &Entry) -> bool {
        self.is(
            &other.manager,
            other.operation,
            &other.api_version,
            &other.subresource,
        )
    }

    /// How conflicts name the manager: `"mgr"`, `"mgr" with subresource "status"`, and for
    /// updates `... using apps/v1`.
    pub fn describe(&self) -> String {
        let mut text = crate::http::status::go_quote(&self.manager);
        if !self.subresource.is_empty() {
            text.push_str(&format!(
                " with subresource {}",
                crate::http::status::go_quote(&self.subresource)
            ));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }
}

/// The entries of an object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managed {
    pub entries: Vec<Entry>,
}

impl Managed {
    /// Decodes `metadata.managedFields`; None when it is malformed (as upstream, the caller
    /// then falls back to the live object's).
    pub fn decode(value: Option<&Value>) -> Option<Managed> {
        let mut managed = Managed::default();
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Some(managed);
        };
        for item in value.as_array()? {
            let operation = match item.get("operation")?.as_str()? {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return None,
            };
            if let Some(kind) = item.get("fieldsType").and_then(Value::as_str)
                && kind != "FieldsV1"
            {
                return None;
            }
            let fields = match item.get("fieldsV1") {
                Some(v) if !v.is_null() => FieldSet::from_fields_v1(v)?,
                _ => FieldSet::new(),
            };
            let text = |key: &str| {
                item.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let entry = Entry {
                manager: text("manager"),
                operation,
                api_version: text("apiVersion"),
                time: item.get("time").and_then(Value::as_str).map(String::from),
                subresource: text("subresource"),
                fields,
            };
            // Two entries of one identity are one manager's: their fields join.
            match managed.entries.iter_mut().find(|e| e.same_identity(&entry)) {
                Some(existing) => existing.fields = existing.fields.union(&entry.fields),
                None => managed.entries.push(entry),
            }
        }
        Some(managed)
    }

    /// Whether a request's managedFields ask for a reset: `[]` or `[{}]`.
    pub fn is_reset(value: Option<&Value>) -> bool {
        match value.and_then(Value::as_array).map(Vec::as_slice) {
            Some([]) => true,
            Some([only]) => only.as_object().is_some_and(Map::is_empty),
            _ => false,
        }
    }

    /// The entry of this identity, if any.
    pub fn find_mut(
        &mut self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|e| e.is(manager, operation, api_version, subresource))
    }

    /// Drops entries that own nothing.
    pub fn drop_empty(&mut self) {
        self.entries.retain(|e| !e.fields.is_empty());
    }

    /// Merges the oldest Update entries beyond [`MAX_UPDATE_MANAGERS`] into one
    /// [`ANCIENT_CHANGES`] entry per apiVersion, as upstream's capManagers does.
    pub fn cap_updates(&mut self) {
        let mut updaters: Vec<usize> = (0..self.entries.len())
            .filter(|&i| self.entries[i].operation == Operation::Update)
            .collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        updaters.sort_by(|&a, &b| {
            let (ea, eb) = (&self.entries[a], &self.entries[b]);
            ea.time
                .cmp(&eb.time)
                .then_with(|| ea.manager.cmp(&eb.manager))
        });
        let mut remaining = updaters.len();
        let mut first_of_version: Vec<(String, usize)> = Vec::new();
        let mut remove = Vec::new();
        for index in updaters {
            if remaining <= MAX_UPDATE_MANAGERS {
                break;
            }
            let version = self.entries[index].api_version.clone();
            match first_of_version.iter().find(|(v, _)| *v == version) {
                Some(&(_, bucket)) => {
                    let merged = self.entries[index].clone();
                    let target = &mut self.entries[bucket];
                    target.manager = ANCIENT_CHANGES.to_string();
                    target.subresource = String::new();
                    target.fields = target.fields.union(&merged.fields);
                    // The bucket carries the newer time of what joined it.
                    target.time = merged.time;
                    remove.push(index);
                    remaining -= 1;
                }
                None => first_of_version.push((version, index)),
            }
        }
        remove.sort_unstable();
        for index in remove.into_iter().rev() {
            self.entries.remove(index);
        }
    }

    /// The `managedFields` list, sorted as upstream (operation, time, manager, apiVersion,
    /// subresource); None when no entry owns anything.
    pub fn encode(&self) -> Option<Value> {
        let mut entries: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| !e.fields.is_empty())
            .collect();
        if entries.is_empty() {
            return None;
        }
        entries.sort_by(|a, b| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| a.time.cmp(&b.time))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| a.api_version.cmp(&b.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        let list = entries
            .into_iter()
            .map(|e| {
                let mut item = json!({
                    "manager": e.manager,
                    "operation": e.operation.as_str(),
                    "apiVersion": e.api_version,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": e.fields.to_fields_v1(),
                });
                if let Some(time) = &e.time {
                    item["time"] = json!(time);
                }
                if !e.subresource.is_empty() {
                    item["subresource"] = json!(e.subresource);
                }
                item
            })
            .collect();
        Some(Value::Array(list))
    }
}

/// Writes `managed` into the object's metadata (removing the field when nothing is owned).
pub fn set_managed_fields(object: &mut Value, managed: &Managed) {
    let meta = crate::registry::meta::meta_mut(object);
    match managed.encode() {
        Some(list) => meta.insert("managedFields".into(), list),
        None => meta.remove("managedFields"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::fieldpath::PathElement;

    fn entry(manager: &str, operation: Operation, time: &str, field: &str) -> Entry {
        let mut fields = FieldSet::new();
        fields.insert(&[PathElement::Field(field.into())]);
        Entry {
            manager: manager.into(),
            operation,
            api_version: "v1".into(),
            time: Some(time.into()),
            subresource: String::new(),
            fields,
        }
    }

    #[test]
    fn decode_encode_round_trip_sorted() {
        let list = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:03Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:y": {}}}, "subresource": "status"},
        ]);
        let managed = Managed::decode(Some(&list)).unwrap();
        assert_eq!(managed.entries.len(), 2);
        let encoded = managed.encode().unwrap();
        assert_eq!(encoded[0]["manager"], "a", "Apply sorts before Update");
        assert_eq!(encoded[0]["subresource"], "status");
        assert_eq!(encoded[1], list[0]);
    }

    #[test]
    fn malformed_and_reset_lists() {
        assert!(Managed::decode(Some(&json!([{"operation": "Bogus"}]))).is_none());
        assert!(Managed::decode(Some(&json!({}))).is_none());
        assert!(
            Managed::decode(Some(
                &json!([{"operation": "Update", "fieldsType": "FieldsV2"}])
            ))
            .is_none()
        );
        assert!(Managed::is_reset(Some(&json!([]))));
        assert!(Managed::is_reset(Some(&json!([{}]))));
        assert!(!Managed::is_reset(None));
        assert!(!Managed::is_reset(Some(&json!([{"manager": "x"}]))));
    }

    #[test]
    fn describe_managers_as_conflicts_do() {
        let mut e = entry("kubectl-edit", Operation::Update, "t", "a");
        e.api_version = "apps/v1".into();
        assert_eq!(e.describe(), "\"kubectl-edit\" using apps/v1");
        let mut a = entry("a", Operation::Apply, "t", "a");
        assert_eq!(a.describe(), "\"a\"");
        a.subresource = "status".into();
        assert_eq!(a.describe(), "\"a\" with subresource \"status\"");
    }

    #[test]
    fn oldest_updates_beyond_the_cap_become_ancient_changes() {
        let mut managed = Managed::default();
        for i in 0..12 {
            managed.entries.push(entry(
                &format!("m{i:02}"),
                Operation::Update,
                &format!("2024-01-01T00:00:{i:02}Z"),
                &format!("f{i}"),
            ));
        }
        managed.entries.push(entry(
            "applier",
            Operation::Apply,
            "2020-01-01T00:00:00Z",
            "z",
        ));
        managed.cap_updates();
        let updates: Vec<&Entry> = managed
            .entries
            .iter()
            .filter(|e| e.operation == Operation::Update)
            .collect();
        assert_eq!(updates.len(), MAX_UPDATE_MANAGERS);
        let ancient = updates
            .iter()
            .find(|e| e.manager == ANCIENT_CHANGES)
            .unwrap();
        assert_eq!(ancient.fields.paths().len(), 3, "m00, m01 and m02 merged");
        assert_eq!(ancient.time.as_deref(), Some("2024-01-01T00:00:02Z"));
        assert!(managed.entries.iter().any(|e| e.manager == "applier"));
    }
}
