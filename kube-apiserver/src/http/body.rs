//! Reading request bodies with upstream's size limit and decoding them (JSON, YAML or Kubernetes
//! protobuf) into JSON values with a bounded nesting depth.

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Body as HttpBody;

use crate::http::negotiation::InputFormat;
use crate::http::status::ApiError;

/// Upstream's `MaxRequestBodyBytes`: 3 MiB.
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How deep a decoded body may nest: serde_json's own recursion limit, applied to YAML too so
/// a hostile body is a 400, never a stack overflow.
pub const MAX_NESTING_DEPTH: usize = 128;

/// Reads the whole body, failing with 413 once it exceeds `limit` bytes.
pub async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, ApiError>
where
    B: HttpBody,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(ApiError::request_entity_too_large(&format!(
            "limit is {limit}"
        ))),
        Err(e) => Err(ApiError::internal(format!(
            "error reading the request body: {e}"
        ))),
    }
}

/// Decodes a body into a JSON value; malformed input is a 400 with the parser's message.
pub fn decode(bytes: &[u8], format: InputFormat) -> Result<serde_json::Value, ApiError> {
    match format {
        InputFormat::Json => decode_json(bytes),
        InputFormat::Yaml => decode_yaml(bytes),
        InputFormat::Protobuf => crate::http::protobuf::decode_protobuf(bytes),
    }
}

/// Decodes JSON (serde_json stops at 128 levels of nesting with an error).
pub fn decode_json(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

/// Decodes YAML as upstream's YAML-to-JSON conversion does: map keys become strings, tags are
/// dropped, the last of duplicate keys wins, and values JSON cannot hold (`.nan`, `.inf`) are
/// errors.
pub fn decode_yaml(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    decode_yaml_located(bytes, false).map(|(value, _)| value)
}

/// [`decode_yaml`], with go-yaml's message for each duplicate key when `locate` is set
/// (`line 5: key "name" already set in map`).
pub fn decode_yaml_located(
    bytes: &[u8],
    locate: bool,
) -> Result<(serde_json::Value, Vec<String>), ApiError> {
    // serde_yaml bounds recursion itself (128 levels) and expands aliases with a repetition
    // limit, so this cannot overflow the stack or blow up on "billion laughs" input.
    crate::http::duplicate_fields::decode_yaml(bytes, locate)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: yaml: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;
    use serde_json::json;

    #[tokio::test]
    async fn body_limit_is_413() {
        let ok = read_body(Full::new(Bytes::from(vec![b'x'; 10])), 10).await;
        assert_eq!(ok.expect("within limit").len(), 10);
        let err = read_body(Full::new(Bytes::from(vec![b'x'; 11])), 10)
            .await
            .expect_err("over limit");
        assert_eq!(err.code().as_u16(), 413);
        assert_eq!(err.message(), "Request entity too large: limit is 10");
        let big = Full::new(Bytes::from(vec![b' '; MAX_REQUEST_BODY_BYTES + 1]));
        let err = read_body(big, MAX_REQUEST_BODY_BYTES)
            .await
            .expect_err("3 MiB + 1");
        assert_eq!(err.message(), "Request entity too large: limit is 3145728");
    }

    #[test]
    fn decodes_json_and_yaml_alike() {
        let json_body =
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#;
        let yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
        let want = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
        assert_eq!(decode(json_body, InputFormat::Json).expect("json"), want);
        assert_eq!(decode(yaml_body, InputFormat::Yaml).expect("yaml"), want);
        // YAML is a superset of JSON: apply bodies may be either.
        assert_eq!(
            decode(json_body, InputFormat::Yaml).expect("json as yaml"),
            want
        );
    }

    #[test]
    fn yaml_conversion_rules() {
        let v =
            decode_yaml(b"1: one\ntrue: yes\nn: 1.5\nbig: 18446744073709551615\nt: !custom x\n")
                .expect("yaml");
        assert_eq!(
            v,
            json!({"1": "one", "true": "yes", "n": 1.5, "big": 18446744073709551615u64, "t": "x"})
        );
        let err = decode_yaml(b"x: .nan\n").expect_err("nan");
        assert_eq!(err.code().as_u16(), 400);
        let err = decode_yaml(b"? [a]\n: b\n").expect_err("sequence key");
        assert!(
            err.message().contains("mapping keys must be scalars"),
            "{err}"
        );
    }

    #[test]
    fn malformed_bodies_are_400() {
        let err = decode_json(b"{\"a\":").expect_err("truncated");
        assert_eq!(err.code().as_u16(), 400);
        assert_eq!(err.reason(), "BadRequest");
        assert!(
            err.message()
                .starts_with("couldn't get version/kind; json parse error: "),
            "{err}"
        );
        let err = decode_yaml(b"a: b: c\n").expect_err("bad yaml");
        assert_eq!(err.code().as_u16(), 400);
        assert!(
            err.message()
                .starts_with("error converting YAML to JSON: yaml: "),
            "{err}"
        );
    }

    #[test]
    fn deep_nesting_is_400_not_a_stack_overflow() {
        let depth = 100_000;
        let json_body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let err = decode_json(json_body.as_bytes()).expect_err("deep json");
        assert_eq!(err.code().as_u16(), 400);
        let err = decode_yaml(json_body.as_bytes()).expect_err("deep flow yaml");
        assert_eq!(err.code().as_u16(), 400, "{err}");
        let mut block = String::new();
        for i in 0..2_000 {
            block.push_str(&" ".repeat(i));
            block.push_str("a:\n");
        }
        let err = decode_yaml(block.as_bytes()).expect_err("deep block yaml");
        assert_eq!(err.code().as_u16(), 400, "{err}");
        // 100 levels are fine in both.
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        decode_json(ok.as_bytes()).expect("100 levels json");
        decode_yaml(ok.as_bytes()).expect("100 levels yaml");
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            let items = [prev.as_str(); 10].join(", ");
            doc.push_str(&format!("a{i}: &a{i} [{items}]\n"));
        }
        let err = decode_yaml(doc.as_bytes()).expect_err("billion laughs");
        assert_eq!(err.code().as_u16(), 400, "{err}");
    }
}
