//! CustomResourceDefinitions: what one served version of a custom resource needs beyond its
//! `ResourceInfo` (schema, CEL rules, printer columns, scale paths), and the registry that
//! installs and removes custom resources as CRDs come and go.

pub mod cel;
pub mod conditions;
pub mod controller;
mod finalizer;
pub mod info;
pub mod registry;
pub mod schema;
pub mod validation;
pub mod version_order;

/// The finalizer that holds a deleted CRD until its instances are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

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
