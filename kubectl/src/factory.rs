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
        Ok(Factory {
            client: config.build_client()?,
            host,
            namespace,
            namespace_explicit,
            cache_dir,
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

    /// GET `path` as JSON.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.request(Method::GET, path, None, None).await
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
        self.client
            .request_text(request)
            .await
            .map_err(|err| self.translate(err))
    }

    /// A watch (`path` must carry `watch=true`): each event's `(type, object)`.
    pub async fn watch(
        &self,
        path: &str,
        accept: Option<&str>,
    ) -> anyhow::Result<impl Stream<Item = anyhow::Result<(String, Value)>> + use<>> {
        let request = build(Method::GET, path, None, accept)?;
        let host = self.host.clone();
        let events = self
            .client
            .request_events::<Value>(request)
            .await
            .map_err(|err| self.translate(err))?;
        Ok(StreamExt::map(
            events,
            move |event: Result<kube::api::WatchEvent<Value>, kube::Error>| {
                use kube::api::WatchEvent;
                let event = event.map_err(|err| translate(&host, err))?;
                Ok(match event {
                    WatchEvent::Added(o) => ("ADDED".to_owned(), o),
                    WatchEvent::Modified(o) => ("MODIFIED".to_owned(), o),
                    WatchEvent::Deleted(o) => ("DELETED".to_owned(), o),
                    WatchEvent::Bookmark(_) => ("BOOKMARK".to_owned(), Value::Null),
                    WatchEvent::Error(status) => {
                        return Err(ApiError {
                            code: status.code,
                            reason: status.reason,
                            message: status.message,
                        }
                        .into());
                    }
                })
            },
        ))
    }

    fn translate(&self, err: kube::Error) -> anyhow::Error {
        translate(&self.host, err)
    }
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
}
