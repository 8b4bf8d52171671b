//! The manifest URL source: GET the URL every `httpCheckFrequency`; it serves one Pod or a
//! PodList. A failed fetch keeps the last set (nothing is sent), as upstream.

use super::common::{StaticSource, decode_pods};
use super::{SOURCE_HTTP, SourceSender};
use crate::prober::httpclient;
use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Pod;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const MAX_MANIFEST_BYTES: usize = 16 << 20;

/// Fetches and decodes the manifest once.
pub async fn fetch(
    url: &str,
    headers: &[(String, String)],
    node: &str,
) -> anyhow::Result<Vec<Pod>> {
    let uri: http::Uri = url
        .parse()
        .with_context(|| format!("invalid manifest URL {url:?}"))?;
    let resp = httpclient::get(&uri, headers, Duration::from_secs(10), MAX_MANIFEST_BYTES)
        .await
        .with_context(|| format!("failed to fetch {url}"))?;
    if resp.status != http::StatusCode::OK {
        bail!("{url}: {}", resp.status);
    }
    if resp.body.is_empty() {
        bail!("zero-length data received from {url}");
    }
    decode_pods(&resp.body, StaticSource::Url(url), node)
        .with_context(|| format!("{url}: the data is not a valid Pod or PodList"))
}

/// Runs the http source until shutdown.
pub async fn run(
    url: String,
    headers: Vec<(String, String)>,
    node: String,
    period: Duration,
    tx: SourceSender,
    shutdown: CancellationToken,
) {
    let mut last_error = String::new();
    loop {
        match fetch(&url, &headers, &node).await {
            Ok(pods) => {
                last_error.clear();
                if tx.send((SOURCE_HTTP, pods)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                let msg = format!("{e:#}");
                // The same failure every period would flood the log.
                if msg != last_error {
                    tracing::warn!(url, error = %msg, "unable to read the manifest URL");
                    last_error = msg;
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Serves one canned response per connection, recording the requests.
    async fn serve(
        status: &'static str,
        body: &'static str,
    ) -> (String, tokio::task::JoinHandle<Vec<String>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            s.write_all(resp.as_bytes()).await.unwrap();
            vec![String::from_utf8_lossy(&buf[..n]).to_string()]
        });
        (format!("http://{addr}/manifest"), task)
    }

    #[tokio::test]
    async fn fetches_pods_with_headers() {
        let (url, task) = serve("200 OK", r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#).await;
        let pods = fetch(&url, &[("X-Token".into(), "t1".into())], "n1")
            .await
            .expect("fetches");
        assert_eq!(pods[0].metadata.name.as_deref(), Some("m-n1"));
        let req = task.await.unwrap().join("");
        assert!(req.starts_with("GET /manifest HTTP/1.1"), "{req}");
        assert!(req.to_ascii_lowercase().contains("x-token: t1"), "{req}");
    }

    #[tokio::test]
    async fn refuses_errors_and_empty_bodies() {
        let (url, _t) = serve("404 Not Found", "nope").await;
        assert!(fetch(&url, &[], "n1").await.is_err());
        let (url, _t) = serve("200 OK", "").await;
        let err = fetch(&url, &[], "n1").await.expect_err("empty");
        assert!(format!("{err:#}").contains("zero-length"), "{err:#}");
    }
}
