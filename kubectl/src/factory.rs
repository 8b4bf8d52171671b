//! What every command starts from (upstream's `cmdutil.Factory`): the client built from the
//! global flags, the namespace in effect, raw JSON requests with upstream's error shapes, and
//! discovery with its disk cache.

use crate::app::options::GlobalOptions;
use crate::discovery::Discovery;
use crate::errors::{ApiError, ConnectionError};
use futures::{Stream, StreamExt};
use http::{Method, Request};
use serde_json::Value;
use std::path::PathBuf;

/// `application/json` as upstream's kubectl asks for server-side tables (v1, then plain JSON).
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// The client and settings of one invocation.
pub struct Factory {
    client: kube::Client,
    host: String,
    namespace: String,
    namespace_explicit: bool,
    cache_dir: PathBuf,
    log: crate::klog::RequestLog,
}

impl Factory {
    /// Builds the client from the kubeconfig chain and the global flags.
    pub async fn new(global: &GlobalOptions) -> anyhow::Result<Self> {
        let config = crate::app::config::client_config(global).await?;
        let url = config.kube.cluster_url.clone();
        let host = url
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let (namespace, namespace_explicit) = match &global.namespace {
            Some(ns) if !ns.is_empty() => (ns.clone(), true),
            _ => (config.kube.default_namespace.clone(), false),
        };
        let cache_dir = global
            .cache_dir
            .clone()
            .unwrap_or_else(default_cache_dir)
            .join("discovery")
            .join(cache_key(&url));
        let log = request_log(&config)?;
        crate::klog::feature_gates();
        Ok(Factory {
            client: config.build_client()?,
            host,
            namespace,
            namespace_explicit,
            cache_dir,
            log,
        })
    }

    /// The namespace in effect: `-n`, else the context's, else `default`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// True when `-n` was given (a manifest naming another namespace is then an error).
    pub fn namespace_explicit(&self) -> bool {
        self.namespace_explicit
    }

    /// Discovery through this client, cached on disk.
    pub fn discovery(&self) -> Discovery<'_> {
        Discovery::new(self, self.cache_dir.clone())
    }

    /// The client itself, for what the helpers here do not cover (connection upgrades).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// Sends `request` as it is (a stream, an upgrade), in the request log as every other.
    pub async fn send_raw(
        &self,
        request: Request<kube::client::Body>,
    ) -> Result<http::Response<kube::client::Body>, kube::Error> {
        let trace = self.log.start_parts(&request, &[]);
        let result = self.client.send(request).await;
        trace.response(result.as_ref().ok().map(|r| (r.status(), r.headers())));
        result
    }

    /// GET `path` as JSON. A named object not found in a namespace other than `default` that
    /// does not exist either is reported as the namespace's NotFound, as upstream's resource
    /// `Info.Get` does.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.get_as(path, None).await
    }

    /// PATCH `path` with a JSON merge patch; the server's object back.
    pub async fn merge_patch(&self, path: &str, patch: &Value) -> anyhow::Result<Value> {
        let body = serde_json::to_vec(patch)?;
        self.request(
            Method::PATCH,
            path,
            Some((body, "application/merge-patch+json")),
            None,
        )
        .await
    }

    /// GET `path` as JSON, a 404 as it comes (polls for an object's deletion).
    pub async fn get_plain(&self, path: &str) -> anyhow::Result<Value> {
        self.request(Method::GET, path, None, None).await
    }

    /// [`Factory::get`] with another `Accept` (a Table).
    pub async fn get_as(&self, path: &str, accept: Option<&str>) -> anyhow::Result<Value> {
        let result = self.request(Method::GET, path, None, accept).await;
        let not_found = |err: &anyhow::Error| {
            err.downcast_ref::<ApiError>()
                .is_some_and(|e| e.code == 404)
        };
        if let Err(err) = &result
            && not_found(err)
            && let Some(ns) = object_namespace(path).filter(|ns| *ns != "default")
            && let Err(ns_err) = self
                .request(Method::GET, &format!("/api/v1/namespaces/{ns}"), None, None)
                .await
            && not_found(&ns_err)
        {
            return Err(ns_err);
        }
        result
    }

    /// One request; `body` is `(bytes, content type)`, `accept` overrides `application/json`.
    /// Failures come back as [`ApiError`] or [`ConnectionError`].
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
        accept: Option<&str>,
    ) -> anyhow::Result<Value> {
        let text = self.request_text(method, path, body, accept).await?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .map_err(|err| anyhow::anyhow!("decoding the response of {path}: {err}"))
    }

    /// As [`Factory::request`], the body as text.
    pub async fn request_text(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
        accept: Option<&str>,
    ) -> anyhow::Result<String> {
        let request = build(method, path, body, accept)?;
        let response = self.send(request).await?;
        let bytes = collect(response.into_body())
            .await
            .map_err(|err| self.translate(err))?;
        crate::klog::response_body(&bytes);
        Ok(String::from_utf8(bytes.to_vec())?)
    }

    /// A watch (`path` must carry `watch=true`): each event's `(type, object)`.
    pub async fn watch(
        &self,
        path: &str,
        accept: Option<&str>,
    ) -> anyhow::Result<impl Stream<Item = anyhow::Result<(String, Value)>> + use<>> {
        let mut request = build(Method::GET, path, None, accept)?;
        // As kube's request_events: a gzipped watch stream is not decoded past its first
        // member, so watches ask for no compression.
        request.headers_mut().insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_static("identity"),
        );
        let response = self.send(request).await?;
        let host = self.host.clone();
        Ok(watch_events(response.into_body(), host))
    }

    /// Sends `request`, prints the response's `Warning` headers (errors carry them too) and
    /// turns an error status into [`ApiError`], as kube's `request_text` did.
    async fn send(
        &self,
        request: Request<Vec<u8>>,
    ) -> anyhow::Result<http::Response<kube::client::Body>> {
        let trace = self.log.start(&request);
        let response = self
            .client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(|err| {
                trace.response(None);
                self.translate(err)
            })?;
        trace.response(Some((response.status(), response.headers())));
        crate::warnings::handle(response.headers());
        let status = response.status();
        if !status.is_client_error() && !status.is_server_error() {
            return Ok(response);
        }
        let bytes = collect(response.into_body())
            .await
            .map_err(|err| self.translate(err))?;
        crate::klog::response_body(&bytes);
        let code = status.as_u16();
        // A Status keeps its details (what upstream prints for an Invalid error).
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes)
            && value.get("kind").and_then(Value::as_str) == Some("Status")
        {
            return Err(ApiError::from_status(code, &value).into());
        }
        let text = String::from_utf8_lossy(&bytes);
        let status = match serde_json::from_str::<kube::core::Status>(&text) {
            Ok(status) => status,
            // A proxy or a bare unknown path answers in plain text.
            Err(_) => kube::core::Status::failure(text.trim(), "Failed to parse error data")
                .with_code(code),
        };
        Err(self.translate(kube::Error::Api(status.boxed())))
    }

    fn translate(&self, err: kube::Error) -> anyhow::Error {
        translate(&self.host, err)
    }
}

/// The server's URL and the headers the client adds below kubectl, for the request log.
fn request_log(
    config: &client_go_rs::config::ClientConfig,
) -> anyhow::Result<crate::klog::RequestLog> {
    let kube = config.to_kube_config()?;
    let mut client_headers: Vec<(String, String)> = kube
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes());
            (
                name.as_str().to_owned(),
                crate::klog::mask(name.as_str(), &value),
            )
        })
        .collect();
    let auth = &kube.auth_info;
    if auth.token.is_some() || auth.token_file.is_some() || auth.exec.is_some() {
        client_headers.push(("Authorization".into(), "Bearer <masked>".into()));
    } else if auth.username.is_some() || auth.password.is_some() {
        client_headers.push(("Authorization".into(), "Basic <masked>".into()));
    }
    if let Some(user) = &auth.impersonate {
        client_headers.push(("Impersonate-User".into(), user.clone()));
    }
    for group in auth.impersonate_groups.iter().flatten() {
        client_headers.push(("Impersonate-Group".into(), group.clone()));
    }
    Ok(crate::klog::RequestLog {
        base_url: kube.cluster_url.to_string(),
        client_headers,
    })
}

async fn collect(body: kube::client::Body) -> Result<bytes::Bytes, kube::Error> {
    body.collect_bytes().await
}

/// A watch body's lines as `(type, object)`, framed and ended as kube's `request_events`
/// frames them: a timeout or a truncated chunk ends the stream quietly (the caller resumes),
/// a line that is a `Status` is that error.
fn watch_events(
    body: kube::client::Body,
    host: String,
) -> impl Stream<Item = anyhow::Result<(String, Value)>> + use<> {
    use futures::TryStreamExt as _;
    use http_body_util::BodyExt as _;
    use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
    let data = body.into_data_stream().map_err(|err| {
        let chunk_eof = err.to_string().contains("unexpected EOF during chunk");
        if chunk_eof || chain_has_eof(&err) {
            return std::io::Error::new(std::io::ErrorKind::UnexpectedEof, err);
        }
        std::io::Error::other(err)
    });
    let lines = FramedRead::new(tokio_util::io::StreamReader::new(data), LinesCodec::new());
    StreamExt::filter_map(lines, move |line| {
        let host = host.clone();
        async move {
            let line = match line {
                Ok(line) => line,
                Err(LinesCodecError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::UnexpectedEof
                    ) =>
                {
                    return None;
                }
                Err(LinesCodecError::Io(e)) => {
                    return Some(Err(translate(&host, kube::Error::ReadEvents(e))));
                }
                Err(err) => return Some(Err(anyhow::anyhow!("reading the watch: {err}"))),
            };
            match serde_json::from_str::<Value>(&line) {
                Ok(event) => Some(parse_event(event)),
                // A line cut short by the stream's end (the codec's last partial line).
                Err(err) if err.is_eof() => None,
                Err(err) => Some(Err(anyhow::anyhow!("decoding a watch event: {err}"))),
            }
        }
    })
}

fn chain_has_eof(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::UnexpectedEof
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// One watch line: `{"type": ..., "object": ...}`; `ERROR` (or a bare `Status`) is an error.
fn parse_event(mut event: Value) -> anyhow::Result<(String, Value)> {
    let kind = event.get("type").and_then(Value::as_str).map(str::to_owned);
    let object = event.get_mut("object").map(Value::take);
    match (kind.as_deref(), object) {
        (Some("ERROR"), Some(status)) => Err(status_error(&status)),
        (Some("BOOKMARK"), Some(_)) => Ok(("BOOKMARK".to_owned(), Value::Null)),
        (Some(kind @ ("ADDED" | "MODIFIED" | "DELETED")), Some(object)) => {
            Ok((kind.to_owned(), object))
        }
        _ if event.get("kind").and_then(Value::as_str) == Some("Status") => {
            Err(status_error(&event))
        }
        _ => Err(anyhow::anyhow!("decoding a watch event: unknown shape")),
    }
}

fn status_error(status: &Value) -> anyhow::Error {
    ApiError::from_status(0, status).into()
}

fn build(
    method: Method,
    path: &str,
    body: Option<(Vec<u8>, &str)>,
    accept: Option<&str>,
) -> anyhow::Result<Request<Vec<u8>>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, accept.unwrap_or("application/json"));
    let bytes = match body {
        Some((bytes, content_type)) => {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
            bytes
        }
        None => Vec::new(),
    };
    Ok(builder.body(bytes)?)
}

/// kube's error as upstream's kubectl words it.
fn translate(host: &str, err: kube::Error) -> anyhow::Error {
    match err {
        kube::Error::Api(status) => ApiError {
            code: status.code,
            reason: status.reason,
            message: status.message,
            invalid: None,
        }
        .into(),
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            let detail = format!("{:#}", anyhow::Error::from(err));
            ConnectionError {
                host: host.to_owned(),
                refused: detail.to_ascii_lowercase().contains("connection refused"),
                detail,
            }
            .into()
        }
        other => anyhow::Error::from(other),
    }
}

/// `~/.kube/cache`, upstream's default `--cache-dir`.
fn default_cache_dir() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".kube").join("cache")
}

/// The cache directory name of a server, as upstream's `computeDiscoverCacheDir`: the host and
/// port with every character outside `[A-Za-z0-9.]` turned into `_`.
pub fn cache_key(url: &http::Uri) -> String {
    let host = url.authority().map(|a| a.as_str()).unwrap_or("");
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The namespace of a namespaced object's path (`/api/v1/namespaces/NS/pods/NAME[/sub]`,
/// `/apis/G/V/namespaces/NS/R/NAME[/sub]`); `None` for collections and anything else.
fn object_namespace(path: &str) -> Option<&str> {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let at = match segments.first() {
        Some(&"api") => 2,
        Some(&"apis") => 3,
        _ => return None,
    };
    (segments.get(at) == Some(&"namespaces") && segments.len() > at + 3).then(|| segments[at + 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keys() {
        for (url, want) in [
            ("https://127.0.0.1:6443", "127.0.0.1_6443"),
            ("https://example.com", "example.com"),
            ("http://[::1]:8080/prefix", "___1__8080"),
        ] {
            assert_eq!(cache_key(&url.parse().unwrap()), want, "{url}");
        }
    }

    #[test]
    fn object_namespaces() {
        for (path, want) in [
            ("/api/v1/namespaces/a/pods/x", Some("a")),
            ("/api/v1/namespaces/a/pods/x/log?container=c", Some("a")),
            (
                "/apis/apps/v1/namespaces/b/deployments/web/scale",
                Some("b"),
            ),
            ("/api/v1/namespaces/a/pods", None),
            ("/api/v1/namespaces/a", None),
            ("/api/v1/nodes/n", None),
            ("/version", None),
        ] {
            assert_eq!(object_namespace(path), want, "{path}");
        }
    }
}
