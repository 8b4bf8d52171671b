//! CustomResourceDefinitions: what one served version of a custom resource needs beyond its
//! `ResourceInfo` (schema, CEL rules, printer columns, scale paths), and the registry that
//! installs and removes custom resources as CRDs come and go.

pub mod cel;
pub mod conditions;
pub mod controller;
pub mod conversion;
mod finalizer;
pub mod info;
pub mod registry;
pub mod schema;
pub mod validation;
pub mod version_order;

/// The finalizer that holds a deleted CRD until its instances are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

use crate::http::status::ApiError;
use crate::tables::custom::CustomPrinter;
use api_types::registry::ResourceInfo;
use api_types::validation::ErrorList;
use serde_json::Value;
use std::sync::Arc;

/// `spec.versions[*].subresources.scale` of a CRD version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `.spec.replicas`-style JSON path of the desired replicas.
    pub spec_replicas_path: String,
    /// Where the observed replicas are.
    pub status_replicas_path: String,
    /// Where the label selector (as a string) is, if anywhere.
    pub label_selector_path: Option<String>,
}

/// One served version of a custom resource.
pub struct CustomResource {
    /// `<plural>.<group>`, the CRD's name.
    pub crd_name: String,
    /// The version objects are stored in (`spec.versions[*].storage`).
    pub storage_version: String,
    /// The structural schema of this version; `None` only for schemas that preserve every
    /// unknown field at the root.
    pub schema: Option<Arc<schema::Structural>>,
    /// The `x-kubernetes-validations` rules of this version, compiled.
    pub cel: Option<Arc<cel::CelValidator>>,
    /// `additionalPrinterColumns`.
    pub printer: Arc<CustomPrinter>,
    /// The scale subresource, when enabled.
    pub scale: Option<ScalePaths>,
    /// The CRD is being deleted: no new instances are accepted.
    pub terminating: bool,
    /// The CRD's conversion webhook (`strategy: Webhook`); None for the `None` strategy.
    pub conversion: Option<Arc<conversion::WebhookConverter>>,
}

impl CustomResource {
    /// A stored object as the version `info` serves it: the `None` conversion sets
    /// `apiVersion`, and the schema's defaults apply, as upstream defaults what it reads.
    pub fn output(&self, info: &ResourceInfo, mut object: Value) -> Value {
        if let Some(map) = object.as_object_mut() {
            map.insert("apiVersion".into(), Value::String(info.api_version()));
            if let Some(schema) = &self.schema {
                schema.apply_defaults(&mut object);
            }
        }
        object
    }

    /// A stored object as the version `info` serves it, through the conversion webhook when
    /// the CRD has one and the object is stored in another version. A failed conversion is
    /// upstream's 500 `InternalError`.
    pub async fn serve(&self, info: &ResourceInfo, object: Value) -> Result<Value, ApiError> {
        let object = match &self.conversion {
            Some(webhook) => webhook
                .convert(object, &info.api_version())
                .await
                .map_err(ApiError::internal)?,
            None => object,
        };
        Ok(self.output(info, object))
    }

    /// Stored objects as the version `info` serves them, converted in one review.
    pub async fn serve_list(
        &self,
        info: &ResourceInfo,
        items: Vec<Value>,
    ) -> Result<Vec<Value>, ApiError> {
        let items = match &self.conversion {
            Some(webhook) => {
                let list_gvk =
                    conversion::gvk_string(&info.api_version(), &format!("{}List", info.kind));
                webhook
                    .convert_list(items, &info.api_version(), &list_gvk)
                    .await
                    .map_err(ApiError::internal)?
            }
            None => items,
        };
        Ok(items
            .into_iter()
            .map(|object| self.output(info, object))
            .collect())
    }

    /// `object` (in any served version) in the storage version: through the webhook when
    /// there is one, else the `None` conversion (only `apiVersion` changes).
    pub async fn to_storage(&self, info: &ResourceInfo, object: Value) -> Result<Value, ApiError> {
        let storage = api_types::registry::api_version(info.group, &self.storage_version);
        match &self.conversion {
            Some(webhook) => webhook
                .convert(object, &storage)
                .await
                .map_err(ApiError::internal),
            None => {
                let mut object = object;
                if let Some(map) = object.as_object_mut() {
                    map.insert("apiVersion".into(), Value::String(storage));
                }
                Ok(object)
            }
        }
    }

    /// A stored object in the version `info` serves, without defaults: what a write through
    /// this version starts from. Only the webhook strategy converts (the `None` conversion
    /// leaves the body as it is, and the write sets `apiVersion` on its way to storage).
    pub async fn from_storage(
        &self,
        info: &ResourceInfo,
        object: Value,
    ) -> Result<Value, ApiError> {
        match &self.conversion {
            Some(webhook) => webhook
                .convert(object, &info.api_version())
                .await
                .map_err(ApiError::internal),
            None => Ok(object),
        }
    }

    /// The schema's structural validation and the CEL rules (`old` on update).
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> ErrorList {
        let mut errs = ErrorList::new();
        if let Some(schema) = &self.schema {
            errs.append(schema.validate(object));
        }
        // Rules run only on objects that passed the schema, as upstream: they may assume types.
        if errs.is_empty()
            && let Some(cel) = &self.cel
        {
            errs.append(cel.validate(object, old));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn custom() -> CustomResource {
        CustomResource {
            crd_name: "crontabs.stable.example.com".into(),
            storage_version: "v1".into(),
            schema: None,
            cel: None,
            printer: Arc::default(),
            scale: None,
            terminating: false,
            conversion: None,
        }
    }

    fn info() -> &'static ResourceInfo {
        let crd = json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": "crontabs", "kind": "CronTab"},
                     "versions": [{"name": "v2", "served": true, "storage": false}]},
        });
        info::resource_info(&crd, &crd["spec"]["versions"][0], "v1")
    }

    #[tokio::test]
    async fn the_none_conversion_only_rewrites_api_version() {
        let object = json!({"apiVersion": "stable.example.com/v2", "kind": "CronTab",
                            "spec": {"schedule": "x"}});
        let stored = custom().to_storage(info(), object.clone()).await.unwrap();
        assert_eq!(stored["apiVersion"], "stable.example.com/v1");
        assert_eq!(stored["spec"], object["spec"]);
        let served = custom().serve(info(), stored.clone()).await.unwrap();
        assert_eq!(served, object);
        let listed = custom()
            .serve_list(info(), vec![stored.clone(), stored])
            .await
            .unwrap();
        assert_eq!(listed, vec![object.clone(), object.clone()]);
        // The object an update starts from is left as stored.
        let old = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab"});
        assert_eq!(
            custom().from_storage(info(), old.clone()).await.unwrap(),
            old
        );
    }
}
