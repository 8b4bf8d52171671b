//! Our kube-apiserver started as a real process on a free port, on the embedded store or on a
//! real etcd, with helpers to reach it.

use crate::daemon::Daemon;
use crate::etcd::Etcd;
use crate::{bin, free_port, https};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which storage the apiserver runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store under `--data-dir`.
    Embedded,
    /// A real etcd started for the test (`--etcd-servers`).
    Etcd,
}

/// A running apiserver (and the etcd it uses, if any), all stopped on drop.
pub struct ApiServer {
    // Declared before `etcd` so the apiserver stops first.
    daemon: Option<Daemon>,
    etcd: Option<Etcd>,
    dir: PathBuf,
    port: u16,
    runs: usize,
    /// Flags added to every run (authentication, authorization, admission).
    extra_args: Vec<String>,
}

impl ApiServer {
    /// Starts the apiserver with certificates in `<dir>/certs` and the embedded store in
    /// `<dir>/data` (or an etcd with its data in `<dir>/etcd`), and waits for `/readyz`.
    ///
    /// No controller manager runs beside it, so nothing creates the `default` service account
    /// of a namespace: ServiceAccount admission is off here (it would refuse every pod, as
    /// upstream's does without that controller). [`ApiServer::start_with`] keeps upstream's
    /// plugins.
    pub async fn start(dir: &Path, backend: Backend) -> anyhow::Result<Self> {
        Self::start_with(
            dir,
            backend,
            &["--disable-admission-plugins=ServiceAccount".to_string()],
        )
        .await
    }

    /// [`ApiServer::start`] with extra flags (kept for restarts).
    pub async fn start_with(
        dir: &Path,
        backend: Backend,
        extra_args: &[String],
    ) -> anyhow::Result<Self> {
        let etcd = match backend {
            Backend::Embedded => None,
            Backend::Etcd => {
                let etcd_dir = dir.join("etcd");
                std::fs::create_dir_all(&etcd_dir)?;
                Some(Etcd::start(&etcd_dir)?)
            }
        };
        let mut server = Self {
            daemon: None,
            etcd,
            dir: dir.to_path_buf(),
            port: 0,
            runs: 0,
            extra_args: extra_args.to_vec(),
        };
        server.restart().await?;
        Ok(server)
    }

    /// Starts the apiserver again (on a new port, same certificates and data) after
    /// [`ApiServer::kill`], and waits for `/readyz`.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.daemon.is_none(), "the apiserver is still running");
        self.runs += 1;
        self.port = free_port();
        let mut args = vec![
            format!("--secure-port={}", self.port),
            "--bind-address=127.0.0.1".into(),
            format!("--cert-dir={}", self.dir.join("certs").display()),
            format!("--data-dir={}", self.dir.join("data").display()),
        ];
        if let Some(etcd) = &self.etcd {
            args.push(format!("--etcd-servers={}", etcd.url()));
        }
        args.extend(self.extra_args.iter().cloned());
        // One log per run, so a restart keeps the log of the run before it.
        let log_dir = self.dir.join(format!("run{}", self.runs));
        std::fs::create_dir_all(&log_dir)?;
        self.daemon = Some(Daemon::start(&bin("kube-apiserver"), &args, &log_dir)?);
        if let Err(err) = https::wait_ok(
            self.addr(),
            &self.ca_file(),
            "/readyz",
            Duration::from_secs(30),
        )
        .await
        {
            anyhow::bail!("{err:#}\n----- apiserver log -----\n{}", self.logs());
        }
        Ok(())
    }

    /// kill -9: the process gets no chance to flush or clean up.
    pub fn kill(&mut self) {
        // Dropping a Daemon sends SIGKILL and reaps the process.
        self.daemon = None;
    }

    /// SIGTERM and wait for the exit.
    pub fn terminate(&mut self, grace: Duration) -> anyhow::Result<std::process::ExitStatus> {
        let mut daemon = self
            .daemon
            .take()
            .ok_or_else(|| anyhow::anyhow!("the apiserver is not running"))?;
        daemon.terminate(grace)
    }

    pub fn addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The self-signed serving certificate, to trust as the CA.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("certs").join("apiserver.crt")
    }

    /// The logs of every run so far (and of etcd), for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for run in 1..=self.runs {
            let log = self
                .dir
                .join(format!("run{run}"))
                .join("kube-apiserver.log");
            out += &format!(
                "----- kube-apiserver run {run} -----\n{}\n",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if let Some(etcd) = &self.etcd {
            let logs = etcd.logs();
            let tail: Vec<&str> = logs.lines().rev().take(40).collect();
            out += "----- etcd (last lines) -----\n";
            for line in tail.into_iter().rev() {
                out += line;
                out += "\n";
            }
        }
        out
    }

    /// GET returning the status and body.
    pub async fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        https::get(self.addr(), &self.ca_file(), path).await
    }

    /// Any request on a new HTTP/1.1 connection.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<bytes::Bytes>,
    ) -> anyhow::Result<(u16, String)> {
        https::request(
            self.addr(),
            &self.ca_file(),
            method,
            path,
            content_type,
            body,
        )
        .await
    }

    /// GET that must answer 200 with JSON.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self
            .get(path)
            .await
            .unwrap_or_else(|err| panic!("GET {path}: {err:#}\n{}", self.logs()));
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|err| panic!("GET {path}: {err}: {body}"))
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The daemons print their current log; print the earlier runs too.
            for run in 1..self.runs {
                let log = self
                    .dir
                    .join(format!("run{run}"))
                    .join("kube-apiserver.log");
                eprintln!(
                    "----- kube-apiserver run {run} log -----\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
        }
    }
}
