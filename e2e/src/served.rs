//! A component that serves `/healthz` on a secure port with a self-signed certificate under
//! `<dir>/certs` (the scheduler, the controller manager): started, waited for, stopped or
//! killed, its log kept after it ends.

use crate::daemon::Daemon;
use crate::{bin, free_port, https};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A running component, killed on drop.
pub struct Served {
    name: &'static str,
    daemon: Option<Daemon>,
    dir: PathBuf,
    port: u16,
}

impl Served {
    /// Starts the binary `name` with `args` plus its serving flags (a free port on loopback,
    /// certificates in `<dir>/certs`) and waits until `/healthz` answers; the error carries
    /// the component's log.
    pub async fn start(
        name: &'static str,
        dir: &Path,
        args: Vec<String>,
        patience: Duration,
    ) -> anyhow::Result<Self> {
        let port = free_port();
        let mut all = vec![
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".into(),
            format!("--cert-dir={}", dir.join("certs").display()),
        ];
        all.extend(args);
        let daemon = Daemon::start(&bin(name), &all, dir)?;
        let mut served = Self {
            name,
            daemon: Some(daemon),
            dir: dir.to_path_buf(),
            port,
        };
        if let Err(err) = served.wait_healthy(patience).await {
            anyhow::bail!("{err:#}\n----- {name} log -----\n{}", served.logs());
        }
        Ok(served)
    }

    /// Waits for `/healthz` to answer 200, giving up at once if the process exits.
    async fn wait_healthy(&mut self, patience: Duration) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            let last = match https::get(self.addr(), &self.ca_file(), "/healthz").await {
                Ok((200, _)) => return Ok(()),
                Ok((status, body)) => format!("status {status}: {body}"),
                Err(err) => format!("{err:#}"),
            };
            if self.exited() {
                anyhow::bail!("{} exited before /healthz answered: {last}", self.name);
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!("/healthz not ok after {patience:?}: {last}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Where it serves `/healthz`, `/metrics` and `/configz`.
    pub fn addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    /// Its self-signed serving certificate, to trust as the CA.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("certs").join(format!("{}.crt", self.name))
    }

    pub fn pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(Daemon::pid)
    }

    /// Everything it has logged (also after [`Served::kill`]).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("{}.log", self.name))).unwrap_or_default()
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        self.daemon
            .as_mut()
            .is_none_or(|d| d.try_status().is_some())
    }

    /// SIGTERM and wait for the exit.
    pub fn stop(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        let name = self.name;
        let mut daemon = self
            .daemon
            .take()
            .ok_or_else(|| anyhow::anyhow!("{name} is not running"))?;
        daemon
            .terminate(Duration::from_secs(15))
            .map_err(|err| anyhow::anyhow!("{err:#}\n----- {name} log -----\n{}", self.logs()))
    }

    /// kill -9: no chance to release a lease or finish what it was doing.
    pub fn kill(&mut self) {
        // Dropping a Daemon sends SIGKILL and reaps the process.
        self.daemon = None;
    }
}
