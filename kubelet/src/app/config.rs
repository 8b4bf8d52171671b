//! The validated, completed configuration the kubelet runs with.

use super::options::Options;
use anyhow::{Context, bail};
use component_base::serving::SecureServingOptions;
use serde_json::{Value, json};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    /// The node's name: `--hostname-override` or the host's name, lower-cased as upstream does.
    pub node_name: String,
    pub kubeconfig: Option<PathBuf>,
    pub root_dir: PathBuf,
    /// The main HTTPS server (`--address`, `--port`, TLS flags), in the shared serving shape.
    pub serving: SecureServingOptions<10250>,
    /// The plain-HTTP healthz listener, None when `--healthz-port=0`.
    pub healthz_addr: Option<SocketAddr>,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Validates the options and fills in derived defaults.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        let flags = options.kubelet;
        let serving = options.serving;
        if serving.port == 0 {
            bail!("invalid --port 0: must be between 1 and 65535, inclusive");
        }
        if let Some(path) = &flags.kubeconfig {
            std::fs::metadata(path)
                .with_context(|| format!("invalid --kubeconfig {}", path.display()))?;
        }
        let node_name = match flags.hostname_override {
            Some(name) if !name.trim().is_empty() => name.trim().to_lowercase(),
            _ => host_name()?.to_lowercase(),
        };
        Ok(Self {
            node_name,
            kubeconfig: flags.kubeconfig,
            root_dir: flags.root_dir,
            serving: SecureServingOptions {
                bind_address: serving.address,
                secure_port: serving.port,
                cert_dir: Some(serving.cert_dir),
                tls_cert_file: serving.tls_cert_file,
                tls_private_key_file: serving.tls_private_key_file,
                tls: Default::default(),
            },
            healthz_addr: (serving.healthz_port != 0)
                .then(|| SocketAddr::new(serving.healthz_bind_address, serving.healthz_port)),
        })
    }
}

impl Config {
    /// The configuration as `/configz` publishes it, in KubeletConfiguration's shape.
    pub fn configz(&self) -> Value {
        let healthz: Option<(IpAddr, u16)> = self.healthz_addr.map(|a| (a.ip(), a.port()));
        json!({
            "kubeletconfig": {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "address": self.serving.bind_address.to_string(),
                "port": self.serving.secure_port,
                "healthzBindAddress": healthz.map(|h| h.0.to_string()).unwrap_or_default(),
                "healthzPort": healthz.map(|h| h.1).unwrap_or(0),
                "tlsCertFile": self.serving.tls_cert_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            }
        })
    }
}

fn host_name() -> anyhow::Result<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .context("reading the host name (set --hostname-override)")?;
    let name = name.trim();
    if name.is_empty() {
        bail!("the host name is empty: set --hostname-override");
    }
    Ok(name.to_string())
}
