//! `NamespaceLifecycle`: no new objects in a namespace that does not exist or is being
//! terminated, and the system namespaces cannot be deleted.

use crate::admission::{Attributes, Operation, Plugin, forbidden, object_name};
use crate::http::status::ApiError;
use crate::registry::ObjectLookup;
use crate::registry::meta;
use crate::rest::state::ApiState;
use async_trait::async_trait;
use serde_json::Value;

/// Namespaces upstream refuses to delete.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

#[derive(Debug, Default)]
pub struct NamespaceLifecycle;

#[async_trait]
impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    async fn validate(
        &self,
        attrs: &Attributes,
        object: Option<&Value>,
        _old: Option<&Value>,
        state: &ApiState,
    ) -> Result<(), ApiError> {
        if attrs.is_main("", "namespaces") {
            if attrs.operation == Operation::Delete && IMMORTAL.contains(&attrs.name.as_str()) {
                return Err(forbidden(
                    attrs,
                    &attrs.name,
                    "this namespace may not be deleted",
                ));
            }
            return Ok(());
        }
        if attrs.operation != Operation::Create
            || attrs.namespace.is_empty()
            || !attrs.resource.namespaced
        {
            return Ok(());
        }
        // The cache may not have seen a namespace created a moment ago: ask storage then.
        let namespace = match state.get("", "namespaces", None, &attrs.namespace) {
            Some(ns) => (*ns).clone(),
            None => match state.store("", "v1", "namespaces") {
                Some(store) => store
                    .get(None, &attrs.namespace)
                    .await
                    .map_err(ApiError::from)?,
                None => return Ok(()),
            },
        };
        if meta::is_terminating(&namespace) || namespace["status"]["phase"] == "Terminating" {
            return Err(forbidden(
                attrs,
                object_name(attrs, object),
                &format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    attrs.namespace
                ),
            ));
        }
        Ok(())
    }
}
