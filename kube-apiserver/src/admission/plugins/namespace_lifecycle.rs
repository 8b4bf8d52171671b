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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Chain, RequestAdmission};
    use crate::http::auth::user::UserInfo;
    use crate::registry::{DeleteOptions, DeleteOutcome, RegistryError, ResourceStore};
    use crate::test_support::test_state;
    use serde_json::json;
    use std::sync::Arc;

    fn admitted(
        state: &Arc<ApiState>,
        plural: &str,
        op: Operation,
        ns: &str,
        name: &str,
    ) -> ResourceStore {
        let store = state.store("", "v1", plural).expect("served");
        let attrs = Attributes {
            operation: op,
            resource: store.info(),
            subresource: String::new(),
            namespace: ns.into(),
            name: name.into(),
            user: UserInfo::anonymous(),
            dry_run: false,
            warnings: Default::default(),
        };
        store.with_admission(Arc::new(RequestAdmission {
            chain: Arc::new(Chain::of(vec![Box::new(NamespaceLifecycle)])),
            attrs,
            state: state.clone(),
        }))
    }

    fn configmap(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    }

    fn refusal(result: Result<Value, RegistryError>) -> ApiError {
        match result {
            Err(err) => ApiError::from(err),
            Ok(created) => panic!("admitted: {created}"),
        }
    }

    #[tokio::test]
    async fn no_content_in_missing_or_terminating_namespaces() {
        let test = test_state().await;
        let state = &test.state;
        let err = refusal(
            admitted(state, "configmaps", Operation::Create, "nowhere", "a")
                .create(Some("nowhere"), configmap("a"))
                .await,
        );
        assert_eq!(err.code().as_u16(), 404);
        assert_eq!(err.message(), "namespaces \"nowhere\" not found");

        let namespaces = state.store("", "v1", "namespaces").expect("namespaces");
        namespaces
            .create(
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
            )
            .await
            .expect("namespace");
        // Fresh namespaces are found in storage before the cache has them.
        admitted(state, "configmaps", Operation::Create, "doomed", "early")
            .create(Some("doomed"), configmap("early"))
            .await
            .expect("an active namespace takes content");
        let DeleteOutcome::Pending(_) = namespaces
            .delete(None, "doomed", &DeleteOptions::default())
            .await
            .expect("delete")
        else {
            panic!("the kubernetes finalizer holds a namespace");
        };
        // Admission reads the cache, which follows storage a moment later.
        for _ in 0..500 {
            let cached = state.get("", "namespaces", None, "doomed").expect("cached");
            if meta::is_terminating(&cached) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let err = refusal(
            admitted(state, "configmaps", Operation::Create, "doomed", "late")
                .create(Some("doomed"), configmap("late"))
                .await,
        );
        assert_eq!(err.code().as_u16(), 403);
        assert_eq!(
            err.message(),
            "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
        );
    }

    #[tokio::test]
    async fn system_namespaces_cannot_be_deleted() {
        let test = test_state().await;
        let state = &test.state;
        let namespaces = state.store("", "v1", "namespaces").expect("namespaces");
        namespaces
            .create(None, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}))
            .await
            .expect("namespace");
        let err = match admitted(
            state,
            "namespaces",
            Operation::Delete,
            "kube-system",
            "kube-system",
        )
        .delete(None, "kube-system", &DeleteOptions::default())
        .await
        {
            Err(err) => ApiError::from(err),
            Ok(_) => panic!("kube-system was deleted"),
        };
        assert_eq!(err.code().as_u16(), 403);
        assert_eq!(
            err.message(),
            "namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
        );
    }
}
