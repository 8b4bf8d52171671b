//! How objects are kept in storage: their JSON, without `metadata.resourceVersion`, which is
//! not stored but taken from the revision of the write (as upstream's etcd3 store does).

use super::backend::{KeyValue, Revision, StorageError};
use bytes::Bytes;
use serde_json::Value;

/// The bytes to store for `object` (its resourceVersion left out).
pub fn encode(object: &Value) -> Result<Bytes, StorageError> {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    serde_json::to_vec(&object)
        .map(Bytes::from)
        .map_err(|e| StorageError::Internal(format!("encoding object: {e}")))
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
