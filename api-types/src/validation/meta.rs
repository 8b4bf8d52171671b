//! ObjectMeta validation on create and update, labels and annotations.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::names::{
    is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
    is_valid_label_value,
};
use super::{BadValue, ErrorList, FieldError, FieldPath};

/// Upstream's limit on the total size of an object's annotations (256 KiB).
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// Upstream's message for a changed immutable field.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";

/// Checks a name (or, with `prefix`, a generateName) and returns the problems.
pub type NameValidator = fn(&str, bool) -> Vec<String>;

/// A generateName gets a random suffix, so a trailing '-' is allowed there.
fn mask_trailing_dash(name: &str, prefix: bool) -> String {
    if prefix && name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 1])
    } else {
        name.to_string()
    }
}

/// Names that must be DNS-1123 subdomains (most kinds).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_subdomain(&mask_trailing_dash(name, prefix))
}

/// Names that only have to be usable as one URL path segment (RBAC roles and bindings, such
/// as `system:aggregate-to-admin`).
pub fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                problems.push(format!("may not be '{bad}'"));
            }
        }
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            problems.push(format!("may not contain '{bad}'"));
        }
    }
    problems
}

/// Names that must be DNS-1123 labels (namespaces).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_label(&mask_trailing_dash(name, prefix))
}

/// Names that must be DNS-1035 labels (services).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1035_label(&mask_trailing_dash(name, prefix))
}

/// Label keys must be qualified names, values valid label values; both are reported at the
/// `labels` path itself, as upstream.
pub fn validate_labels(labels: &BTreeMap<String, String>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(path, k, msg));
        }
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
    errs
}

/// Annotation keys must be qualified names (case-insensitively) and all annotations together
/// at most 256 KiB.
pub fn validate_annotations(annotations: &BTreeMap<String, String>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, k, msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(
            path,
            TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
        ));
    }
    errs
}

fn validate_owner_references(refs: &[OwnerReference], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut controllers = Vec::new();
    for r in refs {
        if r.api_version.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("apiVersion"),
                &r.api_version,
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("kind"),
                &r.kind,
                "kind must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("name"),
                &r.name,
                "name must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("uid"),
                &r.uid,
                "uid must not be empty",
            ));
        }
        if r.controller == Some(true) {
            controllers.push(format!("{}/{}", r.kind, r.name));
        }
    }
    if controllers.len() > 1 {
        errs.push(FieldError::invalid(
            path,
            BadValue::string_list(&controllers),
            format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
    errs
}

/// Validates metadata on create: name or generateName (checked by `name_fn`), namespace
/// required or forbidden by scope, generation, labels, annotations, owner references.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_fn: NameValidator,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(gen_name) = meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
        for msg in name_fn(gen_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                gen_name,
                msg,
            ));
        }
    }
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        )),
        Some(name) => {
            for msg in name_fn(name, false) {
                errs.push(FieldError::invalid(&path.child("name"), name, msg));
            }
        }
    }
    let ns = meta.namespace.as_deref().unwrap_or("");
    if namespaced {
        if ns.is_empty() {
            errs.push(FieldError::required(&path.child("namespace"), ""));
        } else {
            for msg in name_is_dns_label(ns, false) {
                errs.push(FieldError::invalid(&path.child("namespace"), ns, msg));
            }
        }
    } else if !ns.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.generation.filter(|g| *g < 0) {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            g,
            "must be greater than or equal to 0",
        ));
    }
    if let Some(labels) = &meta.labels {
        errs.append(validate_labels(labels, &path.child("labels")));
    }
    if let Some(annotations) = &meta.annotations {
        errs.append(validate_annotations(
            annotations,
            &path.child("annotations"),
        ));
    }
    if let Some(refs) = &meta.owner_references {
        errs.append(validate_owner_references(
            refs,
            &path.child("ownerReferences"),
        ));
    }
    for (i, f) in meta.finalizers.iter().flatten().enumerate() {
        for msg in is_qualified_name(f) {
            errs.push(FieldError::invalid(
                &path.child("finalizers").index(i),
                f,
                msg,
            ));
        }
    }
    errs
}

fn immutable<T: PartialEq + serde::Serialize>(
    new: &T,
    old: &T,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    if new != old {
        let value = match serde_json::to_value(new) {
            Ok(v) => BadValue::from(&v),
            Err(_) => BadValue::Omitted,
        };
        errs.push(FieldError::invalid(path, value, FIELD_IMMUTABLE_ERROR_MSG));
    }
}

/// Validates metadata on update: name, namespace, uid, creationTimestamp, deletionTimestamp
/// and deletionGracePeriodSeconds are immutable, resourceVersion must be set, generation must
/// not go down, no finalizer may be added once deleting; labels, annotations and owner
/// references are checked again.
pub fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.deletion_timestamp.is_some() {
        let old_finalizers = old.finalizers.clone().unwrap_or_default();
        for f in new.finalizers.iter().flatten() {
            if !old_finalizers.contains(f) {
                errs.push(FieldError::forbidden(
                    &path.child("finalizers"),
                    format!("no new finalizers can be added if the object is being deleted, found new finalizers {}", BadValue::string_list(&[f])),
                ));
            }
        }
    }
    let rv = new.resource_version.as_deref().unwrap_or("");
    if rv.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion"),
            rv,
            "must be specified for an update",
        ));
    }
    if new.generation.unwrap_or(0) < old.generation.unwrap_or(0) {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            new.generation.unwrap_or(0),
            "must not be decremented",
        ));
    }
    let s = |o: &Option<String>| o.clone().unwrap_or_default();
    immutable(&s(&new.name), &s(&old.name), &path.child("name"), &mut errs);
    immutable(
        &s(&new.namespace),
        &s(&old.namespace),
        &path.child("namespace"),
        &mut errs,
    );
    immutable(&s(&new.uid), &s(&old.uid), &path.child("uid"), &mut errs);
    immutable(
        &new.creation_timestamp,
        &old.creation_timestamp,
        &path.child("creationTimestamp"),
        &mut errs,
    );
    immutable(
        &new.deletion_timestamp,
        &old.deletion_timestamp,
        &path.child("deletionTimestamp"),
        &mut errs,
    );
    immutable(
        &new.deletion_grace_period_seconds,
        &old.deletion_grace_period_seconds,
        &path.child("deletionGracePeriodSeconds"),
        &mut errs,
    );
    if let Some(labels) = &new.labels {
        errs.append(validate_labels(labels, &path.child("labels")));
    }
    if let Some(annotations) = &new.annotations {
        errs.append(validate_annotations(
            annotations,
            &path.child("annotations"),
        ));
    }
    if let Some(refs) = &new.owner_references {
        errs.append(validate_owner_references(
            refs,
            &path.child("ownerReferences"),
        ));
    }
    errs
}

/// Shared by the spec validators: a value that must not be negative.
pub(crate) fn validate_nonnegative(value: i64, path: &FieldPath, errs: &mut ErrorList) {
    if value < 0 {
        errs.push(FieldError::invalid(
            path,
            value,
            "must be greater than or equal to 0",
        ));
    }
}

/// Shared by update validators: a field that must not change.
pub(crate) fn validate_immutable<T: PartialEq + serde::Serialize>(
    new: &T,
    old: &T,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    immutable(new, old, path, errs);
}
