//! Resource requests: decode, dispatch to the generic registry by verb and subresource, encode.

use super::encode::{ListMeta, convert_with, list_object, printer_of, respond};
use super::field_validation::FieldValidation;
use super::query::Query;
use super::state::{ApiState, ResourceEntry};
use super::{subresources, watch};
use crate::admission::{Attributes, Operation, RequestAdmission, Warnings};
use crate::http::auth::user::UserInfo;
use crate::http::body::{MAX_REQUEST_BODY_BYTES, decode, read_body};
use crate::http::negotiation::{
    EndpointRestrictions, MediaType, PatchType as WirePatch, negotiate_input, negotiate_output,
    negotiate_patch,
};
use crate::http::request_info::RequestInfo;
use crate::http::response::{Body, BoxError};
use crate::http::status::ApiError;
use crate::patch::{PatchError, PatchTarget, PatchType, apply_patch};
use crate::registry::{DeleteOptions, DeleteOutcome, Part, RegistryError, ResourceStore};
use crate::tables::IncludeObject;
use api_types::registry::ResourceInfo;
use http::{Request, Response, StatusCode, header};
use hyper::body::Body as HttpBody;
use serde_json::{Value, json};
use std::sync::Arc;

/// What a handler needs of the request besides its body.
pub struct Call<'a> {
    pub entry: &'a ResourceEntry,
    /// The resource's store, or its dry-run view for `dryRun=All`.
    pub store: ResourceStore,
    pub info: &'static ResourceInfo,
    pub request: &'a RequestInfo,
    pub namespace: Option<&'a str>,
    pub query: Query,
    pub accept: Option<String>,
    pub content_type: Option<String>,
}

impl Call<'_> {
    pub fn name(&self) -> &str {
        &self.request.name
    }

    pub fn media(&self, endpoint: EndpointRestrictions) -> Result<MediaType, ApiError> {
        negotiate_output(self.accept.as_deref(), endpoint)
    }

    pub fn include_object(&self) -> Result<IncludeObject, ApiError> {
        IncludeObject::parse(self.query.get("includeObject").unwrap_or("")).ok_or_else(|| {
            ApiError::bad_request("includeObject: Unsupported value: supported values: \"None\", \"Metadata\", \"Object\"")
        })
    }

    /// Answers with one object, converted and encoded as negotiated.
    pub async fn object_response(
        &self,
        status: StatusCode,
        object: Value,
    ) -> Result<Response<Body>, ApiError> {
        let media = self.media(EndpointRestrictions::RESOURCE)?;
        let body = convert_with(
            self.info,
            self.entry.output(object).await?,
            None,
            &media,
            self.include_object()?,
            printer_of(self.entry),
        );
        Ok(respond(status, &body, &media))
    }
}

/// Serves a resource request; every failure is a `Status` response.
pub async fn handle<B>(
    state: &Arc<ApiState>,
    request: &RequestInfo,
    req: Request<B>,
) -> Response<Body>
where
    B: HttpBody + Send + 'static,
    B::Error: Into<BoxError>,
{
    // Admission plugins (PodSecurity's warn mode, webhooks) add warnings for the client,
    // whatever the outcome.
    let warnings = Warnings::default();
    // componentstatuses are computed, not stored: they have their own handler.
    let result = if super::component_status::handles(request) {
        super::component_status::serve(state, request, req).await
    } else {
        dispatch(state, request, req, &warnings).await
    };
    let response = match result {
        Ok(response) => response,
        Err(err) => err.into_response(),
    };
    let response = with_warnings(response, &warnings.list());
    super::deprecation::with_deprecation_warning(response, request)
}

fn header_string<B>(req: &Request<B>, name: header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

async fn dispatch<B>(
    state: &Arc<ApiState>,
    request: &RequestInfo,
    req: Request<B>,
    warnings: &Warnings,
) -> Result<Response<Body>, ApiError>
where
    B: HttpBody + Send + 'static,
    B::Error: Into<BoxError>,
{
    let entry = state
        .resolve(&request.api_group, &request.api_version, &request.resource)
        .ok_or_else(ApiError::path_not_found)?;
    let entry = &*entry;
    let info = entry.store.info();
    if request.verb == "create"
        && request.subresource.is_empty()
        && entry.custom.as_ref().is_some_and(|c| c.terminating)
    {
        return Err(ApiError::method_not_supported_with_message(
            info.group,
            info.plural,
            "create",
            "create not allowed while custom resource definition is terminating",
        ));
    }
    let given_namespace = (!request.namespace.is_empty()).then_some(request.namespace.as_str());
    // `/api/v1/namespaces/<name>` carries the namespace's own name in the namespace position.
    let is_namespaces = info.group.is_empty() && info.plural == "namespaces";
    let namespace = given_namespace.filter(|_| info.namespaced);
    // A cluster-scoped resource has no namespaced path, and a namespaced one only lists and
    // watches across namespaces.
    match (info.namespaced, given_namespace) {
        (false, Some(_)) if !is_namespaces => return Err(ApiError::path_not_found()),
        (true, None) if !matches!(request.verb.as_str(), "list" | "watch") => {
            return Err(ApiError::path_not_found());
        }
        _ => {}
    }
    // log, exec, attach, portforward and proxy go to kubelets and backends as streams.
    if super::proxy::handles(info, &request.subresource) {
        return super::proxy::serve(state, info, request, req).await;
    }
    let query = Query::parse(req.uri().query());
    let dry_run = query.dry_run()?;
    let mut store = if dry_run {
        entry.store.dry_run()
    } else {
        entry.store.clone()
    };
    let call_user = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let mut admission_attrs = None;
    if let Some(operation) = admission_operation(&request.verb) {
        let user = call_user.clone();
        let attrs = Attributes {
            operation,
            resource: info,
            subresource: request.subresource.clone(),
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            user,
            dry_run,
            warnings: warnings.clone(),
        };
        admission_attrs = Some(attrs.clone());
        store = store.with_admission(Arc::new(RequestAdmission {
            chain: state.security().admission.clone(),
            attrs,
            state: state.clone(),
        }));
    }
    // Field management: upstream's checks of fieldManager/force, and every write but an apply
    // (which computes its own) records managedFields.
    let content_type = header_string(&req, header::CONTENT_TYPE);
    let is_apply = request.verb == "patch"
        && matches!(
            negotiate_patch(content_type.as_deref()),
            Ok(WirePatch::Apply)
        );
    crate::apply::request::validate_options(&request.verb, is_apply, &query)?;
    if !is_apply
        && let Some(tracker) = crate::apply::request::update_tracker(
            info,
            entry.custom.as_ref(),
            request,
            &query,
            header_string(&req, header::USER_AGENT).as_deref(),
        )
    {
        store = store.with_tracker(tracker);
    }
    let call = Call {
        entry,
        store,
        info,
        request,
        namespace,
        query,
        accept: header_string(&req, header::ACCEPT),
        content_type,
    };
    let body = req.into_body();
    match (request.verb.as_str(), request.subresource.as_str()) {
        ("get", "" | "status") => {
            let object = call.store.get(namespace, call.name()).await?;
            call.object_response(StatusCode::OK, object).await
        }
        ("get", "ephemeralcontainers") if is_pods(info) => {
            let object = call.store.get(namespace, call.name()).await?;
            call.object_response(StatusCode::OK, object).await
        }
        ("list", "") => list(&call).await,
        ("watch", "") => watch::serve(&call).await,
        ("create", "") => {
            let (mut object, warnings) = read_object(&call, body).await?;
            if info.group == "certificates.k8s.io" && info.plural == "certificatesigningrequests" {
                // Upstream's CSR strategy: the requester is who created it, never what it says.
                object["spec"]["username"] = json!(call_user.name);
                object["spec"]["groups"] = json!(call_user.groups);
                if let Some(spec) = object["spec"].as_object_mut() {
                    spec.remove("uid");
                    spec.remove("extra");
                    if !call_user.uid.is_empty() {
                        spec.insert("uid".into(), json!(call_user.uid));
                    }
                    if !call_user.extra.is_empty() {
                        spec.insert("extra".into(), json!(call_user.extra));
                    }
                }
            }
            let created = call.store.create(namespace, object).await?;
            Ok(with_warnings(
                call.object_response(StatusCode::CREATED, created).await?,
                &warnings,
            ))
        }
        ("update", sub @ ("" | "status" | "finalize")) => {
            let (object, warnings) = read_object(&call, body).await?;
            let updated = if sub == "finalize" {
                finalize_namespace(&call, object).await?
            } else {
                let part = if sub == "status" {
                    Part::Status
                } else {
                    Part::Main
                };
                call.store
                    .update(namespace, call.name(), object, part)
                    .await?
            };
            Ok(with_warnings(
                call.object_response(StatusCode::OK, updated).await?,
                &warnings,
            ))
        }
        // A CSR's /approval writes only status.conditions (upstream's approval strategy): the
        // rest of the status, the issued certificate, is kept.
        ("update", "approval")
            if info.group == "certificates.k8s.io"
                && info.plural == "certificatesigningrequests" =>
        {
            let (object, warnings) = read_object(&call, body).await?;
            let current = call.store.get(namespace, call.name()).await?;
            let mut status = current.get("status").cloned().unwrap_or_else(|| json!({}));
            match (object.pointer("/status/conditions"), status.as_object_mut()) {
                (Some(conditions), Some(map)) => {
                    map.insert("conditions".into(), conditions.clone());
                }
                (None, Some(map)) => {
                    map.remove("conditions");
                }
                _ => {}
            }
            let mut merged = object;
            merged["status"] = status;
            let updated = call
                .store
                .update(namespace, call.name(), merged, Part::Status)
                .await?;
            Ok(with_warnings(
                call.object_response(StatusCode::OK, updated).await?,
                &warnings,
            ))
        }
        ("patch", sub @ ("" | "status")) => {
            let part = if sub == "status" {
                Part::Status
            } else {
                Part::Main
            };
            let (patched, status, warnings) = patch(&call, body, part).await?;
            Ok(with_warnings(
                call.object_response(status, patched).await?,
                &warnings,
            ))
        }
        // `kubectl debug` adds its container with a strategic merge patch here.
        ("patch", "ephemeralcontainers") if is_pods(info) => {
            let (patched, status, warnings) = patch(&call, body, Part::EphemeralContainers).await?;
            Ok(with_warnings(
                call.object_response(status, patched).await?,
                &warnings,
            ))
        }
        ("update", "ephemeralcontainers") if is_pods(info) => {
            let (object, warnings) = read_object(&call, body).await?;
            let updated = call
                .store
                .update(namespace, call.name(), object, Part::EphemeralContainers)
                .await?;
            Ok(with_warnings(
                call.object_response(StatusCode::OK, updated).await?,
                &warnings,
            ))
        }
        ("delete", "") => delete(&call, body).await,
        ("deletecollection", "") => delete_collection(&call, body).await,
        (_, "scale") => subresources::scale(&call, body).await,
        ("create", "binding") => subresources::bind(&call, body).await,
        ("create", "eviction") => subresources::evict(&call, state, body).await,
        ("create", "token") if info.group.is_empty() && info.plural == "serviceaccounts" => {
            let mut request = read_body_value(&call, body).await?;
            let security = state.security();
            // The TokenRequest itself is admitted (NodeRestriction limits kubelets to tokens
            // bound to their own pods); the service account is not written.
            if let Some(attrs) = &admission_attrs {
                security
                    .admission
                    .admit(attrs, &mut request, None, state)
                    .await?;
                security
                    .admission
                    .validate(attrs, Some(&request), None, state)
                    .await?;
            }
            let answered = super::token_request::serve(
                state,
                request_namespace(&call),
                call.name(),
                request,
                &security.api_audiences,
                &call_user,
            )
            .await?;
            call.object_response(StatusCode::CREATED, answered).await
        }
        (verb, sub) => {
            let resource = if sub.is_empty() {
                info.plural.to_string()
            } else {
                format!("{}/{sub}", info.plural)
            };
            Err(ApiError::method_not_supported(info.group, &resource, verb))
        }
    }
}

fn is_pods(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "pods"
}

fn request_namespace<'a>(call: &'a Call<'_>) -> &'a str {
    call.namespace.unwrap_or_default()
}

/// The admission operation of a write verb; None for reads.
fn admission_operation(verb: &str) -> Option<Operation> {
    match verb {
        "create" => Some(Operation::Create),
        "update" | "patch" => Some(Operation::Update),
        "delete" | "deletecollection" => Some(Operation::Delete),
        _ => None,
    }
}

/// Adds a `Warning: 299 - "<message>"` header per warning, as upstream reports them.
pub fn with_warnings(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for warning in warnings {
        let text = format!("299 - {}", crate::http::status::go_quote(warning));
        if let Ok(value) = http::HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// Reads and decodes a request body (JSON or YAML by Content-Type, 3 MiB at most).
pub async fn read_body_value<B>(call: &Call<'_>, body: B) -> Result<Value, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    read_body_value_as(call.content_type.as_deref(), body).await
}

/// Reads and decodes a body whose `Content-Type` is `content_type`.
pub async fn read_body_value_as<B>(content_type: Option<&str>, body: B) -> Result<Value, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let format = negotiate_input(content_type)?;
    let bytes = read_body(body, MAX_REQUEST_BODY_BYTES).await?;
    decode(&bytes, format)
}

/// Reads the object of a create or update, checks it is of this endpoint's kind and applies
/// `fieldValidation` (unknown and duplicate fields); the object and the warnings to send.
async fn read_object<B>(call: &Call<'_>, body: B) -> Result<(Value, Vec<String>), ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let validation = FieldValidation::from_query(&call.query)?;
    let format = negotiate_input(call.content_type.as_deref())?;
    let bytes = read_body(body, MAX_REQUEST_BODY_BYTES).await?;
    validation.decode_and_check(call.info, call.entry.custom.as_deref(), &bytes, format)
}

/// Fills apiVersion/kind when absent; different ones are a 400 as upstream.
pub fn check_kind(info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    };
    let expected_version = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(given) if given != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({given}) does not match the expected API version ({expected_version})"
            )));
        }
        Some(_) => {}
        None => {
            map.insert("apiVersion".into(), json!(expected_version));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(given) if given != info.kind => Err(ApiError::bad_request(format!(
            "the kind in the data ({given}) does not match the expected kind ({})",
            info.kind
        ))),
        Some(_) => Ok(()),
        None => {
            map.insert("kind".into(), json!(info.kind));
            Ok(())
        }
    }
}

async fn list(call: &Call<'_>) -> Result<Response<Body>, ApiError> {
    let options = call.query.list_options(call.info)?;
    let media = call.media(EndpointRestrictions::RESOURCE)?;
    let whole = options.limit == 0 && options.continue_token.is_none();
    let any_recent = options.resource_version.as_deref() == Some("0");
    // A consistent list (no resourceVersion) is served from the watch cache once it has caught
    // up with the store's current revision, as upstream's ConsistentListFromCache does.
    let consistent = options
        .resource_version
        .as_deref()
        .is_none_or(str::is_empty)
        && options.resource_version_match.is_none();
    if whole && consistent {
        let storage_error =
            |err| ApiError::from_storage(&err, call.info.group, call.info.plural, "");
        let revision = call
            .store
            .backend()
            .current_revision()
            .await
            .map_err(storage_error)?;
        call.entry
            .cacher
            .wait_until_fresh(revision)
            .await
            .map_err(storage_error)?;
    }
    let from_cache = whole && (any_recent || consistent);
    let (items, meta) = if from_cache {
        // Served from the watch cache: any recent state, or one at least as new as the store's.
        let store = call.store.clone();
        let opts = options.clone();
        let filter: crate::storage::cacher::Filter =
            std::sync::Arc::new(move |object: &Value| store.selected(object, &opts));
        let prefix = crate::registry::keys::namespace_prefix(call.info, call.namespace);
        let (objects, revision) = call.entry.cacher.list(&prefix, &filter);
        let meta = ListMeta {
            resource_version: revision.to_string(),
            ..Default::default()
        };
        if call.entry.custom.is_none() && media == MediaType::JSON {
            // The common case (informers' and kubectl's JSON lists) is encoded straight from
            // the cache's shared objects, without copying each one into a new list.
            let body = super::encode::list_json(call.info, &objects, &meta);
            return Ok(super::encode::respond_bytes(StatusCode::OK, body, &media));
        }
        let items = call
            .entry
            .output_list(objects.iter().map(|o| (**o).clone()).collect())
            .await?;
        (
            items,
            ListMeta {
                resource_version: revision.to_string(),
                ..Default::default()
            },
        )
    } else {
        let page = call.store.list(call.namespace, &options).await?;
        (
            call.entry.output_list(page.items).await?,
            ListMeta {
                resource_version: page.resource_version.to_string(),
                continue_token: page.continue_token,
                remaining_item_count: page.remaining,
            },
        )
    };
    let body = list_object(call.info, items, &meta);
    let body = convert_with(
        call.info,
        body,
        Some(&meta),
        &media,
        call.include_object()?,
        printer_of(call.entry),
    );
    Ok(respond(StatusCode::OK, &body, &media))
}

/// A PATCH: the patched object, 200 (or 201 for an apply that created it), and warnings.
async fn patch<B>(
    call: &Call<'_>,
    body: B,
    part: Part,
) -> Result<(Value, StatusCode, Vec<String>), ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    if matches!(
        negotiate_patch(call.content_type.as_deref()),
        Ok(WirePatch::Apply)
    ) {
        let bytes = read_body(body, MAX_REQUEST_BODY_BYTES).await?;
        let applied = crate::apply::serve::apply(call, &bytes, part).await?;
        return Ok((applied.object, applied.status, applied.warnings));
    }
    let kind = patch_type(call.content_type.as_deref())?;
    let bytes = read_body(body, MAX_REQUEST_BODY_BYTES).await?;
    let info = call.info;
    let target = PatchTarget::BuiltIn {
        group: info.group,
        kind: info.kind,
    };
    let validation = FieldValidation::from_query(&call.query)?;
    let patch_duplicates = match validation {
        FieldValidation::Ignore => Vec::new(),
        _ => super::field_validation::patch_duplicates(kind == PatchType::Json, &bytes),
    };
    let mut failure: Option<ApiError> = None;
    let mut warnings = Vec::new();
    let result = call
        .store
        .guaranteed_update(call.namespace, call.name(), part, |old| {
            let mut patched = apply_patch(kind, old, &bytes, target).map_err(|err| {
                let message = err.to_string();
                failure = Some(patch_error_status(info, call.name(), err));
                RegistryError::BadRequest(message)
            })?;
            // The stored object has no unknown fields, so any found came with the patch.
            match validation.check_patched(
                info,
                call.entry.custom.as_deref(),
                &mut patched,
                &patch_duplicates,
            ) {
                Ok(found) => warnings = found,
                Err(err) => {
                    let message = err.message().to_string();
                    failure = Some(err);
                    return Err(RegistryError::BadRequest(message));
                }
            }
            Ok(patched)
        })
        .await;
    match (result, failure) {
        (Ok(object), _) => Ok((object, StatusCode::OK, warnings)),
        (Err(_), Some(err)) => Err(err),
        (Err(err), None) => Err(err.into()),
    }
}

/// The patch format a PATCH's `Content-Type` names. Server-side apply is served by `patch`
/// before this is asked; elsewhere (the scale subresource) it is a 415.
pub fn patch_type(content_type: Option<&str>) -> Result<PatchType, ApiError> {
    match negotiate_patch(content_type)? {
        WirePatch::Json => Ok(PatchType::Json),
        WirePatch::Merge => Ok(PatchType::Merge),
        WirePatch::StrategicMerge => Ok(PatchType::StrategicMerge),
        WirePatch::Apply => Err(ApiError::unsupported_media_type(&[
            PatchType::Json.media_type(),
            PatchType::Merge.media_type(),
            PatchType::StrategicMerge.media_type(),
        ])),
    }
}

/// A patch that does not apply, with the status upstream answers for its kind of failure.
fn patch_error_status(info: &ResourceInfo, name: &str, err: PatchError) -> ApiError {
    let message = err.to_string();
    match err.status_code() {
        413 => ApiError::request_entity_too_large(&message),
        415 => ApiError::unsupported_media_type(&[
            "application/json-patch+json",
            "application/merge-patch+json",
        ]),
        422 => {
            let mut errors = api_types::validation::ErrorList::new();
            errors.push(api_types::validation::FieldError::invalid(
                &api_types::validation::FieldPath::new(""),
                "",
                message,
            ));
            ApiError::invalid(info.group, info.kind, name, &errors)
        }
        _ => ApiError::bad_request(message),
    }
}

/// The DeleteOptions of a delete: the body (if any) then the query, as upstream merges them.
pub async fn delete_options<B>(call: &Call<'_>, body: B) -> Result<DeleteOptions, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let bytes = read_body(body, MAX_REQUEST_BODY_BYTES).await?;
    let from_body = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        // Typed clients send DeleteOptions as protobuf, others as JSON.
        decode(&bytes, negotiate_input(call.content_type.as_deref())?)?
    };
    delete_options_from(&from_body, &call.query)
}

/// DeleteOptions from a decoded body and the query.
pub fn delete_options_from(body: &Value, query: &Query) -> Result<DeleteOptions, ApiError> {
    let grace = match query.get("gracePeriodSeconds") {
        Some(v) => Some(
            v.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {v:?}")))?,
        ),
        None => body["gracePeriodSeconds"].as_i64(),
    };
    let mut policy = query
        .get("propagationPolicy")
        .map(String::from)
        .or_else(|| body["propagationPolicy"].as_str().map(String::from));
    // The deprecated orphanDependents maps onto a policy, as upstream does.
    let orphan = query
        .get("orphanDependents")
        .map(|v| v == "true")
        .or_else(|| body["orphanDependents"].as_bool());
    if policy.is_none() {
        policy = orphan.map(|o| if o { "Orphan" } else { "Background" }.to_string());
    }
    if let Some(p) = &policy
        && !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        )));
    }
    Ok(DeleteOptions {
        grace_period_seconds: grace,
        precondition_uid: body["preconditions"]["uid"].as_str().map(String::from),
        precondition_resource_version: body["preconditions"]["resourceVersion"]
            .as_str()
            .map(String::from),
        propagation_policy: policy,
    })
}

async fn delete<B>(call: &Call<'_>, body: B) -> Result<Response<Body>, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let options = delete_options(call, body).await?;
    let outcome = call
        .store
        .delete(call.namespace, call.name(), &options)
        .await?;
    match outcome {
        DeleteOutcome::Deleted(object) if !call.store.strategy.returns_deleted_object() => {
            let media = call.media(EndpointRestrictions::NONE)?;
            Ok(respond(
                StatusCode::OK,
                &success_status(call.info, &object),
                &media,
            ))
        }
        DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object) => {
            call.object_response(StatusCode::OK, object).await
        }
    }
}

/// Upstream's `Status` of a delete whose object is gone.
pub fn success_status(info: &ResourceInfo, object: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": object["metadata"]["name"],
            "group": info.group,
            "kind": info.plural,
            "uid": object["metadata"]["uid"],
        },
    })
}

async fn delete_collection<B>(call: &Call<'_>, body: B) -> Result<Response<Body>, ApiError>
where
    B: HttpBody,
    B::Error: Into<BoxError>,
{
    let delete = delete_options(call, body).await?;
    let mut list = call.query.list_options(call.info)?;
    list.limit = 0;
    list.continue_token = None;
    let page = call.store.list(call.namespace, &list).await?;
    let mut deleted = Vec::with_capacity(page.items.len());
    for object in page.items {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let namespace = object["metadata"]["namespace"].as_str().map(String::from);
        match call
            .store
            .delete(namespace.as_deref(), &name, &delete)
            .await
        {
            Ok(DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o)) => deleted.push(o),
            // Gone meanwhile: that is what was asked.
            Err(RegistryError::NotFound { .. }) => {}
            Err(err) => return Err(err.into()),
        }
    }
    let meta = ListMeta {
        resource_version: page.resource_version.to_string(),
        ..Default::default()
    };
    let media = call.media(EndpointRestrictions::NONE)?;
    let deleted = call.entry.output_list(deleted).await?;
    Ok(respond(
        StatusCode::OK,
        &list_object(call.info, deleted, &meta),
        &media,
    ))
}

/// `PUT namespaces/<name>/finalize`: only `spec.finalizers` changes.
async fn finalize_namespace(call: &Call<'_>, object: Value) -> Result<Value, ApiError> {
    let finalizers = object["spec"]["finalizers"].clone();
    let rv = object["metadata"]["resourceVersion"].clone();
    Ok(call
        .store
        .guaranteed_update(None, call.name(), Part::Main, |old| {
            let mut new = old.clone();
            new["spec"]["finalizers"] = if finalizers.is_null() {
                json!([])
            } else {
                finalizers.clone()
            };
            if rv.is_string() {
                new["metadata"]["resourceVersion"] = rv.clone();
            }
            Ok(new)
        })
        .await?)
}
