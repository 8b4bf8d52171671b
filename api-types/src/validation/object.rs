//! Entry points: validate any built-in kind given as JSON, on create and on update.

use serde::de::DeserializeOwned;

use k8s_openapi::api::{apps::v1 as apps_v1, core::v1 as core_v1};

use super::apps::*;
use super::config::*;
use super::pod::{validate_pod, validate_pod_update};
use super::service::{validate_service, validate_service_update};
use super::{BadValue, ErrorList, FieldError, FieldPath};

fn decode<T: DeserializeOwned>(kind: &str, v: &serde_json::Value) -> Result<T, ErrorList> {
    serde_json::from_value(v.clone()).map_err(|e| {
        FieldError::invalid(
            &FieldPath::root(),
            BadValue::Omitted,
            format!("cannot decode {kind}: {e}"),
        )
        .into()
    })
}

fn create<T: DeserializeOwned>(
    kind: &str,
    v: &serde_json::Value,
    f: fn(&T) -> ErrorList,
) -> ErrorList {
    match decode::<T>(kind, v) {
        Ok(obj) => f(&obj),
        Err(e) => e,
    }
}

fn update<T: DeserializeOwned>(
    kind: &str,
    new: &serde_json::Value,
    old: &serde_json::Value,
    f: fn(&T, &T) -> ErrorList,
) -> ErrorList {
    match (decode::<T>(kind, new), decode::<T>(kind, old)) {
        (Ok(n), Ok(o)) => f(&n, &o),
        (Err(e), _) | (_, Err(e)) => e,
    }
}

/// Whether [`validate_create`] and [`validate_update`] have validators for this kind.
pub fn has_validator(group: &str, version: &str, kind: &str) -> bool {
    matches!(
        (group, version, kind),
        (
            "",
            "v1",
            "Pod" | "Service" | "ConfigMap" | "Secret" | "Namespace"
        ) | (
            "apps",
            "v1",
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        )
    )
}

/// Validates a new object of a built-in kind. Kinds without a validator (see
/// [`has_validator`]) give an empty list; JSON that does not decode as the kind gives one
/// error at the root.
pub fn validate_create(
    group: &str,
    version: &str,
    kind: &str,
    obj: &serde_json::Value,
) -> ErrorList {
    match (group, version, kind) {
        ("", "v1", "Pod") => create::<core_v1::Pod>(kind, obj, validate_pod),
        ("", "v1", "Service") => create::<core_v1::Service>(kind, obj, validate_service),
        ("", "v1", "ConfigMap") => create::<core_v1::ConfigMap>(kind, obj, validate_config_map),
        ("", "v1", "Secret") => create::<core_v1::Secret>(kind, obj, validate_secret),
        ("", "v1", "Namespace") => create::<core_v1::Namespace>(kind, obj, validate_namespace),
        ("apps", "v1", "Deployment") => {
            create::<apps_v1::Deployment>(kind, obj, validate_deployment)
        }
        ("apps", "v1", "ReplicaSet") => {
            create::<apps_v1::ReplicaSet>(kind, obj, validate_replica_set)
        }
        ("apps", "v1", "StatefulSet") => {
            create::<apps_v1::StatefulSet>(kind, obj, validate_stateful_set)
        }
        ("apps", "v1", "DaemonSet") => create::<apps_v1::DaemonSet>(kind, obj, validate_daemon_set),
        _ => ErrorList::new(),
    }
}

/// Validates an update of a built-in kind from `old` to `new` (both as stored/decoded JSON,
/// `new` with its resourceVersion set).
pub fn validate_update(
    group: &str,
    version: &str,
    kind: &str,
    new: &serde_json::Value,
    old: &serde_json::Value,
) -> ErrorList {
    match (group, version, kind) {
        ("", "v1", "Pod") => update::<core_v1::Pod>(kind, new, old, validate_pod_update),
        ("", "v1", "Service") => {
            update::<core_v1::Service>(kind, new, old, validate_service_update)
        }
        ("", "v1", "ConfigMap") => {
            update::<core_v1::ConfigMap>(kind, new, old, validate_config_map_update)
        }
        ("", "v1", "Secret") => update::<core_v1::Secret>(kind, new, old, validate_secret_update),
        ("", "v1", "Namespace") => {
            update::<core_v1::Namespace>(kind, new, old, validate_namespace_update)
        }
        ("apps", "v1", "Deployment") => {
            update::<apps_v1::Deployment>(kind, new, old, validate_deployment_update)
        }
        ("apps", "v1", "ReplicaSet") => {
            update::<apps_v1::ReplicaSet>(kind, new, old, validate_replica_set_update)
        }
        ("apps", "v1", "StatefulSet") => {
            update::<apps_v1::StatefulSet>(kind, new, old, validate_stateful_set_update)
        }
        ("apps", "v1", "DaemonSet") => {
            update::<apps_v1::DaemonSet>(kind, new, old, validate_daemon_set_update)
        }
        _ => ErrorList::new(),
    }
}
