//! The response body type every layer and handler of the request path returns, and small
//! builders for JSON responses.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};

/// The error type of response bodies (a streaming watch may fail mid-way).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of every response of the request path: a full buffer for ordinary responses, a
/// stream for watches and logs.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A body holding `bytes`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An empty body.
pub fn empty() -> Body {
    full(Bytes::new())
}

/// The media type of JSON responses.
pub const APPLICATION_JSON: &str = "application/json";

/// A JSON response with `status` and the already-encoded `body`.
pub fn json_bytes(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(APPLICATION_JSON),
    );
    resp
}

/// A JSON response encoding `value`; a value that cannot be encoded becomes a 500 Status.
pub fn json<T: serde::Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(status, bytes),
        Err(e) => crate::http::status::ApiError::internal(format!("encoding response: {e}"))
            .into_response(),
    }
}

/// The bytes of `value` in the negotiated encoding (JSON, indented when `pretty`, or YAML).
pub fn encode_bytes(
    value: &serde_json::Value,
    media: &crate::http::negotiation::MediaType,
) -> Result<Vec<u8>, crate::http::status::ApiError> {
    use crate::http::negotiation::Encoding;
    let encoded = match media.encoding {
        Encoding::Json if media.pretty => {
            serde_json::to_vec_pretty(value).map_err(|e| e.to_string())
        }
        Encoding::Json => serde_json::to_vec(value).map_err(|e| e.to_string()),
        Encoding::Yaml => serde_yaml::to_string(value)
            .map(String::into_bytes)
            .map_err(|e| e.to_string()),
    };
    encoded
        .map_err(|e| crate::http::status::ApiError::internal(format!("encoding the response: {e}")))
}

/// A response of already encoded `bytes` with the negotiated `Content-Type`.
pub fn encoded(
    status: StatusCode,
    bytes: Vec<u8>,
    media: &crate::http::negotiation::MediaType,
) -> Response<Body> {
    let mut resp = json_bytes(status, bytes);
    if let Ok(ct) = HeaderValue::from_str(&media.content_type()) {
        resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    resp
}

/// A response encoding `value` as negotiated, with the negotiated `Content-Type`; a value
/// that cannot be encoded becomes a 500 Status.
pub fn encode(
    status: StatusCode,
    value: &serde_json::Value,
    media: &crate::http::negotiation::MediaType,
) -> Response<Body> {
    match encode_bytes(value, media) {
        Ok(bytes) => encoded(status, bytes, media),
        Err(err) => err.into_response(),
    }
}
