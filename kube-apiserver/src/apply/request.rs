//! What a request brings to field management: its options (`fieldManager`, `force`) checked as
//! upstream's `ValidatePatchOptions`, the manager name of non-apply writes, and the store hook
//! that records managedFields on the object each write is about to store.

use super::manager::{FieldManager, Reset};
use super::schema::ApplySchema;
use crate::http::status::ApiError;
use crate::rest::query::Query;
use api_types::registry::ResourceInfo;
use api_types::validation::{ErrorList, FieldError, FieldPath};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Upstream's limit on `fieldManager`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Checks a write's options as upstream: apply needs `fieldManager`, only apply takes `force`,
/// `fieldManager` is at most 128 bytes of printable characters. `verb` is the request's
/// (`create`, `update`, `patch`).
pub fn validate_options(verb: &str, is_apply: bool, query: &Query) -> Result<(), ApiError> {
    let kind = match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        _ => return Ok(()),
    };
    let mut errors = ErrorList::new();
    let manager = query.get("fieldManager").unwrap_or_default();
    if verb == "patch" {
        if !is_apply && query.get("force").is_some() {
            errors.push(FieldError::forbidden(
                &FieldPath::new("force"),
                "may not be specified for non-apply patch",
            ));
        }
        if is_apply && manager.is_empty() {
            errors.push(FieldError::required(
                &FieldPath::new("fieldManager"),
                "is required for apply patch",
            ));
        }
    }
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(FieldError::too_long(
            &FieldPath::new("fieldManager"),
            FIELD_MANAGER_MAX_LENGTH,
        ));
    }
    for (position, c) in manager.char_indices() {
        if c.is_control() {
            errors.push(FieldError::invalid(
                &FieldPath::new("fieldManager"),
                manager,
                format!(
                    "invalid character U+{:04X} (at position {position})",
                    c as u32
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", kind, "", &errors))
    }
}

/// Whether an apply is forced (`force=true`).
pub fn force(query: &Query) -> bool {
    query.get("force") == Some("true")
}

/// The manager of a non-apply write: `fieldManager`, else the User-Agent up to its first `/`
/// (printable characters, 128 bytes at most), as upstream.
pub fn manager_name(query: &Query, user_agent: Option<&str>) -> String {
    if let Some(manager) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return manager.to_string();
    }
    let prefix = user_agent
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// A schema the tracker can own (a request's hook outlives the handler's borrows).
#[derive(Debug, Clone)]
pub enum SchemaSource {
    BuiltIn(&'static ResourceInfo),
    /// A custom resource's `openAPIV3Schema`.
    Custom(Arc<crate::crd::schema::Structural>),
    Untyped,
}

impl SchemaSource {
    /// The schema of a resource: its custom schema when it is a custom resource.
    pub fn for_resource(
        info: &'static ResourceInfo,
        custom: Option<&Arc<crate::crd::CustomResource>>,
    ) -> Self {
        match custom {
            Some(resource) => match &resource.schema {
                Some(schema) => SchemaSource::Custom(schema.clone()),
                None => SchemaSource::Untyped,
            },
            None => SchemaSource::BuiltIn(info),
        }
    }

    pub fn schema(&self) -> ApplySchema<'_> {
        match self {
            SchemaSource::BuiltIn(info) => ApplySchema::BuiltIn {
                group: info.group,
                version: info.version,
                kind: info.kind,
            },
            SchemaSource::Custom(schema) => ApplySchema::Custom(schema.raw()),
            SchemaSource::Untyped => ApplySchema::Untyped,
        }
    }
}

/// The field management of one endpoint of one resource, owned.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub info: &'static ResourceInfo,
    /// `info`'s apiVersion (`apps/v1`).
    pub api_version: String,
    pub schema: SchemaSource,
    pub subresource: String,
    pub has_status_subresource: bool,
}

impl Endpoint {
    /// The endpoint of `info` (with its custom resource's extras, if any) at `subresource`.
    pub fn new(
        info: &'static ResourceInfo,
        custom: Option<&Arc<crate::crd::CustomResource>>,
        subresource: &str,
    ) -> Self {
        Endpoint {
            info,
            api_version: info.api_version(),
            schema: SchemaSource::for_resource(info, custom),
            subresource: subresource.to_string(),
            has_status_subresource: info.subresources.iter().any(|s| s.name == "status"),
        }
    }

    /// The field manager of this endpoint.
    pub fn field_manager(&self) -> FieldManager<'_> {
        let reset = match self.subresource.as_str() {
            "status" => Reset::AllButStatus,
            _ if self.has_status_subresource => Reset::Status,
            _ => Reset::Nothing,
        };
        FieldManager {
            schema: self.schema.schema(),
            api_version: &self.api_version,
            kind: self.info.kind,
            subresource: &self.subresource,
            reset,
        }
    }
}

/// The store's hook on the object each write is about to store (after defaulting and the
/// strategy, before validation); `old` is None on create.
pub trait WriteTracker: Send + Sync {
    fn track(&self, new: &mut Value, old: Option<&Value>);
}

/// Records a non-apply write as an `Update` by `manager`.
pub struct UpdateTracker {
    pub endpoint: Endpoint,
    pub manager: String,
}

impl WriteTracker for UpdateTracker {
    fn track(&self, new: &mut Value, old: Option<&Value>) {
        let now = crate::registry::meta::now();
        self.endpoint
            .field_manager()
            .update(old, new, &self.manager, &now);
    }
}

/// The tracker of a non-apply write (create, update, patch of the main resource, `status` or
/// `scale`); None for reads and other subresources.
pub fn update_tracker(
    info: &'static ResourceInfo,
    custom: Option<&Arc<crate::crd::CustomResource>>,
    request: &crate::http::request_info::RequestInfo,
    query: &Query,
    user_agent: Option<&str>,
) -> Option<Arc<dyn WriteTracker>> {
    let writes = matches!(request.verb.as_str(), "create" | "update" | "patch");
    let tracked = matches!(request.subresource.as_str(), "" | "status" | "scale");
    if !writes || !tracked {
        return None;
    }
    Some(Arc::new(UpdateTracker {
        endpoint: Endpoint::new(info, custom, &request.subresource),
        manager: manager_name(query, user_agent),
    }))
}

/// Puts back the managedFields an apply computed, which the strategy of a subresource would
/// otherwise reset with the rest of the metadata.
#[derive(Default)]
pub struct AppliedFields {
    managed: Mutex<Option<Value>>,
}

impl AppliedFields {
    /// Remembers the managedFields of the object an apply attempt produced.
    pub fn remember(&self, object: &Value) {
        let managed = object
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned()
            .unwrap_or(Value::Null);
        *self.managed.lock().unwrap_or_else(|e| e.into_inner()) = Some(managed);
    }
}

impl WriteTracker for AppliedFields {
    fn track(&self, new: &mut Value, _old: Option<&Value>) {
        let Some(managed) = self
            .managed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        else {
            return;
        };
        let meta = crate::registry::meta::meta_mut(new);
        if managed.is_null() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), managed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(q: &str) -> Query {
        Query::parse(Some(q))
    }

    #[test]
    fn apply_needs_a_field_manager() {
        let err = validate_options("patch", true, &query("")).unwrap_err();
        assert_eq!(err.code().as_u16(), 422);
        assert_eq!(
            err.message(),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        assert!(validate_options("patch", true, &query("fieldManager=a")).is_ok());
    }

    #[test]
    fn force_only_for_apply_and_long_managers_refused() {
        let err = validate_options("patch", false, &query("force=true")).unwrap_err();
        assert_eq!(
            err.message(),
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let long = "m".repeat(129);
        let err =
            validate_options("create", false, &query(&format!("fieldManager={long}"))).unwrap_err();
        assert_eq!(
            err.message(),
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
        );
        assert!(
            validate_options(
                "update",
                false,
                &query(&format!("fieldManager={}", "m".repeat(128)))
            )
            .is_ok()
        );
    }

    #[test]
    fn unprintable_managers_refused() {
        let err = validate_options("update", false, &query("fieldManager=%C3%A9%07")).unwrap_err();
        assert_eq!(
            err.message(),
            "UpdateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"\u{e9}\\a\": invalid character U+0007 (at position 2)"
        );
    }

    #[test]
    fn manager_names() {
        assert_eq!(
            manager_name(&query("fieldManager=x"), Some("kubectl/v1.33")),
            "x"
        );
        assert_eq!(
            manager_name(
                &query(""),
                Some("kubectl/v1.33.0 (linux/amd64) kubernetes/abc")
            ),
            "kubectl"
        );
        assert_eq!(manager_name(&query(""), None), "");
        assert_eq!(manager_name(&query(""), Some(&"a".repeat(300))).len(), 128);
    }
}
