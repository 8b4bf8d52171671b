//! How objects are kept in storage: their JSON, without `metadata.resourceVersion`, which is
//! not stored but taken from the revision of the write (as upstream's etcd3 store does).

use super::backend::{KeyValue, Revision, StorageError};
use bytes::Bytes;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// The bytes to store for `object` (its resourceVersion left out).
pub fn encode(object: &Value) -> Result<Bytes, StorageError> {
    // Serialized through a view that skips the field rather than from a copy without it: a
    // copy of the tree per write was a large share of the write path's allocations.
    serde_json::to_vec(&WithoutResourceVersion(object))
        .map(Bytes::from)
        .map_err(|e| StorageError::Internal(format!("encoding object: {e}")))
}

/// `object` as stored: `metadata.resourceVersion` skipped.
struct WithoutResourceVersion<'a>(&'a Value);

/// A map serialized without its `resourceVersion` entry.
struct MetaWithoutResourceVersion<'a>(&'a Map<String, Value>);

impl Serialize for WithoutResourceVersion<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(map) = self.0.as_object() else {
            return self.0.serialize(serializer);
        };
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for (key, value) in map {
            match value {
                Value::Object(meta) if key == "metadata" => {
                    out.serialize_entry(key, &MetaWithoutResourceVersion(meta))?
                }
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

impl Serialize for MetaWithoutResourceVersion<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(None)?;
        for (key, value) in self.0 {
            if key != "resourceVersion" {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

/// What [`decode`] of the value just written for `object` gives, without parsing it again:
/// `object` itself with the write's revision as its resourceVersion. JSON without floating
/// point numbers reads back exactly as it was written; a float may not (serde_json parses them
/// to the nearest value only with its `float_roundtrip` feature), so an object holding one is
/// decoded from the stored bytes, and every reader sees the same value.
pub fn written(mut object: Value, kv: &KeyValue) -> Result<Value, StorageError> {
    if has_float(&object) {
        return decode(kv);
    }
    set_resource_version(&mut object, kv.mod_revision);
    Ok(object)
}

fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// The object stored in `kv`, its resourceVersion set to the revision that last wrote it.
pub fn decode(kv: &KeyValue) -> Result<Value, StorageError> {
    let mut object: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| StorageError::Internal(format!("decoding {}: {e}", kv.key)))?;
    set_resource_version(&mut object, kv.mod_revision);
    Ok(object)
}

/// Sets `metadata.resourceVersion` to `revision`.
pub fn set_resource_version(object: &mut Value, revision: Revision) {
    if let Some(obj) = object.as_object_mut() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "resourceVersion".into(),
                Value::String(revision.to_string()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_version_comes_from_the_revision_not_the_bytes() {
        let object =
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}});
        let bytes = encode(&object).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("resourceVersion"));
        let kv = KeyValue {
            key: "/registry/configmaps/default/a".into(),
            value: bytes,
            create_revision: 3,
            mod_revision: 42,
        };
        let decoded = decode(&kv).unwrap();
        assert_eq!(decoded["metadata"]["resourceVersion"], "42");
        assert_eq!(decoded["metadata"]["name"], "a");
    }

    /// The view that skips resourceVersion writes the same bytes as a copy without it.
    #[test]
    fn encoding_matches_a_copy_without_the_resource_version() {
        let objects = [
            json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "7", "uid": "u"},
                   "spec": {"x": [1, 2.5, "s", null, {"resourceVersion": "kept"}]}}),
            json!({"metadata": {"resourceVersion": "7"}}),
            json!({"metadata": "odd", "resourceVersion": "top level stays"}),
            json!([1, 2]),
            json!("scalar"),
        ];
        for object in objects {
            let mut copy = object.clone();
            if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
            assert_eq!(encode(&object).unwrap(), serde_json::to_vec(&copy).unwrap());
        }
    }

    /// `written` is what decoding the stored bytes gives, floats included.
    #[test]
    fn written_equals_decoding_what_was_stored() {
        let objects = [
            json!({"metadata": {"name": "a", "resourceVersion": "3"}, "n": [1, -2, u64::MAX]}),
            json!({"metadata": {"name": "a"}, "f": 0.1, "g": 1e300, "h": 2.0}),
        ];
        for object in objects {
            let kv = KeyValue {
                key: "k".into(),
                value: encode(&object).unwrap(),
                create_revision: 5,
                mod_revision: 9,
            };
            assert_eq!(written(object, &kv).unwrap(), decode(&kv).unwrap());
        }
    }

    #[test]
    fn garbage_is_an_internal_error() {
        let kv = KeyValue {
            key: "k".into(),
            value: Bytes::from_static(b"{nope"),
            create_revision: 1,
            mod_revision: 1,
        };
        assert!(matches!(decode(&kv), Err(StorageError::Internal(_))));
    }
}
