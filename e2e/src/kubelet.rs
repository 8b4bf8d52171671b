//! Our kubelet started as a real process against a test's apiserver and containerd: its own
//! root dir, pod logs dir, static pod dir, cgroup root (`/kt-<random>`) and ports, a client
//! certificate for `system:node:<name>` signed by the apiserver's client CA and a serving
//! certificate from the same CA. Killed on drop, with its pods and cgroups removed.
//!
//! For the apiserver to reach the kubelet (logs, exec, port-forward, nodes/proxy) it needs the
//! kubelet client flags: [`start_apiserver`] starts one with them ([`apiserver_flags`] gives
//! them for other set-ups).

mod certs;
mod cgroups;
mod cluster;
mod testing;

pub use cluster::{Host, KubeletCluster};
pub use testing::{admin_client, poll};

use crate::apiserver::{ApiServer, Backend};
use crate::containerd::Containerd;
use crate::daemon::Daemon;
use crate::pki::Pki;
use crate::{bin, free_port};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use certs::{NodeCerts, issue_for_server};
pub use cgroups::remove_cgroup_tree;

/// A hang guard for the kubelet's start, not a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Flags that make an apiserver trust `pki`'s client certificates and talk to kubelets whose
/// serving certificates `pki` signed, as `kube-apiserver-kubelet-client` (system:masters).
pub fn apiserver_flags(pki: &Pki) -> Vec<String> {
    let (cert, key) = pki.issue_client("kube-apiserver-kubelet-client", &["system:masters"]);
    vec![
        format!("--client-ca-file={}", pki.ca_file().display()),
        format!("--kubelet-client-certificate={}", cert.display()),
        format!("--kubelet-client-key={}", key.display()),
        format!(
            "--kubelet-certificate-authority={}",
            pki.ca_file().display()
        ),
        "--kubelet-preferred-address-types=InternalIP,Hostname".to_string(),
    ]
}

/// An apiserver on the embedded store under `<dir>/apiserver` with a PKI in `<dir>/pki` and
/// [`apiserver_flags`], ServiceAccount admission off (as [`ApiServer::start`]), then `extra`.
pub async fn start_apiserver(dir: &Path, extra: &[&str]) -> anyhow::Result<(ApiServer, Pki)> {
    let pki = Pki::new(&dir.join("pki"));
    let mut args = apiserver_flags(&pki);
    args.push("--disable-admission-plugins=ServiceAccount".into());
    args.extend(extra.iter().map(|a| a.to_string()));
    let server = ApiServer::start_with(&dir.join("apiserver"), Backend::Embedded, &args).await?;
    Ok((server, pki))
}

/// A running kubelet, killed on drop.
pub struct Kubelet {
    daemon: Option<Daemon>,
    dir: PathBuf,
    node_name: String,
    args: Vec<String>,
    port: u16,
    healthz_port: u16,
    read_only_port: u16,
    cgroup_root: String,
    runtime_socket: PathBuf,
    certs: NodeCerts,
    runs: usize,
}

impl Kubelet {
    /// Writes `<dir>/kubelet-config.yaml` (defaults below, `extra_config` merged in as a JSON
    /// merge patch: `null` removes a field), issues the certificates, starts `kubelet` with
    /// `--config`, `--kubeconfig`, `--hostname-override`, `--root-dir=<dir>/root`,
    /// `--node-ip=127.0.0.1` (unless `extra_flags` has one) and `extra_flags`, and waits for
    /// `/healthz` on the healthz port.
    pub async fn start(
        dir: &Path,
        api: &ApiServer,
        containerd: &Containerd,
        node_name: &str,
        extra_config: Value,
        extra_flags: &[&str],
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let certs = certs::issue(&dir.join("pki"), api, node_name)?;
        Self::start_with_certs(
            &dir,
            certs,
            containerd,
            node_name,
            extra_config,
            extra_flags,
        )
        .await
    }

    /// [`Kubelet::start`] with credentials issued by the caller (e.g. with
    /// [`certs::issue_for_server`] for an apiserver the kubelet itself is to start as a static
    /// pod): nothing here talks to an apiserver.
    pub async fn start_with_certs(
        dir: &Path,
        certs: NodeCerts,
        containerd: &Containerd,
        node_name: &str,
        extra_config: Value,
        extra_flags: &[&str],
    ) -> anyhow::Result<Self> {
        Self::launch(
            dir,
            certs,
            Some(containerd),
            node_name,
            extra_config,
            extra_flags,
        )
        .await
    }

    /// A `--hollow` kubelet (the test mode of issue 10): no containerd, its pods run in an
    /// in-process fake runtime; otherwise as [`Kubelet::start`].
    pub async fn start_hollow(
        dir: &Path,
        api: &ApiServer,
        node_name: &str,
        extra_config: Value,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let certs = certs::issue(&dir.join("pki"), api, node_name)?;
        Self::launch(&dir, certs, None, node_name, extra_config, &["--hollow"]).await
    }

    async fn launch(
        dir: &Path,
        certs: NodeCerts,
        containerd: Option<&Containerd>,
        node_name: &str,
        extra_config: Value,
        extra_flags: &[&str],
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let (port, healthz_port, read_only_port) = (free_port(), free_port(), free_port());
        let cgroup_root = format!("/kt-{}", random_suffix());
        for sub in ["root", "pod-logs", "manifests"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let mut config = json!({
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": "127.0.0.1",
            "port": port,
            "readOnlyPort": read_only_port,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": healthz_port,
            "tlsCertFile": certs.serving_cert,
            "tlsPrivateKeyFile": certs.serving_key,
            "authentication": {
                "x509": {"clientCAFile": certs.ca_file},
                "webhook": {"enabled": true},
                "anonymous": {"enabled": false},
            },
            "authorization": {"mode": "Webhook"},
            "podLogsDir": dir.join("pod-logs"),
            "staticPodPath": dir.join("manifests"),
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": cgroup_root,
            "clusterDNS": ["10.96.0.10"],
            "clusterDomain": "cluster.local",
            // Fast enough for tests that wait on them, slow enough for 2 shared cores.
            "syncFrequency": "10s",
            "fileCheckFrequency": "1s",
            "nodeStatusUpdateFrequency": "10s",
            "failSwapOn": false,
            // The disk and memory are shared with every other test: upstream's defaults
            // (nodefs 10%, imagefs 15%) could put a test node under pressure at random.
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
            },
            // No registry is reachable: an image the GC removes cannot come back, and this
            // disk is fuller than upstream's 85% trigger. 100 turns image GC off.
            "imageGCHighThresholdPercent": 100,
        });
        if let Some(containerd) = containerd {
            config["containerRuntimeEndpoint"] = json!(containerd.endpoint());
        }
        if !extra_config.is_null() {
            json_merge(&mut config, extra_config);
        }
        let config_path = dir.join("kubelet-config.yaml");
        std::fs::write(&config_path, serde_yaml::to_string(&config)?)?;
        let mut args = vec![
            format!("--config={}", config_path.display()),
            format!("--kubeconfig={}", certs.kubeconfig.display()),
            format!("--hostname-override={node_name}"),
            format!("--root-dir={}", dir.join("root").display()),
        ];
        if !extra_flags.iter().any(|f| f.starts_with("--node-ip")) {
            args.push("--node-ip=127.0.0.1".into());
        }
        args.extend(extra_flags.iter().map(|f| f.to_string()));
        let port_of = |key: &str, default: u16| {
            config[key]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(default)
        };
        let mut kubelet = Self {
            daemon: None,
            node_name: node_name.into(),
            args,
            port: port_of("port", port),
            healthz_port: port_of("healthzPort", healthz_port),
            read_only_port: port_of("readOnlyPort", read_only_port),
            cgroup_root: config["cgroupRoot"]
                .as_str()
                .unwrap_or(&cgroup_root)
                .to_string(),
            runtime_socket: containerd.map_or_else(
                || dir.join("root").join("hollow").join("cri.sock"),
                Containerd::socket_path,
            ),
            certs,
            runs: 0,
            dir,
        };
        kubelet.restart().await?;
        Ok(kubelet)
    }

    /// Starts the kubelet again with the same directories, configuration and ports (after
    /// [`Kubelet::kill`] or [`Kubelet::stop`]) and waits for `/healthz`.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.daemon.is_none(), "the kubelet is still running");
        self.runs += 1;
        let log_dir = self.dir.join(format!("run{}", self.runs));
        std::fs::create_dir_all(&log_dir)?;
        self.daemon = Some(Daemon::start(&bin("kubelet"), &self.args, &log_dir)?);
        if let Err(err) = self.wait_healthy().await {
            anyhow::bail!("{err:#}\n{}", self.logs());
        }
        Ok(())
    }

    async fn wait_healthy(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + PATIENCE;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Some(status) = self.daemon.as_mut().and_then(Daemon::try_status) {
                anyhow::bail!("the kubelet exited ({status})");
            }
            match http_get(self.healthz_port, "/healthz").await {
                Ok((200, _)) => return Ok(()),
                Ok((status, body)) => last = format!("{status} {body}"),
                Err(err) => last = err.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("kubelet /healthz not ok after {PATIENCE:?}: {last}")
    }

    /// The running process's id.
    pub fn pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(Daemon::pid)
    }

    /// kill -9: no chance to finish anything; its containers keep running.
    pub fn kill(&mut self) {
        // Dropping a Daemon sends SIGKILL and reaps the process.
        self.daemon = None;
    }

    /// SIGTERM and wait for the exit.
    pub fn stop(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        let mut daemon = self
            .daemon
            .take()
            .ok_or_else(|| anyhow::anyhow!("the kubelet is not running"))?;
        daemon
            .terminate(Duration::from_secs(30))
            .map_err(|err| anyhow::anyhow!("{err:#}\n{}", self.logs()))
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        self.daemon
            .as_mut()
            .is_none_or(|d| d.try_status().is_some())
    }

    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// The kubelet API's port (HTTPS, on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn healthz_port(&self) -> u16 {
        self.healthz_port
    }

    /// The read-only port (plain HTTP; 0 if the configuration disabled it).
    pub fn read_only_port(&self) -> u16 {
        self.read_only_port
    }

    /// `--pod-manifest-path`: drop static pod manifests here.
    pub fn static_pod_dir(&self) -> PathBuf {
        self.dir.join("manifests")
    }

    /// `--root-dir`.
    pub fn root_dir(&self) -> PathBuf {
        self.dir.join("root")
    }

    /// `podLogsDir` (`<ns>_<name>_<uid>/<container>/<n>.log` below it).
    pub fn pod_logs_dir(&self) -> PathBuf {
        self.dir.join("pod-logs")
    }

    /// `cgroupRoot`, e.g. `/kt-1a2b3c`.
    pub fn cgroup_root(&self) -> &str {
        &self.cgroup_root
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("kubelet-config.yaml")
    }

    /// The certificates and kubeconfig it runs with; `ca_file` signs its serving certificate.
    pub fn certs(&self) -> &NodeCerts {
        &self.certs
    }

    /// The logs of every run so far.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for run in 1..=self.runs {
            let log = self.dir.join(format!("run{run}")).join("kubelet.log");
            out += &format!(
                "----- kubelet run {run} -----\n{}\n",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        out
    }

    /// Removes what the kubelet made outside the temp dir or mounted in it: its pods (the
    /// sandboxes under its cgroup root), its mounts (volumes) and its cgroups.
    fn cleanup(&mut self) {
        let socket = self.runtime_socket.clone();
        let marker = format!("\"{}/", self.cgroup_root);
        if socket.exists() {
            let _ = crate::containerd::cri::blocking(async move {
                tokio::time::timeout(
                    Duration::from_secs(20),
                    crate::containerd::cri::remove_matching(socket, marker),
                )
                .await
            });
        }
        crate::containerd::unmount_under(&self.dir);
        remove_cgroup_tree(&self.cgroup_root);
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for run in 1..self.runs {
                let log = self.dir.join(format!("run{run}")).join("kubelet.log");
                eprintln!(
                    "----- kubelet run {run} log -----\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
        }
        // The last run's log is printed by its Daemon on drop.
        self.daemon = None;
        self.cleanup();
    }
}

/// RFC 7386 merge: objects merge key by key, `null` deletes, anything else replaces.
fn json_merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(&key);
                } else {
                    json_merge(target.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch,
    }
}

fn random_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}{:x}", std::process::id(), nanos & 0xff_ffff)
}

/// A plain HTTP/1.0 GET on loopback: (status, body).
pub async fn http_get(port: u16, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut response)).await??;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("not an HTTP response: {response:?}"))?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::json_merge;
    use serde_json::json;

    #[test]
    fn extra_config_merges_as_a_merge_patch() {
        let cases = [
            (
                json!({"a": 1, "b": {"c": 2}}),
                json!({"b": {"d": 3}}),
                json!({"a": 1, "b": {"c": 2, "d": 3}}),
            ),
            (json!({"a": 1}), json!({"a": null}), json!({})),
            (
                json!({"a": [1]}),
                json!({"a": [2, 3]}),
                json!({"a": [2, 3]}),
            ),
            (json!({"a": {"x": 1}}), json!({"a": "s"}), json!({"a": "s"})),
        ];
        for (mut target, patch, want) in cases {
            let patch_text = patch.to_string();
            json_merge(&mut target, patch);
            assert_eq!(target, want, "{patch_text}");
        }
    }
}
