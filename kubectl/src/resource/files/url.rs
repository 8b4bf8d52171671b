//! `-f http(s)://...`: upstream's `readHttpWithRetries`: a plain GET, three attempts a second
//! apart, retried on transport errors and 5xx, any other non-200 final.

use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

const ATTEMPTS: usize = 3;
const PAUSE: Duration = Duration::from_secs(1);
/// Go's `http.Client` gives up after this many redirects.
const REDIRECTS: usize = 10;

/// The body of `url`. Reading manifests is synchronous and may run inside the command's
/// runtime, so the request gets a runtime of its own on its own thread.
pub fn fetch(url: &str) -> anyhow::Result<String> {
    let owned = url.to_owned();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(with_retries(&owned))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("reading {url} panicked"))?
}

async fn with_retries(url: &str) -> anyhow::Result<String> {
    let mut last = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(PAUSE).await;
        }
        match get(url).await {
            Ok((200, _, body)) => return Ok(body),
            Ok((code, status, _)) => {
                last = Some(anyhow::anyhow!(
                    "unable to read URL {url:?}, server reported {status}, status code={code}"
                ));
                if !(500..600).contains(&code) {
                    break;
                }
            }
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("http attempts must be greater than 0")))
}

/// One GET following redirects: `(code, "code reason", body)`.
async fn get(url: &str) -> anyhow::Result<(u16, String, String)> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()?
        .https_or_http()
        .enable_http1()
        .build();
    let client = Client::builder(TokioExecutor::new()).build::<_, Empty<bytes::Bytes>>(https);
    let mut target: http::Uri = url.parse()?;
    for _ in 0..=REDIRECTS {
        let response = client
            .get(target.clone())
            .await
            .map_err(|err| anyhow::anyhow!("Get {url:?}: {}", root_cause(&err)))?;
        let status = response.status();
        let location = response
            .headers()
            .get(http::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned);
        if status.is_redirection()
            && let Some(location) = location
        {
            target = resolve(&target, &location)?;
            continue;
        }
        let body = response.into_body().collect().await?.to_bytes();
        let text = format!(
            "{} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        );
        return Ok((
            status.as_u16(),
            text.trim_end().to_owned(),
            String::from_utf8_lossy(&body).into_owned(),
        ));
    }
    anyhow::bail!("Get {url:?}: stopped after {REDIRECTS} redirects")
}

/// A `Location` against the URL that answered it (absolute, or a path on the same host).
fn resolve(base: &http::Uri, location: &str) -> anyhow::Result<http::Uri> {
    if location.contains("://") {
        return Ok(location.parse()?);
    }
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(location.parse()?);
    Ok(http::Uri::from_parts(parts)?)
}

fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut err = err;
    while let Some(source) = err.source() {
        err = source;
    }
    err.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_resolve_against_the_answering_url() {
        let base: http::Uri = "http://h:1/a/b?x=1".parse().unwrap();
        assert_eq!(resolve(&base, "/c").unwrap().to_string(), "http://h:1/c");
        assert_eq!(
            resolve(&base, "https://o/d").unwrap().to_string(),
            "https://o/d"
        );
    }
}
