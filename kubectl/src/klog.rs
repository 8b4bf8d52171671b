//! klog's text lines on stderr, as upstream's kubectl writes them at `-v=N`: the header
//! (`Lmmdd hh:mm:ss.uuuuuu pid file:line] `), structured `"msg" key=value` pairs quoted as
//! klog quotes them, and client-go's request logging (`round_trippers.go`) that `-v=6..9` turns
//! on. Users and scripts grep these lines, so they keep upstream's file:line tags and wording.

use crate::printers::go_template::quote;
use http::{HeaderMap, Request, StatusCode};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

/// Whether `-v` is at least `level` (klog's `V(level).Enabled()`).
pub fn enabled(level: u32) -> bool {
    component_base::logs::verbosity() >= level
}

/// One line being built: the message, then its key/value pairs.
pub struct Line(String);

impl Line {
    /// A structured message (quoted, as klog's `InfoS`).
    pub fn structured(msg: &str) -> Self {
        Line(quote(msg))
    }

    /// A printf-style message, written as it is (as klog's `Infof`).
    pub fn plain(msg: &str) -> Self {
        Line(msg.to_owned())
    }

    /// `key="value"`, or klog's `key=<` block when the value spans lines.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        let _ = write!(self.0, " {key}=");
        write_string_value(&mut self.0, value);
        self
    }

    /// `key=value` for numbers and booleans.
    pub fn raw(mut self, key: &str, value: impl std::fmt::Display) -> Self {
        let _ = write!(self.0, " {key}={value}");
        self
    }

    /// Writes the line to stderr with an info header tagged `file_line`.
    pub fn emit(self, file_line: &str) {
        let mut text = header('I', file_line);
        text.push_str(&self.0);
        text.push('\n');
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// klog's header: severity, local `mmdd hh:mm:ss.uuuuuu`, the process id right-aligned in 7
/// columns (klog's "threadid" is the pid), and the caller's `file:line`.
fn header(severity: char, file_line: &str) -> String {
    let now = jiff::Zoned::now();
    format!(
        "{severity}{:02}{:02} {:02}:{:02}:{:02}.{:06} {:>7} {file_line}] ",
        now.month(),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.subsec_nanosecond() / 1000,
        std::process::id()
    )
}

/// klog's `writeStringValue`: Go's `strconv.Quote` for one line; a multi-line value goes in
/// `<` ... ` >` with each line indented by a tab.
fn write_string_value(out: &mut String, value: &str) {
    if !value.contains('\n') {
        out.push_str(&quote(value));
        return;
    }
    out.push_str("<\n");
    let mut rest = value;
    while let Some(end) = rest.find('\n') {
        out.push('\t');
        out.push_str(&rest[..=end]);
        rest = &rest[end + 1..];
    }
    if rest.is_empty() {
        out.push_str(" >");
    } else {
        out.push('\t');
        out.push_str(rest);
        out.push_str("\n >");
    }
}

/// client-go's feature gates as its `envvar.go` reports them at `-v=1` when the first client is
/// made (upstream ranges over a map, so its order varies; ours is sorted).
pub fn feature_gates() {
    if !enabled(1) {
        return;
    }
    for (feature, on) in [
        ("ClientsAllowCBOR", false),
        ("ClientsPreferCBOR", false),
        ("InOrderInformers", true),
        ("InformerResourceVersion", false),
        ("WatchListClient", false),
    ] {
        Line::structured("Feature gate default state")
            .str("feature", feature)
            .raw("enabled", on)
            .emit("envvar.go:172");
    }
}

/// clientcmd's `loader.go` line for each kubeconfig file read.
pub fn config_loaded(path: &std::path::Path) {
    if enabled(6) {
        Line::plain(&format!("Config loaded from file:  {}", path.display())).emit("loader.go:402");
    }
}

/// What the request log needs to know of the client: the server's URL and the headers the
/// client's own layers add (user agent, credentials, impersonation), which a request does not
/// carry yet where kubectl sees it.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    pub base_url: String,
    pub client_headers: Vec<(String, String)>,
}

/// One request in flight.
pub struct Trace {
    verb: String,
    url: String,
    start: Instant,
}

impl RequestLog {
    /// Logs `request` as client-go's debugging round tripper does before sending it
    /// (`-v=7`: verb, URL and headers; `-v=8`: the body too; `-v=9`: a curl command line).
    pub fn start(&self, request: &Request<Vec<u8>>) -> Trace {
        self.start_parts(request, request.body())
    }

    /// [`RequestLog::start`] for a request of any body type (streams, upgrades), `body` the
    /// part of it to log.
    pub fn start_parts<B>(&self, request: &Request<B>, body: &[u8]) -> Trace {
        let trace = Trace {
            verb: request.method().as_str().to_owned(),
            url: format!("{}{}", self.base_url.trim_end_matches('/'), request.uri()),
            start: Instant::now(),
        };
        if enabled(8) {
            Line::structured("Request Body")
                .str("body", &truncate(body))
                .emit("helper.go:105");
        }
        if enabled(7) {
            let headers = self.request_headers(request.headers());
            if enabled(9) {
                let mut curl = format!("curl -v -X{} ", trace.verb);
                for (name, value) in &headers {
                    let _ = write!(curl, " -H {}", quote(&format!("{name}: {value}")));
                }
                let _ = writeln!(curl, " '{}'", trace.url);
                Line::structured("Request")
                    .str("curlCommand", &curl)
                    .emit("round_trippers.go:527");
            } else {
                Line::structured("Request")
                    .str("verb", &trace.verb)
                    .str("url", &trace.url)
                    .str("headers", &header_block(&headers))
                    .emit("round_trippers.go:527");
            }
        }
        trace
    }

    /// The request's headers and the client's, sorted and in Go's canonical form, the
    /// credentials masked as upstream's `maskValue`.
    fn request_headers(&self, own: &HeaderMap) -> Vec<(String, String)> {
        let mut headers: Vec<(String, String)> = own
            .iter()
            // Go's transport adds and strips compression itself, below the log.
            .filter(|(name, _)| *name != http::header::ACCEPT_ENCODING)
            .map(|(name, value)| {
                (
                    canonical(name.as_str()),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        headers.extend(
            self.client_headers
                .iter()
                .map(|(name, value)| (canonical(name), value.clone())),
        );
        headers.sort_by(|a, b| a.0.cmp(&b.0));
        headers
    }
}

impl Trace {
    /// Logs the response's status line (`-v=6`: with verb, URL and milliseconds; `-v=8`: its
    /// headers). `None` is a request that got no response.
    pub fn response(&self, response: Option<(StatusCode, &HeaderMap)>) {
        if !enabled(6) {
            return;
        }
        let millis = self.start.elapsed().as_millis();
        let status = response
            .map(|(code, _)| {
                format!(
                    "{} {}",
                    code.as_str(),
                    code.canonical_reason().unwrap_or("")
                )
                .trim_end()
                .to_owned()
            })
            .unwrap_or_default();
        let mut line = Line::structured("Response");
        if !enabled(7) || enabled(9) {
            line = line.str("verb", &self.verb).str("url", &self.url);
        }
        line = line.str("status", &status);
        if enabled(8)
            && let Some((_, headers)) = response
        {
            let mut pairs: Vec<(String, String)> = headers
                .iter()
                // Go's transport takes Transfer-Encoding out of the header map.
                .filter(|(name, _)| *name != http::header::TRANSFER_ENCODING)
                .map(|(name, value)| {
                    (
                        canonical(name.as_str()),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            line = line.str("headers", &header_block(&pairs));
        }
        line.raw("milliseconds", millis)
            .emit("round_trippers.go:632");
    }
}

/// The body of a response at `-v=8`, after its status line.
pub fn response_body(body: &[u8]) {
    if enabled(8) {
        Line::structured("Response Body")
            .str("body", &truncate(body))
            .emit("helper.go:105");
    }
}

/// client-go's `truncateBody`: 1024 bytes at `-v=8`, 10240 at `-v=9`, all from `-v=10`.
fn truncate(body: &[u8]) -> String {
    let max = if enabled(10) {
        usize::MAX
    } else if enabled(9) {
        10240
    } else {
        1024
    };
    if body.len() <= max {
        return String::from_utf8_lossy(body).into_owned();
    }
    format!(
        "{} [truncated {} chars]",
        String::from_utf8_lossy(&body[..max]),
        body.len() - max
    )
}

/// `Name: value` lines, each ending in a newline, as round_trippers prints headers.
fn header_block(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\n"))
        .collect()
}

/// Go's `http.CanonicalHeaderKey`: `audit-id` -> `Audit-Id`.
fn canonical(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

/// upstream's `maskValue`: the scheme of a credential stays, the secret does not.
pub fn mask(name: &str, value: &str) -> String {
    if !name.eq_ignore_ascii_case("authorization") {
        return value.to_owned();
    }
    match value.split_once(' ') {
        Some((scheme, _)) => format!("{scheme} <masked>"),
        None => "<masked>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_values() {
        let mut one = String::new();
        write_string_value(&mut one, "a \"b\"\t\u{1}é");
        assert_eq!(one, r#""a \"b\"\t\x01é""#);
        let mut multi = String::new();
        write_string_value(&mut multi, "Accept: x\nUser-Agent: y\n");
        assert_eq!(multi, "<\n\tAccept: x\n\tUser-Agent: y\n >");
        let mut open = String::new();
        write_string_value(&mut open, "a\nb");
        assert_eq!(open, "<\n\ta\n\tb\n >");
    }

    #[test]
    fn header_names_and_masks() {
        assert_eq!(canonical("audit-id"), "Audit-Id");
        assert_eq!(
            canonical("x-kubernetes-pf-flowschema-uid"),
            "X-Kubernetes-Pf-Flowschema-Uid"
        );
        assert_eq!(mask("Authorization", "Bearer abc"), "Bearer <masked>");
        assert_eq!(mask("User-Agent", "kubectl"), "kubectl");
    }

    #[test]
    fn header_shape() {
        let h = header('I', "round_trippers.go:632");
        let pid = format!("{:>7} ", std::process::id());
        assert!(h.starts_with('I'), "{h}");
        assert_eq!(
            h.len(),
            "I1122 14:53:15.123456 ".len() + pid.len() + 23,
            "{h}"
        );
        assert!(h.ends_with(&format!("{pid}round_trippers.go:632] ")), "{h}");
    }
}
