//! ConfigMap, Secret and Namespace validation.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};

use super::meta::{
    name_is_dns_label, name_is_dns_subdomain, validate_immutable, validate_object_meta,
    validate_object_meta_update,
};
use super::names::is_config_map_key;
use super::{ErrorList, FieldError, FieldPath};

/// Upstream's size limit for ConfigMap and Secret payloads (1 MiB).
pub const MAX_CONFIG_SIZE_BYTES: usize = 1024 * 1024;

fn check_keys<'a>(
    keys: impl Iterator<Item = &'a String>,
    path: &FieldPath,
    seen: &mut BTreeSet<String>,
    errs: &mut ErrorList,
) {
    for k in keys {
        for msg in is_config_map_key(k) {
            errs.push(FieldError::invalid(&path.key(k), k, msg));
        }
        if !seen.insert(k.clone()) {
            errs.push(FieldError::invalid(
                &path.key(k),
                k,
                "duplicate of key present in binaryData",
            ));
        }
    }
}

/// Keys valid and unique across data and binaryData, total size at most 1 MiB.
pub fn validate_config_map(cm: &ConfigMap) -> ErrorList {
    let mut errs = validate_object_meta(
        &cm.metadata,
        true,
        name_is_dns_subdomain,
        &FieldPath::new("metadata"),
    );
    let mut seen = BTreeSet::new();
    let mut total = 0usize;
    if let Some(d) = &cm.data {
        check_keys(d.keys(), &FieldPath::new("data"), &mut seen, &mut errs);
        total += d.values().map(String::len).sum::<usize>();
    }
    if let Some(b) = &cm.binary_data {
        check_keys(
            b.keys(),
            &FieldPath::new("binaryData"),
            &mut seen,
            &mut errs,
        );
        total += b.values().map(|v| v.0.len()).sum::<usize>();
    }
    if total > MAX_CONFIG_SIZE_BYTES {
        errs.push(FieldError::too_long(
            &FieldPath::root(),
            MAX_CONFIG_SIZE_BYTES,
        ));
    }
    errs
}

/// A ConfigMap update: metadata rules, the new object, and data frozen once `immutable`.
pub fn validate_config_map_update(new: &ConfigMap, old: &ConfigMap) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &FieldPath::new("metadata"));
    errs.append(validate_config_map(new).without_meta_create_only());
    if old.immutable == Some(true) {
        if new.immutable != Some(true) {
            errs.push(FieldError::forbidden(
                &FieldPath::new("immutable"),
                "field is immutable when `immutable` is set",
            ));
        }
        if new.data != old.data {
            errs.push(FieldError::forbidden(
                &FieldPath::new("data"),
                "field is immutable when `immutable` is set",
            ));
        }
        if new.binary_data != old.binary_data {
            errs.push(FieldError::forbidden(
                &FieldPath::new("binaryData"),
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errs
}

/// Keys valid, total size at most 1 MiB, required keys for the well-known types.
pub fn validate_secret(s: &Secret) -> ErrorList {
    let mut errs = validate_object_meta(
        &s.metadata,
        true,
        name_is_dns_subdomain,
        &FieldPath::new("metadata"),
    );
    let data_path = FieldPath::new("data");
    let mut seen = BTreeSet::new();
    let mut total = 0usize;
    if let Some(d) = &s.data {
        check_keys(d.keys(), &data_path, &mut seen, &mut errs);
        total += d.values().map(|v| v.0.len()).sum::<usize>();
    }
    if let Some(sd) = &s.string_data {
        // stringData merges into data; a key in both is not a duplicate.
        for k in sd.keys() {
            for msg in is_config_map_key(k) {
                errs.push(FieldError::invalid(
                    &FieldPath::new("stringData").key(k),
                    k,
                    msg,
                ));
            }
        }
        total += sd.values().map(String::len).sum::<usize>();
    }
    if total > MAX_CONFIG_SIZE_BYTES {
        errs.push(FieldError::too_long(&data_path, MAX_CONFIG_SIZE_BYTES));
    }
    let has = |k: &str| {
        s.data.as_ref().is_some_and(|d| d.contains_key(k))
            || s.string_data.as_ref().is_some_and(|d| d.contains_key(k))
    };
    let required: &[&str] = match s.type_.as_deref().unwrap_or("Opaque") {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        _ => &[],
    };
    for k in required {
        if !has(k) {
            errs.push(FieldError::required(&data_path.key(*k), ""));
        }
    }
    errs
}

/// A Secret update: metadata rules, the new object, type immutable, data frozen once
/// `immutable`.
pub fn validate_secret_update(new: &Secret, old: &Secret) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &FieldPath::new("metadata"));
    errs.append(validate_secret(new).without_meta_create_only());
    let ty = |s: &Secret| s.type_.clone().unwrap_or_default();
    validate_immutable(&ty(new), &ty(old), &FieldPath::new("type"), &mut errs);
    if old.immutable == Some(true) {
        if new.immutable != Some(true) {
            errs.push(FieldError::forbidden(
                &FieldPath::new("immutable"),
                "field is immutable when `immutable` is set",
            ));
        }
        if new.data != old.data {
            errs.push(FieldError::forbidden(
                &FieldPath::new("data"),
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errs
}

/// Name a DNS-1123 label, no namespace, finalizers qualified names.
pub fn validate_namespace(ns: &Namespace) -> ErrorList {
    let mut errs = validate_object_meta(
        &ns.metadata,
        false,
        name_is_dns_label,
        &FieldPath::new("metadata"),
    );
    for (i, f) in ns
        .spec
        .iter()
        .flat_map(|s| s.finalizers.iter().flatten())
        .enumerate()
    {
        for msg in super::names::is_qualified_name(f) {
            errs.push(FieldError::invalid(
                &FieldPath::new("spec").child("finalizers").index(i),
                f,
                msg,
            ));
        }
    }
    errs
}

/// A Namespace update: metadata rules and the new object.
pub fn validate_namespace_update(new: &Namespace, old: &Namespace) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &FieldPath::new("metadata"));
    errs.append(validate_namespace(new).without_meta_create_only());
    errs
}
