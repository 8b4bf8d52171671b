//! `PATCH` with `application/apply-patch+yaml`: the applied configuration is merged into the
//! live object inside the store's compare-and-swap loop (so admission, defaulting and
//! validation run as for any write); applying to an object that does not exist creates it.

use super::request::{self, AppliedFields, Endpoint};
use crate::http::body::decode_yaml;
use crate::http::status::ApiError;
use crate::registry::{Part, RegistryError};
use crate::rest::field_validation::FieldValidation;
use crate::rest::handler::Call;
use http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// How many times an apply that found no object and then lost the create race starts over.
const CREATE_RACE_RETRIES: usize = 3;

/// What an apply answered: the object, 200 or 201, and field validation warnings.
pub struct Applied {
    pub object: Value,
    pub status: StatusCode,
    pub warnings: Vec<String>,
}

/// Decodes the applied configuration (YAML or JSON) and checks it names this object.
fn configuration(call: &Call<'_>, body: &[u8]) -> Result<Value, ApiError> {
    let mut config = decode_yaml(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {}", e.message())))?;
    let Some(map) = config.as_object_mut() else {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be a YAML or JSON object",
        ));
    };
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return Err(ApiError::bad_request(
            "error decoding YAML: metadata must be an object",
        ));
    };
    match meta.get("name").and_then(Value::as_str) {
        Some(name) if !name.is_empty() && name != call.name() => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                call.name()
            )));
        }
        _ => {
            meta.insert("name".into(), json!(call.name()));
        }
    }
    if let Some(namespace) = call.namespace
        && let Some(given) = meta.get("namespace").and_then(Value::as_str)
        && !given.is_empty()
        && given != namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(config)
}

/// Serves an apply of `body` to the object of `call` (`part`: main resource or status).
pub async fn apply(call: &Call<'_>, body: &[u8], part: Part) -> Result<Applied, ApiError> {
    request::validate_options("patch", true, &call.query)?;
    let force = request::force(&call.query);
    let manager = call.query.get("fieldManager").unwrap_or_default();
    let mut config = configuration(call, body)?;
    // Unknown fields are dropped before ownership is computed, so nobody owns them.
    let warnings = FieldValidation::from_query(&call.query)?.check(
        call.info,
        call.entry.custom.as_deref(),
        &mut config,
    )?;
    let endpoint = Endpoint::new(
        call.info,
        call.entry.custom.as_ref(),
        &call.request.subresource,
    );
    let fm = endpoint.field_manager();
    let slot = Arc::new(AppliedFields::default());
    let store = call.store.with_tracker(slot.clone());
    let into_registry =
        |e: super::ApplyError| RegistryError::Rejected(Box::new(e.into_api_error()));
    for _ in 0..CREATE_RACE_RETRIES {
        let updated = store
            .guaranteed_update(call.namespace, call.name(), part, |old| {
                let now = crate::registry::meta::now();
                let merged = fm
                    .apply(Some(old), &config, manager, force, &now)
                    .map_err(into_registry)?;
                slot.remember(&merged);
                Ok(merged)
            })
            .await;
        match updated {
            Ok(object) => {
                return Ok(Applied {
                    object,
                    status: StatusCode::OK,
                    warnings,
                });
            }
            // Apply creates, but only through the main resource (as upstream).
            Err(RegistryError::NotFound { .. }) if part == Part::Main => {}
            Err(err) => return Err(err.into()),
        }
        let now = crate::registry::meta::now();
        let object = fm
            .apply(None, &config, manager, force, &now)
            .map_err(|e| e.into_api_error())?;
        slot.remember(&object);
        match store.create(call.namespace, object).await {
            Ok(object) => {
                return Ok(Applied {
                    object,
                    status: StatusCode::CREATED,
                    warnings,
                });
            }
            // Created meanwhile by someone else: apply to it.
            Err(RegistryError::AlreadyExists { .. }) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Err(ApiError::conflict(
        call.info.group,
        call.info.plural,
        call.name(),
        crate::http::status::OPTIMISTIC_LOCK_ERROR_MSG,
    ))
}
