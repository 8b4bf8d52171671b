//! The OpenAPI documents of the built-in API: `/openapi/v3` (a root indexing one OpenAPI 3.0
//! document per group-version) and `/openapi/v2` (Swagger 2.0, JSON only).
//!
//! kubectl needs them: `create`/`apply` with the default `--validate=strict` look in the v3
//! document of the object's group-version for a PATCH operation with the `fieldValidation`
//! parameter before relying on server-side validation; `explain` reads the v3 schemas; client-side
//! `apply` reads the patch strategies in them.
//!
//! Schemas come from k8s-openapi's `schemars` implementations (see [`definitions`]); paths from
//! the registry (see [`paths`]). Everything is built on first use and then served as cached
//! bytes, so server start-up does not pay for it. Custom resources add their own documents
//! (see [`custom`]), rebuilt when CRDs change.

pub mod custom;
pub mod definitions;
pub mod documents;
pub mod kinds;
pub mod operation;
pub mod params;
pub mod patch_facts;
pub mod paths;
pub mod schema_walk;

use crate::http::response::{Body, full};
use crate::http::status::ApiError;
use custom::CustomDocuments;
use definitions::Definitions;
use documents::{Encoded, V3Documents};
use http::{HeaderValue, Response, StatusCode, header};
use std::sync::LazyLock;

/// The generated definitions, shared by both document versions.
static DEFINITIONS: LazyLock<Definitions> = LazyLock::new(Definitions::build);
/// The v3 documents and their root.
static V3: LazyLock<V3Documents> = LazyLock::new(|| documents::build_v3(&DEFINITIONS));
/// The v2 document (built only when someone asks for it: kubectl never does, as it wants
/// protobuf).
static V2: LazyLock<Encoded> = LazyLock::new(|| documents::build_v2(&DEFINITIONS));

/// Every schema definition (built on first call); field validation walks objects against it.
pub fn definitions() -> &'static Definitions {
    &DEFINITIONS
}

/// The cached v3 documents (built on first call).
pub fn v3_documents() -> &'static V3Documents {
    &V3
}

/// The cached v2 document (built on first call).
pub fn v2_document() -> &'static Encoded {
    &V2
}

const JSON: &str = "application/json";

/// Answers an OpenAPI request for `path` (without query) given the request's `Accept` header,
/// with the built-in documents and the custom resources' ones; `None` when `path` is not an
/// OpenAPI path.
pub fn serve(path: &str, accept: Option<&str>, custom: &CustomDocuments) -> Option<Response<Body>> {
    let path = path.trim_end_matches('/');
    if path == "/openapi/v2" {
        if !accepts_json(accept) {
            return Some(ApiError::not_acceptable(&[JSON]).into_response());
        }
        return Some(match custom.v2_document() {
            Some(doc) => document_response(&doc),
            None => document_response(v2_document()),
        });
    }
    let rest = path.strip_prefix("/openapi/v3")?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    if !accepts_json(accept) {
        return Some(ApiError::not_acceptable(&[JSON]).into_response());
    }
    let docs = v3_documents();
    let key = rest.trim_start_matches('/');
    if key.is_empty() {
        return Some(match custom.v3_root() {
            Some(root) => document_response(&root),
            None => document_response(&docs.root),
        });
    }
    if let Some(doc) = docs.documents.get(key) {
        return Some(document_response(doc));
    }
    Some(match custom.v3_document(key) {
        Some(doc) => document_response(&doc),
        None => ApiError::path_not_found().into_response(),
    })
}

fn document_response(doc: &Encoded) -> Response<Body> {
    let mut resp = Response::new(full(doc.bytes.clone()));
    *resp.status_mut() = StatusCode::OK;
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", doc.hash)) {
        headers.insert(header::ETAG, etag);
    }
    resp
}

/// Whether an `Accept` header admits JSON: absent or empty, or listing `application/json`,
/// `application/*` or `*/*` with a non-zero quality.
pub fn accepts_json(accept: Option<&str>) -> bool {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return true;
    };
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        !refused && matches!(media.as_str(), JSON | "application/*" | "*/*")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert!(accepts_json(None));
        assert!(accepts_json(Some("application/json, */*")));
        assert!(accepts_json(Some(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json;q=0.9"
        )));
        assert!(!accepts_json(Some(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        )));
        assert!(!accepts_json(Some("application/json;q=0")));
    }

    #[test]
    fn non_openapi_paths_are_left_alone() {
        let custom = CustomDocuments::default();
        assert!(serve("/api/v1", None, &custom).is_none());
        assert!(serve("/openapi/v3x", None, &custom).is_none());
    }

    #[test]
    fn protobuf_only_v2_is_not_acceptable() {
        let resp = serve(
            "/openapi/v2",
            Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
            &CustomDocuments::default(),
        );
        assert_eq!(resp.map(|r| r.status()), Some(StatusCode::NOT_ACCEPTABLE));
    }
}
