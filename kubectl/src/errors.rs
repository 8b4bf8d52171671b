//! kubectl's error shapes: what upstream's `cmdutil.CheckErr` prints for an API `Status`, an
//! unreachable server, or a plain client-side failure. Every one ends the command with exit 1.

use serde_json::Value;
use std::fmt;

/// A failed API call, kept as the server's `Status` so the message can be shaped as upstream's.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, ...); empty when the server gave none.
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details` of an Invalid error, which upstream prints instead of the message.
    pub invalid: Option<InvalidDetails>,
}

/// The kind, name and causes (`field: message`) of an Invalid status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvalidDetails {
    pub kind: String,
    pub name: String,
    pub causes: Vec<String>,
}

impl ApiError {
    /// Builds the error from a response body: a `Status` when the server sent one, otherwise
    /// upstream's generic wording for the code.
    pub fn from_response(code: u16, body: &[u8]) -> Self {
        let status: Option<Value> = serde_json::from_slice(body).ok();
        match status.filter(|s| s.get("kind").and_then(Value::as_str) == Some("Status")) {
            Some(status) => ApiError::from_status(code, &status),
            None => {
                let (reason, message) = generic(code, body);
                ApiError {
                    code,
                    reason: reason.to_owned(),
                    message,
                    invalid: None,
                }
            }
        }
    }

    /// The error a `Status` object describes (`code` when it carries none).
    pub fn from_status(code: u16, status: &Value) -> Self {
        let reason = str_field(status, "reason");
        let details = status.get("details");
        let invalid = details.filter(|_| reason == "Invalid").map(|d| {
            let mut causes: Vec<String> = Vec::new();
            for cause in d
                .get("causes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let line = format!(
                    "{}: {}",
                    str_field(cause, "field"),
                    str_field(cause, "message")
                );
                // Upstream drops repeated causes.
                if !causes.contains(&line) {
                    causes.push(line);
                }
            }
            InvalidDetails {
                kind: str_field(d, "kind"),
                name: str_field(d, "name"),
                causes,
            }
        });
        ApiError {
            code: status
                .get("code")
                .and_then(Value::as_u64)
                .map_or(code, |c| c as u16),
            reason,
            message: str_field(status, "message"),
            invalid,
        }
    }

    /// True for `404 NotFound`.
    pub fn is_not_found(&self) -> bool {
        self.code == 404 && (self.reason.is_empty() || self.reason == "NotFound")
    }

    /// True for `409 AlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        self.reason == "AlreadyExists"
    }

    /// True for `409 Conflict`.
    pub fn is_conflict(&self) -> bool {
        self.code == 409 && self.reason == "Conflict"
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The reason and message client-go invents for a non-Status error body.
fn generic(code: u16, body: &[u8]) -> (&'static str, String) {
    let text = String::from_utf8_lossy(body).trim().to_owned();
    let (reason, default) = match code {
        400 => (
            "BadRequest",
            "the server rejected our request for an unknown reason",
        ),
        401 => (
            "Unauthorized",
            "the server has asked for the client to provide credentials",
        ),
        403 => (
            "Forbidden",
            "the server does not allow access to the requested resource",
        ),
        404 => (
            "NotFound",
            "the server could not find the requested resource",
        ),
        405 => (
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ),
        409 => ("Conflict", "the server reported a conflict"),
        422 => (
            "Invalid",
            "the server rejected our request due to an error in our request",
        ),
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        500 => (
            "InternalError",
            "an error on the server has prevented the request from succeeding",
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        ),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        _ => (
            "",
            "an error on the server has prevented the request from succeeding",
        ),
    };
    let message = if text.is_empty() || code == 404 {
        default.to_owned()
    } else {
        format!("{default} ({text})")
    };
    (reason, message)
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Upstream's CheckErr words an Invalid status from its details, not its message.
        if self.reason == "Invalid" {
            let Some(details) = &self.invalid else {
                return write!(f, "The request is invalid");
            };
            let subject = if details.kind.is_empty() && details.name.is_empty() {
                "The request is invalid".to_owned()
            } else {
                format!("The {} \"{}\" is invalid", details.kind, details.name)
            };
            return match details.causes.as_slice() {
                [] => write!(f, "{subject}"),
                [one] => write!(f, "{subject}: {one}"),
                many => write!(f, "{subject}: \n* {}", many.join("\n* ")),
            };
        }
        match self.reason.as_str() {
            "Unauthorized" => write!(
                f,
                "error: You must be logged in to the server ({})",
                self.message
            ),
            "" => write!(f, "Error from server: {}", self.message),
            reason => write!(f, "Error from server ({reason}): {}", self.message),
        }
    }
}

impl std::error::Error for ApiError {}

/// The server could not be reached at all.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionError {
    /// `host:port` of the server.
    pub host: String,
    /// True when the connection was refused (upstream words that case specially).
    pub refused: bool,
    /// The underlying failure, for the other cases.
    pub detail: String,
}

impl fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.refused {
            write!(
                f,
                "The connection to the server {} was refused - did you specify the right host or port?",
                self.host
            )
        } else {
            write!(f, "Unable to connect to the server: {}", self.detail)
        }
    }
}

impl std::error::Error for ConnectionError {}

/// Several failures of one command (e.g. some names of `get a b c` not found), printed one
/// per line after the output, as upstream's aggregate errors.
#[derive(Debug)]
pub struct Reported(pub Vec<anyhow::Error>);

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(render).collect();
        f.write_str(&lines.join("\n"))
    }
}

impl std::error::Error for Reported {}

/// The line(s) upstream prints for `err`: server and connection errors as they are, anything
/// else behind `error: `.
pub fn render(err: &anyhow::Error) -> String {
    if let Some(api) = err.downcast_ref::<ApiError>() {
        return api.to_string();
    }
    if let Some(conn) = err.downcast_ref::<ConnectionError>() {
        return conn.to_string();
    }
    if let Some(all) = err.downcast_ref::<Reported>() {
        return all.to_string();
    }
    let text = format!("{err:#}");
    if text.starts_with("error: ") || text.starts_with("Error from server") {
        text
    } else {
        format!("error: {text}")
    }
}

/// A client-side failure worded exactly as given (no `error: ` prefix added twice).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::anyhow!("{}", message.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_upstream() {
        let body = br#"{"kind":"Status","status":"Failure","message":"pods \"x\" not found","reason":"NotFound","code":404}"#;
        let cases: Vec<(anyhow::Error, &str)> = vec![
            (
                ApiError::from_response(404, body).into(),
                "Error from server (NotFound): pods \"x\" not found",
            ),
            (
                ApiError::from_response(401, b"{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"message\":\"Unauthorized\"}").into(),
                "error: You must be logged in to the server (Unauthorized)",
            ),
            (
                ApiError::from_response(500, b"boom").into(),
                "Error from server (InternalError): an error on the server has prevented the request from succeeding (boom)",
            ),
            (
                ConnectionError { host: "127.0.0.1:1".into(), refused: true, detail: String::new() }.into(),
                "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?",
            ),
            (anyhow::anyhow!("no objects passed to create"), "error: no objects passed to create"),
            (
                ApiError::from_response(422, br#"{"kind":"Status","reason":"Invalid","code":422,"message":"m","details":{"kind":"ConfigMap","name":"c","causes":[{"field":"a","message":"bad"},{"field":"a","message":"bad"}]}}"#).into(),
                "The ConfigMap \"c\" is invalid: a: bad",
            ),
            (
                ApiError::from_response(422, br#"{"kind":"Status","reason":"Invalid","code":422,"message":"m","details":{"kind":"Pod","name":"p","causes":[{"field":"a","message":"x"},{"field":"b","message":"y"}]}}"#).into(),
                "The Pod \"p\" is invalid: \n* a: x\n* b: y",
            ),
            (
                ApiError::from_response(422, br#"{"kind":"Status","reason":"Invalid","code":422,"message":"m"}"#).into(),
                "The request is invalid",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(render(&err), want);
        }
    }
}
