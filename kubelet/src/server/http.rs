//! Response bodies and small response builders shared by the handlers.

use bytes::Bytes;
use futures::Stream;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Every response of the kubelet server: whole or streamed (logs with `follow`).
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// A body fed by a stream of chunks; an `Err` item ends the response abruptly.
pub fn streaming<S>(stream: S) -> Body
where
    S: Stream<Item = Result<Bytes, BoxError>> + Send + 'static,
{
    use futures::StreamExt;
    StreamBody::new(stream.map(|chunk| chunk.map(Frame::data))).boxed_unsync()
}

pub fn with_type(status: StatusCode, content_type: &'static str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Go's `http.Error`: the message and a newline, as plain text.
pub fn error(status: StatusCode, message: impl std::fmt::Display) -> Response<Body> {
    with_type(
        status,
        "text/plain; charset=utf-8",
        full(format!("{message}\n")),
    )
}

pub fn not_found() -> Response<Body> {
    error(StatusCode::NOT_FOUND, "404 page not found")
}

pub fn json<T: serde::Serialize>(value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(body) => with_type(StatusCode::OK, "application/json", full(body)),
        Err(err) => error(StatusCode::INTERNAL_SERVER_ERROR, err),
    }
}

/// The query's pairs, percent-decoded (`+` is a space, as Go's `url.ParseQuery`).
pub fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    let Some(query) = query else {
        return Vec::new();
    };
    query
        .split(['&', ';'])
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decoding; malformed escapes are kept as they are.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_as_go_does() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("", &[]),
            ("a=1&b", &[("a", "1"), ("b", "")]),
            (
                "command=sh&command=-c&command=echo+hi%21",
                &[
                    ("command", "sh"),
                    ("command", "-c"),
                    ("command", "echo hi!"),
                ],
            ),
            ("x=%zz&y=%4", &[("x", "%zz"), ("y", "%4")]),
        ];
        for (query, want) in cases {
            let got = query_pairs(Some(query));
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "{query}");
        }
    }
}
