//! What the benchmark binaries share: an HTTP/2 client to the apiserver, a pool of workers
//! over it, and the CPU and memory of a process read from /proc.

mod flags;

pub use flags::Flags;

use crate::apiserver::ApiServer;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One HTTP/2 connection (requests are multiplexed on it).
#[derive(Clone)]
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
}

impl Client {
    pub async fn connect(api: &ApiServer) -> anyhow::Result<Self> {
        let tls = crate::https::tls(api.addr(), &api.ca_file(), &[b"h2"]).await?;
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        Ok(Self { sender })
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &Value,
    ) -> anyhow::Result<hyper::Response<hyper::body::Incoming>> {
        let request = hyper::Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"))
            .header("content-type", content_type)
            .header("authorization", "Bearer e2e")
            .body(Full::new(Bytes::from(serde_json::to_vec(body)?)))?;
        Ok(self.sender.clone().send_request(request).await?)
    }

    /// A write that must answer `code`; retried on 429 (priority and fairness pushing back).
    pub async fn expect(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &Value,
        code: u16,
    ) -> anyhow::Result<()> {
        loop {
            let response = self.send(method, path, content_type, body).await?;
            let status = response.status().as_u16();
            let text = response.into_body().collect().await?.to_bytes();
            if status == code {
                return Ok(());
            }
            if status != 429 {
                anyhow::bail!(
                    "{method} {path}: {status} {}",
                    String::from_utf8_lossy(&text)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Runs `make(client, i)` for i in 0..count over `creators` concurrent workers.
pub async fn run_all<F, Fut>(
    clients: &[Client],
    creators: usize,
    count: usize,
    make: F,
) -> anyhow::Result<()>
where
    F: Fn(Client, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = vec![];
    for w in 0..creators {
        let client = clients[w % clients.len()].clone();
        let next = next.clone();
        let make = make.clone();
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return anyhow::Ok(());
                }
                make(client.clone(), i).await?;
            }
        }));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(())
}

pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// (user+system CPU seconds, peak RSS MiB) of a process.
pub fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command (which may hold spaces) start at the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command.
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    (cpu, status_kib(pid, "VmHWM:") / 1024.0)
}

/// Current RSS of a process in MiB (VmRSS: unlike the peak, it sums over many processes).
pub fn rss_mib(pid: u32) -> f64 {
    status_kib(pid, "VmRSS:") / 1024.0
}

/// A `kB` field of `/proc/<pid>/status` (0 when the process is gone).
fn status_kib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
}

pub fn apiserver_pid(api_dir: &std::path::Path) -> Option<u32> {
    // The harness does not expose the apiserver's pid; find the process serving this dir.
    let needle = format!("--data-dir={}", api_dir.join("data").display());
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.split('\0').any(|a| a == needle).then_some(pid)
        })
}

/// Opens a watch on `path` (which must include `watch=true`) and calls `on_event` with each
/// decoded event from a background task until the stream ends or `on_event` returns false.
pub async fn watch(
    client: &Client,
    path: &str,
    mut on_event: impl FnMut(Value) -> bool + Send + 'static,
) -> anyhow::Result<()> {
    use futures::StreamExt;
    use tokio::io::AsyncBufReadExt;
    let response = client
        .send("GET", path, "application/json", &Value::Null)
        .await?;
    anyhow::ensure!(response.status() == 200, "watch: {}", response.status());
    let stream = http_body_util::BodyStream::new(response.into_body()).map(|frame| {
        frame
            .map(|f| f.into_data().unwrap_or_default())
            .map_err(std::io::Error::other)
    });
    let mut lines = tokio::io::BufReader::new(tokio_util::io::StreamReader::new(stream)).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && !on_event(event)
            {
                return;
            }
        }
    });
    Ok(())
}
