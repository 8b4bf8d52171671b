//! `StorageObjectInUseProtection`: new PersistentVolumeClaims and PersistentVolumes carry the
//! protection finalizer, so deleting one still in use only marks it until the protection
//! controllers see it is free.

use crate::admission::{Attributes, Operation, Plugin};
use crate::http::status::ApiError;
use crate::registry::meta;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::Value;

pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

#[derive(Debug, Default)]
pub struct StorageObjectInUseProtection;

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        _old: Option<&Value>,
        _state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create {
            return Ok(());
        }
        if attrs.is_main("", "persistentvolumeclaims") {
            add_finalizer(object, PVC_PROTECTION_FINALIZER);
        } else if attrs.is_main("", "persistentvolumes") {
            add_finalizer(object, PV_PROTECTION_FINALIZER);
        }
        Ok(())
    }
}

/// Appends `finalizer` unless the object already has it.
pub fn add_finalizer(object: &mut Value, finalizer: &str) {
    let mut finalizers = meta::finalizers(object);
    if finalizers.iter().any(|f| f == finalizer) {
        return;
    }
    finalizers.push(finalizer.to_string());
    meta::set_finalizers(object, &finalizers);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn adds_the_finalizer_once_after_the_others() {
        let mut pvc = json!({"metadata": {"name": "c", "finalizers": ["example.com/keep"]}});
        add_finalizer(&mut pvc, PVC_PROTECTION_FINALIZER);
        add_finalizer(&mut pvc, PVC_PROTECTION_FINALIZER);
        assert_eq!(
            pvc["metadata"]["finalizers"],
            json!(["example.com/keep", "kubernetes.io/pvc-protection"])
        );

        let mut pv = json!({"metadata": {"name": "v"}});
        add_finalizer(&mut pv, PV_PROTECTION_FINALIZER);
        assert_eq!(
            pv["metadata"]["finalizers"],
            json!(["kubernetes.io/pv-protection"])
        );
    }
}
