//! A real etcd (/usr/bin/etcd) owned by a test: single member, loopback ports, temp data dir.

use crate::daemon::Daemon;
use crate::free_port;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Where the Debian package `etcd-server` (hack/install-deps.sh) installs etcd.
pub const ETCD: &str = "/usr/bin/etcd";

/// A running single-member etcd, killed on drop.
pub struct Etcd {
    daemon: Daemon,
    client_port: u16,
}

impl Etcd {
    /// Starts etcd with its data under `dir` and waits until `/health` says it is healthy.
    pub fn start(dir: &Path) -> anyhow::Result<Self> {
        anyhow::ensure!(
            Path::new(ETCD).exists(),
            "{ETCD} is missing: run hack/install-deps.sh (apt-get install etcd-server)"
        );
        let client_port = free_port();
        let peer_port = free_port();
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let args = vec![
            "--name=e2e".to_string(),
            format!("--data-dir={}", dir.join("etcd-data").display()),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=e2e={peer}"),
            "--heartbeat-interval=10".into(),
            "--election-timeout=100".into(),
        ];
        let mut etcd = Self {
            daemon: Daemon::start(Path::new(ETCD), &args, dir)?,
            client_port,
        };
        etcd.wait_healthy(Duration::from_secs(30))?;
        Ok(etcd)
    }

    /// The client URL to give `--etcd-servers`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Everything etcd has logged so far.
    pub fn logs(&self) -> String {
        self.daemon.logs()
    }

    fn wait_healthy(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.daemon.try_status() {
                anyhow::bail!("etcd exited ({status}):\n{}", self.daemon.logs());
            }
            let last = match http_get(self.client_port, "/health") {
                Ok(body) if body.contains("\"health\":\"true\"") => return Ok(()),
                Ok(body) => body,
                Err(err) => err.to_string(),
            };
            if Instant::now() > deadline {
                anyhow::bail!(
                    "etcd not healthy after {timeout:?}: {last}\n{}",
                    self.daemon.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A plain HTTP/1.0 GET on loopback, returning the whole response.
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}
