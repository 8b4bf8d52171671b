//! Defaulting and validation of objects on their way into storage: the kind's own validator
//! where api-types has one, else the object-meta checks every object gets; a custom resource
//! also gets its schema's defaults, its structural validation and its CEL rules.

use super::strategy::Strategy;
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use api_types::registry::ResourceInfo;
use api_types::validation::{
    ErrorList, FieldError, FieldPath, has_validator, name_is_dns_subdomain, name_is_path_segment,
    validate_create, validate_object_meta, validate_object_meta_update, validate_update,
};
use serde_json::Value;

/// Applies upstream's defaults for the kind (or a custom resource's schema defaults); a kind
/// api-types does not know is left as is.
pub fn default(strategy: &Strategy, object: &mut Value) -> Result<(), ErrorList> {
    if is_crd(strategy.info) {
        crate::crd::validation::default_crd(object);
    }
    if let Some(schema) = strategy.custom.as_ref().and_then(|c| c.schema.as_ref()) {
        schema.apply_defaults(object);
        return Ok(());
    }
    let info = strategy.info;
    api_types::defaults::default_object(info.group, info.version, info.kind, object)
        .map(|_| ())
        .map_err(|err| one_error(&err.to_string()))
}

/// CustomResourceDefinitions get upstream's CRD defaulting and validation on top of the
/// object-meta checks.
fn is_crd(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
}

/// How the kind's names are checked: RBAC names only need to be a path segment (upstream's
/// `ValidateRBACName`), everything else without its own validator a DNS-1123 subdomain.
fn name_validator(info: &ResourceInfo) -> api_types::validation::NameValidator {
    if info.group == "rbac.authorization.k8s.io" {
        name_is_path_segment
    } else {
        name_is_dns_subdomain
    }
}

/// Validation on create.
pub fn on_create(strategy: &Strategy, object: &Value) -> ErrorList {
    let mut errs = builtin_on_create(strategy.info, object);
    if is_crd(strategy.info) {
        errs.append(crate::crd::validation::validate_crd(object, None));
    }
    if let Some(custom) = &strategy.custom {
        errs.append(custom.validate(object, None));
    }
    errs
}

fn builtin_on_create(info: &ResourceInfo, object: &Value) -> ErrorList {
    if has_validator(info.group, info.version, info.kind) {
        return validate_create(info.group, info.version, info.kind, object);
    }
    match object_meta(object) {
        Ok(meta) => validate_object_meta(
            &meta,
            info.namespaced,
            name_validator(info),
            &FieldPath::new("metadata"),
        ),
        Err(errs) => errs,
    }
}

/// Validation on update of `old` to `new`.
pub fn on_update(strategy: &Strategy, new: &Value, old: &Value) -> ErrorList {
    let mut errs = builtin_on_update(strategy.info, new, old);
    if is_crd(strategy.info) {
        errs.append(crate::crd::validation::validate_crd(new, Some(old)));
    }
    if let Some(custom) = &strategy.custom {
        errs.append(custom.validate(new, Some(old)));
    }
    errs
}

fn builtin_on_update(info: &ResourceInfo, new: &Value, old: &Value) -> ErrorList {
    if has_validator(info.group, info.version, info.kind) {
        return validate_update(info.group, info.version, info.kind, new, old);
    }
    match (object_meta(new), object_meta(old)) {
        (Ok(new_meta), Ok(old_meta)) => {
            let mut errs = validate_object_meta(
                &new_meta,
                info.namespaced,
                name_validator(info),
                &FieldPath::new("metadata"),
            );
            errs.append(validate_object_meta_update(
                &new_meta,
                &old_meta,
                &FieldPath::new("metadata"),
            ));
            errs
        }
        (Err(errs), _) | (_, Err(errs)) => errs,
    }
}

fn object_meta(object: &Value) -> Result<ObjectMeta, ErrorList> {
    let meta = object.get("metadata").cloned().unwrap_or(Value::Null);
    serde_json::from_value(meta).map_err(|err| one_error(&format!("decoding metadata: {err}")))
}

fn one_error(detail: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    errs.push(FieldError::invalid(&FieldPath::new("metadata"), "", detail));
    errs
}
