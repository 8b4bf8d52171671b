//! `DefaultStorageClass`: a PersistentVolumeClaim that names no storage class gets the
//! cluster's default one. A claim giving `storageClassName: ""` asks for none and is left
//! alone; only an absent (or null) class is filled.

use super::service_account::child_object;
use crate::admission::{Attributes, Operation, Plugin};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

pub const IS_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
pub const BETA_IS_DEFAULT_CLASS_ANNOTATION: &str =
    "storageclass.beta.kubernetes.io/is-default-class";
/// The annotation that named a claim's class before `spec.storageClassName` existed.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

#[derive(Debug, Default)]
pub struct DefaultStorageClass;

#[async_trait]
impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    async fn admit(
        &self,
        attrs: &Attributes,
        object: &mut Value,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create
            || !attrs.is_main("", "persistentvolumeclaims")
            || has_class(object)
        {
            return Ok(());
        }
        let defaults = state.list("storage.k8s.io", "storageclasses", None, &is_default_class);
        if let Some(class) = newest_default(&defaults) {
            set_class(object, class);
        }
        Ok(())
    }
}

/// Whether the claim already says which class it wants (the empty class included).
pub fn has_class(claim: &Value) -> bool {
    claim["metadata"]["annotations"]
        .get(BETA_STORAGE_CLASS_ANNOTATION)
        .is_some()
        || !claim["spec"]["storageClassName"].is_null()
}

pub fn is_default_class(class: &Value) -> bool {
    let annotations = &class["metadata"]["annotations"];
    annotations[IS_DEFAULT_CLASS_ANNOTATION] == "true"
        || annotations[BETA_IS_DEFAULT_CLASS_ANNOTATION] == "true"
}

/// Of several default classes (a cluster migrating from one default to another), the most
/// recently created one wins, the first name breaking a tie, as upstream since 1.26.
pub fn newest_default(classes: &[Arc<Value>]) -> Option<&str> {
    classes
        .iter()
        .filter(|c| is_default_class(c))
        .filter_map(|c| {
            let name = c["metadata"]["name"].as_str()?;
            let created = c["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok());
            Some((created, name))
        })
        .max_by(|(t1, n1), (t2, n2)| t1.cmp(t2).then_with(|| n2.cmp(n1)))
        .map(|(_, name)| name)
}

pub fn set_class(claim: &mut Value, class: &str) {
    if let Some(spec) = child_object(claim, "spec") {
        spec.insert("storageClassName".into(), Value::from(class));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, default: bool) -> Arc<Value> {
        Arc::new(json!({
            "metadata": {
                "name": name,
                "creationTimestamp": created,
                "annotations": {IS_DEFAULT_CLASS_ANNOTATION: default.to_string()},
            },
            "provisioner": "example.com/p",
        }))
    }

    #[test]
    fn only_an_absent_class_is_defaulted() {
        assert!(!has_class(&json!({"spec": {}})));
        assert!(!has_class(&json!({"spec": {"storageClassName": null}})));
        assert!(has_class(&json!({"spec": {"storageClassName": ""}})));
        assert!(has_class(&json!({"spec": {"storageClassName": "fast"}})));
        assert!(has_class(&json!({"metadata": {"annotations": {
            BETA_STORAGE_CLASS_ANNOTATION: "fast"
        }}, "spec": {}})));
    }

    #[test]
    fn the_default_is_the_annotated_class() {
        let classes = vec![
            class("slow", "2024-01-01T00:00:00Z", false),
            class("fast", "2023-01-01T00:00:00Z", true),
        ];
        assert_eq!(newest_default(&classes), Some("fast"));
        let beta = Arc::new(json!({"metadata": {"name": "old", "annotations": {
            BETA_IS_DEFAULT_CLASS_ANNOTATION: "true"
        }}}));
        assert_eq!(newest_default(&[beta]), Some("old"));
        assert_eq!(
            newest_default(&[class("slow", "2024-01-01T00:00:00Z", false)]),
            None
        );
    }

    #[test]
    fn the_newest_of_several_defaults_wins_then_the_first_name() {
        let classes = vec![
            class("a", "2023-01-01T00:00:00Z", true),
            class("c", "2024-06-01T00:00:00Z", true),
            class("b", "2024-06-01T00:00:00Z", true),
        ];
        assert_eq!(newest_default(&classes), Some("b"));
    }

    #[test]
    fn sets_the_class_name() {
        let mut claim = json!({"metadata": {"name": "c"}});
        set_class(&mut claim, "fast");
        assert_eq!(claim["spec"]["storageClassName"], "fast");
    }

    mod through_the_state {
        use super::super::super::service_account::fixture::{attrs, fixture};
        use super::*;
        use crate::admission::Operation;

        #[tokio::test]
        async fn claims_get_the_stored_default() {
            let f = fixture().await;
            let plugin = DefaultStorageClass;
            let a = attrs(Operation::Create, "", "persistentvolumeclaims", "ns", "c");
            let mut before = json!({"metadata": {"name": "c"}, "spec": {}});
            plugin
                .admit(&a, &mut before, None, &f.state)
                .await
                .expect("admitted");
            assert!(before["spec"].get("storageClassName").is_none());

            f.create(
                "storage.k8s.io",
                "storageclasses",
                None,
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                       "metadata": {"name": "standard",
                                    "annotations": {IS_DEFAULT_CLASS_ANNOTATION: "true"}},
                       "provisioner": "example.com/p"}),
            )
            .await;
            let mut claim = json!({"metadata": {"name": "c"}, "spec": {}});
            plugin
                .admit(&a, &mut claim, None, &f.state)
                .await
                .expect("admitted");
            assert_eq!(claim["spec"]["storageClassName"], "standard");
            let mut none = json!({"metadata": {"name": "c"}, "spec": {"storageClassName": ""}});
            plugin
                .admit(&a, &mut none, None, &f.state)
                .await
                .expect("admitted");
            assert_eq!(none["spec"]["storageClassName"], "");
        }
    }
}
