//! API errors and the `metav1.Status` responses they become, with upstream's codes, reasons and
//! messages (`k8s.io/apimachinery/pkg/api/errors`), and the mapping from storage errors.

use api_types::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Status, StatusCause, StatusDetails,
};
use api_types::validation::ErrorList;
use http::{HeaderValue, Response, StatusCode, header};

use crate::http::response::{Body, json_bytes};
use crate::storage::backend::StorageError;

/// The message of a conflict on an optimistic-lock update, as upstream's storage.
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// An error of an API request, carrying the `Status` object the client receives.
///
/// Built with the constructors, which follow upstream's `NewNotFound`, `NewConflict`, ... so
/// messages and details are exactly what clients (kubectl, client-go) parse.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    // Boxed so `Result<_, ApiError>` stays small on the happy path.
    status: Box<Status>,
}

/// A resource and its group, as upstream's `schema.GroupResource` (`pods`, `deployments.apps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupResource<'a> {
    /// API group, empty for core.
    pub group: &'a str,
    /// Resource plural, e.g. `pods`.
    pub resource: &'a str,
}

impl<'a> GroupResource<'a> {
    /// A group and resource.
    pub fn new(group: &'a str, resource: &'a str) -> Self {
        GroupResource { group, resource }
    }

    fn is_empty(&self) -> bool {
        self.group.is_empty() && self.resource.is_empty()
    }
}

impl std::fmt::Display for GroupResource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

impl ApiError {
    /// Wraps a `Status` built elsewhere (e.g. by [`ErrorList::to_status`]).
    pub fn from_status(status: Status) -> Self {
        ApiError {
            status: Box::new(status),
        }
    }

    fn failure(code: u16, reason: &str, message: String, details: Option<StatusDetails>) -> Self {
        Self::from_status(Status {
            status: Some("Failure".to_string()),
            code: Some(i32::from(code)),
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            message: Some(message),
            details,
            ..Default::default()
        })
    }

    fn object_details(gr: GroupResource<'_>, name: &str) -> Option<StatusDetails> {
        Some(StatusDetails {
            group: non_empty(gr.group),
            kind: non_empty(gr.resource),
            name: non_empty(name),
            ..Default::default()
        })
    }

    /// 404 `NotFound`: `pods "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let gr = GroupResource::new(group, resource);
        Self::failure(
            404,
            "NotFound",
            format!("{gr} {} not found", go_quote(name)),
            Self::object_details(gr, name),
        )
    }

    /// 404 `NotFound` for a path nothing serves, as upstream's mux answers it:
    /// `the server could not find the requested resource`.
    pub fn path_not_found() -> Self {
        Self::failure(
            404,
            "NotFound",
            "the server could not find the requested resource".to_string(),
            Some(StatusDetails::default()),
        )
    }

    /// 409 `AlreadyExists`: `pods "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let gr = GroupResource::new(group, resource);
        Self::failure(
            409,
            "AlreadyExists",
            format!("{gr} {} already exists", go_quote(name)),
            Self::object_details(gr, name),
        )
    }

    /// 409 `Conflict`: `Operation cannot be fulfilled on pods "x": <detail>`.
    pub fn conflict(group: &str, resource: &str, name: &str, detail: &str) -> Self {
        let gr = GroupResource::new(group, resource);
        Self::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {gr} {}: {detail}",
                go_quote(name)
            ),
            Self::object_details(gr, name),
        )
    }

    /// The conflict of an update whose resourceVersion is stale.
    pub fn optimistic_lock_conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(group, resource, name, OPTIMISTIC_LOCK_ERROR_MSG)
    }

    /// 422 `Invalid` from validation errors: `Pod "x" is invalid: ...`.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &ErrorList) -> Self {
        Self::from_status(errors.to_status(group, kind, name))
    }

    /// 400 `BadRequest` with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::failure(400, "BadRequest", message.into(), None)
    }

    /// 415 `UnsupportedMediaType`: the body's content type is not one of `accepted`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::failure(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// 413 `RequestEntityTooLarge`: `Request entity too large: <message>`.
    pub fn request_entity_too_large(message: &str) -> Self {
        Self::failure(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {message}"),
            None,
        )
    }

    /// 410 `Expired` with `message` (upstream's `NewResourceExpired`).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::failure(410, "Expired", message.into(), None)
    }

    /// 410 `Expired` for a resourceVersion older than the oldest kept:
    /// `too old resource version: <requested> (<oldest>)`.
    pub fn too_old_resource_version(requested: i64, oldest: i64) -> Self {
        Self::expired(format!("too old resource version: {requested} ({oldest})"))
    }

    /// 410 `Gone` with `message`.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::failure(410, "Gone", message.into(), None)
    }

    /// 405 `MethodNotAllowed`: `<action> is not supported on resources of kind "<resource>"`.
    pub fn method_not_supported(group: &str, resource: &str, action: &str) -> Self {
        let gr = GroupResource::new(group, resource);
        Self::failure(
            405,
            "MethodNotAllowed",
            format!(
                "{action} is not supported on resources of kind {}",
                go_quote(&gr.to_string())
            ),
            Self::object_details(gr, ""),
        )
    }

    /// 405 `MethodNotAllowed` with a message of its own (a terminating CRD refuses creates).
    pub fn method_not_supported_with_message(
        group: &str,
        resource: &str,
        action: &str,
        message: &str,
    ) -> Self {
        let mut err = Self::method_not_supported(group, resource, action);
        err.status.message = Some(message.to_owned());
        err
    }

    /// 406 `NotAcceptable`: none of the Accept header's types can be produced.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::failure(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// 429 `TooManyRequests` asking the client to retry after `retry_after_seconds` (the
    /// response carries a `Retry-After` header).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Self::failure(
            429,
            "TooManyRequests",
            message.into(),
            Some(StatusDetails {
                retry_after_seconds: Some(retry_after_seconds),
                ..Default::default()
            }),
        )
    }

    /// 403 `Forbidden`: `pods "x" is forbidden: <detail>` (or `pods is forbidden: ...`
    /// without a name, `forbidden: ...` without a resource).
    pub fn forbidden(group: &str, resource: &str, name: &str, detail: &str) -> Self {
        let gr = GroupResource::new(group, resource);
        let message = if gr.is_empty() {
            format!("forbidden: {detail}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {detail}")
        } else {
            format!("{gr} {} is forbidden: {detail}", go_quote(name))
        };
        Self::failure(403, "Forbidden", message, Self::object_details(gr, name))
    }

    /// 401 `Unauthorized` with `message` (`not authorized` when empty, as upstream).
    pub fn unauthorized(message: &str) -> Self {
        let message = if message.is_empty() {
            "not authorized"
        } else {
            message
        };
        Self::failure(401, "Unauthorized", message.to_string(), None)
    }

    /// 500 `InternalError`: `Internal error occurred: <cause>`.
    pub fn internal(cause: impl Into<String>) -> Self {
        let cause = cause.into();
        Self::failure(
            500,
            "InternalError",
            format!("Internal error occurred: {cause}"),
            Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    message: Some(cause),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        )
    }

    /// 503 `ServiceUnavailable` with `message`.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::failure(503, "ServiceUnavailable", message.into(), None)
    }

    /// 504 `Timeout`: `Timeout: <message>`, retry after `retry_after_seconds` when positive.
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        let details = (retry_after_seconds > 0).then(|| StatusDetails {
            retry_after_seconds: Some(retry_after_seconds),
            ..Default::default()
        });
        Self::failure(504, "Timeout", format!("Timeout: {message}"), details)
    }

    /// 504 for a resourceVersion the store has not reached yet (upstream's
    /// `NewTooLargeResourceVersionError`): the client should retry after a second.
    pub fn too_large_resource_version(requested: i64, current: i64) -> Self {
        Self::failure(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
            Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ResourceVersionTooLarge".to_string()),
                    message: Some("Too large resource version".to_string()),
                    ..Default::default()
                }]),
                retry_after_seconds: Some(1),
                ..Default::default()
            }),
        )
    }

    /// Maps a storage error on the object `name` of `group`/`resource` (name may be empty for
    /// collection reads) to the error upstream's registry returns for it.
    pub fn from_storage(err: &StorageError, group: &str, resource: &str, name: &str) -> Self {
        match err {
            StorageError::NotFound { .. } => Self::not_found(group, resource, name),
            StorageError::AlreadyExists { .. } => Self::already_exists(group, resource, name),
            StorageError::Conflict { .. } => Self::optimistic_lock_conflict(group, resource, name),
            StorageError::Compacted {
                requested,
                compacted,
            } => Self::too_old_resource_version(*requested, *compacted),
            StorageError::FutureRevision { requested, current } => {
                Self::too_large_resource_version(*requested, *current)
            }
            StorageError::Unavailable(msg) => Self::service_unavailable(msg.clone()),
            StorageError::Internal(msg) => Self::internal(msg.clone()),
        }
    }

    /// The `Status` object.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The `Status` object, consumed.
    pub fn into_status(self) -> Status {
        *self.status
    }

    /// The HTTP status code (500 if the Status carries none or an invalid one).
    pub fn code(&self) -> StatusCode {
        self.status
            .code
            .and_then(|c| u16::try_from(c).ok())
            .and_then(|c| StatusCode::from_u16(c).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The machine-readable reason, e.g. `NotFound`.
    pub fn reason(&self) -> &str {
        self.status.reason.as_deref().unwrap_or("")
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        self.status.message.as_deref().unwrap_or("")
    }

    /// Seconds the client should wait before retrying, when the error says so.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.status
            .details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
    }

    /// The Status as upstream encodes it: empty strings and lists in `details` are omitted
    /// (Go's `omitempty`), so core-group errors carry no `"group": ""`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut status = (*self.status).clone();
        if let Some(d) = status.details.as_mut() {
            for field in [&mut d.group, &mut d.kind, &mut d.name, &mut d.uid] {
                if field.as_deref() == Some("") {
                    *field = None;
                }
            }
            if d.causes.as_ref().is_some_and(|c| c.is_empty()) {
                d.causes = None;
            }
        }
        serde_json::to_value(&status).unwrap_or_else(|_| serde_json::json!({}))
    }

    /// The JSON response: the Status with its code, and `Retry-After` when the error asks
    /// the client to wait.
    pub fn into_response(self) -> Response<Body> {
        let body = serde_json::to_vec(&self.to_json()).unwrap_or_default();
        let mut resp = json_bytes(self.code(), body);
        if let Some(secs) = self.retry_after_seconds()
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ApiError {}

impl From<ApiError> for Response<Body> {
    fn from(e: ApiError) -> Self {
        e.into_response()
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Go's `%q`, as upstream's messages print names (one implementation, in api-types).
pub use api_types::validation::go_quote;

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::validation::{FieldError, FieldPath};
    use serde_json::json;

    fn base(code: u16, reason: &str, message: &str) -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        })
    }

    fn with_details(mut v: serde_json::Value, details: serde_json::Value) -> serde_json::Value {
        v["details"] = details;
        v
    }

    #[test]
    fn status_json_matches_upstream() {
        let cases = [
            (
                ApiError::not_found("", "pods", "x"),
                with_details(
                    base(404, "NotFound", "pods \"x\" not found"),
                    json!({"name": "x", "kind": "pods"}),
                ),
            ),
            (
                ApiError::not_found("apps", "deployments", "web"),
                with_details(
                    base(404, "NotFound", "deployments.apps \"web\" not found"),
                    json!({"name": "web", "group": "apps", "kind": "deployments"}),
                ),
            ),
            (
                ApiError::already_exists("", "configmaps", "cm"),
                with_details(
                    base(409, "AlreadyExists", "configmaps \"cm\" already exists"),
                    json!({"name": "cm", "kind": "configmaps"}),
                ),
            ),
            (
                ApiError::optimistic_lock_conflict("", "pods", "x"),
                with_details(
                    base(
                        409,
                        "Conflict",
                        "Operation cannot be fulfilled on pods \"x\": the object has been modified; please apply your changes to the latest version and try again",
                    ),
                    json!({"name": "x", "kind": "pods"}),
                ),
            ),
            (ApiError::bad_request("bad"), base(400, "BadRequest", "bad")),
            (
                ApiError::unsupported_media_type(&["application/json", "application/yaml"]),
                base(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
                ),
            ),
            (
                ApiError::request_entity_too_large("limit is 3145728"),
                base(
                    413,
                    "RequestEntityTooLarge",
                    "Request entity too large: limit is 3145728",
                ),
            ),
            (
                ApiError::too_old_resource_version(5, 10),
                base(410, "Expired", "too old resource version: 5 (10)"),
            ),
            (ApiError::gone("gone"), base(410, "Gone", "gone")),
            (
                ApiError::path_not_found(),
                with_details(
                    base(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    ),
                    json!({}),
                ),
            ),
            (
                ApiError::method_not_supported("", "bindings", "list"),
                with_details(
                    base(
                        405,
                        "MethodNotAllowed",
                        "list is not supported on resources of kind \"bindings\"",
                    ),
                    json!({"kind": "bindings"}),
                ),
            ),
            (
                ApiError::not_acceptable(&["application/json", "application/yaml"]),
                base(
                    406,
                    "NotAcceptable",
                    "only the following media types are accepted: application/json, application/yaml",
                ),
            ),
            (
                ApiError::too_many_requests("Too many requests, please try again later.", 1),
                with_details(
                    base(
                        429,
                        "TooManyRequests",
                        "Too many requests, please try again later.",
                    ),
                    json!({"retryAfterSeconds": 1}),
                ),
            ),
            (
                ApiError::forbidden(
                    "",
                    "pods",
                    "",
                    "User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
                ),
                with_details(
                    base(
                        403,
                        "Forbidden",
                        "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
                    ),
                    json!({"kind": "pods"}),
                ),
            ),
            (
                ApiError::forbidden("apps", "deployments", "web", "no"),
                with_details(
                    base(
                        403,
                        "Forbidden",
                        "deployments.apps \"web\" is forbidden: no",
                    ),
                    json!({"name": "web", "group": "apps", "kind": "deployments"}),
                ),
            ),
            (
                ApiError::forbidden("", "", "", "User \"u\" cannot get path \"/x\""),
                with_details(
                    base(
                        403,
                        "Forbidden",
                        "forbidden: User \"u\" cannot get path \"/x\"",
                    ),
                    json!({}),
                ),
            ),
            (
                ApiError::unauthorized("Unauthorized"),
                base(401, "Unauthorized", "Unauthorized"),
            ),
            (
                ApiError::unauthorized(""),
                base(401, "Unauthorized", "not authorized"),
            ),
            (
                ApiError::internal("boom"),
                with_details(
                    base(500, "InternalError", "Internal error occurred: boom"),
                    json!({"causes": [{"message": "boom"}]}),
                ),
            ),
            (
                ApiError::service_unavailable("etcd down"),
                base(503, "ServiceUnavailable", "etcd down"),
            ),
            (
                ApiError::timeout("request did not complete within 60s", 0),
                base(
                    504,
                    "Timeout",
                    "Timeout: request did not complete within 60s",
                ),
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_json(), want, "{err}");
        }
    }

    #[test]
    fn invalid_uses_validation_status_without_empty_group() {
        let errs: ErrorList =
            FieldError::required(&FieldPath::new("spec").child("containers"), "").into();
        let err = ApiError::invalid("", "Pod", "p", &errs);
        assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
        let v = err.to_json();
        assert_eq!(
            v["message"],
            "Pod \"p\" is invalid: spec.containers: Required value"
        );
        assert_eq!(v["reason"], "Invalid");
        assert!(v["details"].get("group").is_none(), "{v}");
        assert_eq!(v["details"]["kind"], "Pod");
        assert_eq!(v["details"]["causes"][0]["field"], "spec.containers");
    }

    #[test]
    fn responses_carry_code_content_type_and_retry_after() {
        let resp = ApiError::too_many_requests("slow down", 3).into_response();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "3");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let resp = ApiError::not_found("", "pods", "x").into_response();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert!(resp.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn storage_errors_map_to_upstream_statuses() {
        let cases = [
            (
                StorageError::NotFound {
                    key: "/registry/pods/a/x".into(),
                },
                404,
                "NotFound",
                "pods \"x\" not found",
            ),
            (
                StorageError::AlreadyExists { key: "k".into() },
                409,
                "AlreadyExists",
                "pods \"x\" already exists",
            ),
            (
                StorageError::Conflict {
                    key: "k".into(),
                    expected: 3,
                    current: None,
                },
                409,
                "Conflict",
                "Operation cannot be fulfilled on pods \"x\": the object has been modified; please apply your changes to the latest version and try again",
            ),
            (
                StorageError::Compacted {
                    requested: 2,
                    compacted: 7,
                },
                410,
                "Expired",
                "too old resource version: 2 (7)",
            ),
            (
                StorageError::FutureRevision {
                    requested: 90,
                    current: 12,
                },
                504,
                "Timeout",
                "Timeout: Too large resource version: 90, current: 12",
            ),
            (
                StorageError::Unavailable("no leader".into()),
                503,
                "ServiceUnavailable",
                "no leader",
            ),
            (
                StorageError::Internal("disk".into()),
                500,
                "InternalError",
                "Internal error occurred: disk",
            ),
        ];
        for (storage, code, reason, message) in cases {
            let err = ApiError::from_storage(&storage, "", "pods", "x");
            assert_eq!(err.code().as_u16(), code, "{storage}");
            assert_eq!(err.reason(), reason, "{storage}");
            assert_eq!(err.message(), message, "{storage}");
        }
        let future = ApiError::from_storage(
            &StorageError::FutureRevision {
                requested: 9,
                current: 1,
            },
            "",
            "pods",
            "",
        );
        assert_eq!(future.retry_after_seconds(), Some(1));
    }

    #[test]
    fn quoting_as_go() {
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("héllo"), "\"héllo\"");
    }
}
