//! The small REST objects on top of the generic store: `scale`, `binding`, `eviction`.

use super::encode::respond;
use super::handler::{Call, delete_options_from, patch_type, read_body_value, success_status};
use crate::http::body::{MAX_REQUEST_BODY_BYTES, read_body};
use crate::http::negotiation::EndpointRestrictions;
use crate::http::response::{Body, BoxError};
use crate::http::status::ApiError;
use crate::patch::{PatchTarget, apply_patch};
use crate::registry::{Part, RegistryError};
use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use api_types::labels::Selector;
use http::{Response, StatusCode};
use hyper::body::Body as HttpBody;
use serde_json::{Value, json};

/// The `autoscaling/v1` Scale of a scalable object.
fn scale_of(object: &Value) -> Value {
    let selector = object["spec"]["selector"].clone();
    // Deployments and the like select with a LabelSelector, replication controllers with a map.
    let selector_string = serde_json::from_value::<LabelSelector>(selector.clone())
        .ok()
        .filter(|s| s.match_labels.is_some() || s.match_expressions.is_some())
        .and_then(|s| Selector::from_label_selector(Some(&s)).ok())
        .or_else(|| {
            let map = selector.as_object()?;
            let labels = map
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect();
            Selector::from_map(&labels).ok()
        })
        .map(|s| s.to_string())
        .unwrap_or_default();
    let meta = &object["metadata"];
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": object["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {
            "replicas": object["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": selector_string,
        },
    })
}

/// GET, PUT and PATCH of `<resource>/scale`.
pub async fn scale<B>(call: &Call<'_>, body: B) -> Result<Response<Body>, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let media = call.media(EndpointRestrictions::NONE)?;
    let store = &call.store;
    let name = call.name().to_string();
    let object = match call.request.verb.as_str() {
        "get" => store.get(call.namespace, &name).await?,
        "update" => {
            let scale = read_body_value(call, body).await?;
            set_replicas(call, &name, |_| Ok(scale.clone())).await?
        }
        "patch" => {
            let kind = patch_type(call.content_type.as_deref())?;
            let bytes = read_body(body, MAX_REQUEST_BODY_BYTES).await?;
            set_replicas(call, &name, |current| {
                apply_patch(
                    kind,
                    current,
                    &bytes,
                    PatchTarget::BuiltIn {
                        group: "autoscaling",
                        kind: "Scale",
                    },
                )
                .map_err(|e| RegistryError::BadRequest(e.to_string()))
            })
            .await?
        }
        verb => {
            return Err(ApiError::method_not_supported(
                call.info.group,
                &format!("{}/scale", call.info.plural),
                verb,
            ));
        }
    };
    // A custom resource's replicas are read in the version the request names.
    let object = call.entry.output(object).await?;
    Ok(respond(StatusCode::OK, &scale_of(&object), &media))
}

/// Writes `spec.replicas` from the Scale that `scale` makes of the current Scale.
async fn set_replicas<F>(call: &Call<'_>, name: &str, mut scale: F) -> Result<Value, ApiError>
where
    F: FnMut(&Value) -> Result<Value, RegistryError>,
{
    Ok(call
        .store
        .guaranteed_update(call.namespace, name, Part::Main, |current| {
            let wanted = scale(&scale_of(current))?;
            let replicas = wanted["spec"]["replicas"].as_i64().ok_or_else(|| {
                RegistryError::BadRequest("spec.replicas of the Scale must be an integer".into())
            })?;
            if replicas < 0 {
                let mut errors = api_types::validation::ErrorList::new();
                errors.push(api_types::validation::FieldError::invalid(
                    &api_types::validation::FieldPath::new("spec").child("replicas"),
                    replicas,
                    "must be greater than or equal to 0",
                ));
                return Err(RegistryError::Invalid {
                    group: "autoscaling".into(),
                    kind: "Scale".into(),
                    name: name.into(),
                    errors,
                });
            }
            let mut next = current.clone();
            next["spec"]["replicas"] = json!(replicas);
            match wanted["metadata"]["resourceVersion"].as_str() {
                Some(rv) if !rv.is_empty() => next["metadata"]["resourceVersion"] = json!(rv),
                _ => {}
            }
            Ok(next)
        })
        .await?)
}

/// `POST pods/<name>/binding` (and the `bindings` resource): assigns the pod to a node once.
pub async fn bind<B>(call: &Call<'_>, body: B) -> Result<Response<Body>, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let binding = read_body_value(call, body).await?;
    let pod_name = if call.name().is_empty() {
        binding["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    } else {
        call.name().to_string()
    };
    let node = binding["target"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if node.is_empty() {
        return Err(ApiError::bad_request("Binding target.name is required"));
    }
    let now = crate::registry::meta::now();
    let pods = call.store.clone();
    pods.guaranteed_update(call.namespace, &pod_name, Part::Binding, |pod| {
        if let Some(current) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            return Err(RegistryError::Conflict {
                group: String::new(),
                resource: "pods".into(),
                name: pod_name.clone(),
                message: format!("pod {pod_name} is already assigned to node {current:?}"),
            });
        }
        if pod["metadata"]["deletionTimestamp"].is_string() {
            return Err(RegistryError::Conflict {
                group: String::new(),
                resource: "pods".into(),
                name: pod_name.clone(),
                message: format!("pod {pod_name} is being deleted, cannot be assigned to a host"),
            });
        }
        let mut next = pod.clone();
        next["spec"]["nodeName"] = json!(node);
        // The PodScheduled condition a binding implies, in the same write (upstream's
        // binding storage sets both at once).
        let mut conditions: Vec<Value> = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c["type"] != "PodScheduled")
            .collect();
        conditions.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
        next["status"]["conditions"] = json!(conditions);
        Ok(next)
    })
    .await?;
    let media = call.media(EndpointRestrictions::NONE)?;
    Ok(respond(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
        &media,
    ))
}

/// `POST pods/<name>/eviction`: deletes the pod with the eviction's options once the pod's
/// disruption budget allows it (see [`super::eviction`]).
pub async fn evict<B>(
    call: &Call<'_>,
    state: &super::state::ApiState,
    body: B,
) -> Result<Response<Body>, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let eviction = read_body_value(call, body).await?;
    let mut options = delete_options_from(&eviction["deleteOptions"], &call.query)?;
    let object = call.store.get(call.namespace, call.name()).await?;
    let ns = call.namespace.unwrap_or_default();
    let dry_run = call.query.dry_run()?;
    super::eviction::check_budget(state, ns, &object, dry_run).await?;
    if !dry_run {
        super::eviction::mark_disruption_target(
            &call.store,
            call.namespace,
            call.name(),
            &mut options,
        )
        .await?;
    }
    call.store
        .delete(call.namespace, call.name(), &options)
        .await?;
    let media = call.media(EndpointRestrictions::NONE)?;
    let mut status = success_status(call.info, &object);
    status["details"] = json!(null);
    Ok(respond(StatusCode::CREATED, &status, &media))
}
