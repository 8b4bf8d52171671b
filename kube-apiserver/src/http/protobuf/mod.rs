//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded into
//! the JSON value upstream's JSON encoding of the same object would be, so the rest of the
//! request path never knows the body was protobuf.
//!
//! The body is the magic `k8s\0` followed by a `runtime.Unknown` envelope (`typeMeta` = 1 with
//! `apiVersion` = 1 and `kind` = 2, `raw` = 2, `contentEncoding` = 3, `contentType` = 4) whose
//! `raw` is the object in upstream's `generated.proto` messages. Those messages are described
//! by [`schema_table`], generated from the `k8s-pb` and `k8s-openapi` crates by
//! `cargo test -p kube-apiserver --test protobuf_schema_gen -- --ignored regenerate`
//! (see `tests/protobuf_schema_gen.rs`); [`decode`] walks the wire format with it.
//!
//! Unknown fields are skipped (a newer client's), as upstream does; malformed input is a 400.

pub mod decode;
pub mod schema;
pub mod schema_table;
pub mod special;
pub mod wire;

use serde_json::Value;

use crate::http::status::ApiError;
use schema::KindMessage;
use schema_table::KINDS;
use wire::{Reader, WireValue};

/// The four bytes every Kubernetes protobuf object starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// Decodes a protobuf request body into the object's JSON, `apiVersion` and `kind` taken from
/// the envelope. Anything malformed, or a kind we do not serve, is a 400.
pub fn decode_protobuf(body: &[u8]) -> Result<Value, ApiError> {
    decode_object(body, 0).map_err(ApiError::bad_request)
}

/// The served kind `api_version`/`kind` and its message, if any.
pub fn kind_message(api_version: &str, kind: &str) -> Option<&'static KindMessage> {
    KINDS
        .binary_search_by(|k| (k.api_version, k.kind).cmp(&(api_version, kind)))
        .ok()
        .map(|i| &KINDS[i])
}

/// The envelope's fields.
#[derive(Default)]
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
}

fn wrong(what: &str, value: WireValue<'_>) -> String {
    format!(
        "runtime.Unknown: {what} has the wrong wire type {}",
        value.wire_name()
    )
}

fn text(value: WireValue<'_>, what: &str) -> Result<String, String> {
    match value {
        WireValue::Bytes(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        other => Err(wrong(what, other)),
    }
}

fn envelope(bytes: &[u8]) -> Result<Unknown<'_>, String> {
    let mut out = Unknown::default();
    let mut reader = Reader::new(bytes);
    while let Some((tag, value)) = reader
        .field()
        .map_err(|e| format!("runtime.Unknown: {e}"))?
    {
        match tag {
            1 => {
                let WireValue::Bytes(meta) = value else {
                    return Err(wrong("typeMeta", value));
                };
                let mut meta = Reader::new(meta);
                while let Some((tag, value)) =
                    meta.field().map_err(|e| format!("runtime.TypeMeta: {e}"))?
                {
                    match tag {
                        1 => out.api_version = text(value, "apiVersion")?,
                        2 => out.kind = text(value, "kind")?,
                        _ => {}
                    }
                }
            }
            2 => match value {
                WireValue::Bytes(raw) => out.raw = raw,
                other => return Err(wrong("raw", other)),
            },
            3 => out.content_encoding = text(value, "contentEncoding")?,
            // contentType (4) names raw's encoding; upstream ignores it for objects.
            _ => {}
        }
    }
    Ok(out)
}

/// Decodes `k8s\0` + envelope at nesting `depth` (a RawExtension may embed another object).
pub fn decode_object(body: &[u8], depth: usize) -> Result<Value, String> {
    let Some(rest) = body.strip_prefix(&MAGIC) else {
        return Err(format!(
            "provided data does not appear to be a protobuf message, expected prefix {:?}",
            MAGIC
        ));
    };
    let unknown = envelope(rest)?;
    if !unknown.content_encoding.is_empty() {
        return Err(format!(
            "unsupported content encoding {:?} in the protobuf envelope",
            unknown.content_encoding
        ));
    }
    if unknown.kind.is_empty() {
        return Err("Object 'Kind' is missing in the protobuf envelope".into());
    }
    // DeleteOptions is registered in every group-version upstream; its message is meta's.
    let entry = kind_message(&unknown.api_version, &unknown.kind).or_else(|| {
        (unknown.kind == "DeleteOptions")
            .then(|| kind_message("meta.k8s.io/v1", "DeleteOptions"))
            .flatten()
    });
    let Some(entry) = entry else {
        return Err(format!(
            "no kind {:?} is registered for version {:?}",
            unknown.kind, unknown.api_version
        ));
    };
    let mut object = match decode::message(unknown.raw, entry.message, depth)? {
        Value::Object(map) => map,
        _ => return Err(format!("{} is not an object", unknown.kind)),
    };
    object.insert("apiVersion".into(), Value::String(unknown.api_version));
    object.insert("kind".into(), Value::String(unknown.kind));
    Ok(Value::Object(object))
}
