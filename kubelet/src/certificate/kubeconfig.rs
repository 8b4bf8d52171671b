//! Reading the parts of a kubeconfig bootstrap needs (the current cluster, the client
//! certificate) and writing the kubelet's own kubeconfig.

use anyhow::{Context, bail};
use base64::Engine;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// The current context's cluster: server and CA (as PEM bytes, if any).
#[derive(Debug, Clone)]
pub struct ClusterInfo {
    pub server: String,
    pub ca_pem: Option<Vec<u8>>,
    pub insecure_skip_tls_verify: bool,
}

fn read(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("parsing kubeconfig {}", path.display()))
}

fn named<'a>(doc: &'a Value, list: &str, name: &str, field: &str) -> Option<&'a Value> {
    doc.get(list)?
        .as_sequence()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
        .get(field)
}

fn current(doc: &Value) -> Option<&Value> {
    let context = doc.get("current-context")?.as_str()?;
    named(doc, "contexts", context, "context")
}

/// A path in a kubeconfig is relative to the kubeconfig's directory.
fn resolve(base: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_relative() {
        base.parent().unwrap_or(Path::new(".")).join(p)
    } else {
        p.to_path_buf()
    }
}

/// The current context's cluster of the kubeconfig at `path`.
pub fn cluster(path: &Path) -> anyhow::Result<ClusterInfo> {
    let doc = read(path)?;
    let name = current(&doc)
        .and_then(|c| c.get("cluster"))
        .and_then(Value::as_str)
        .with_context(|| format!("{}: no current context with a cluster", path.display()))?;
    let cluster = named(&doc, "clusters", name, "cluster")
        .with_context(|| format!("{}: no cluster {name:?}", path.display()))?;
    let server = cluster
        .get("server")
        .and_then(Value::as_str)
        .with_context(|| format!("{}: cluster {name:?} has no server", path.display()))?
        .to_string();
    let ca_pem = if let Some(data) = cluster
        .get("certificate-authority-data")
        .and_then(Value::as_str)
    {
        Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .context("decoding certificate-authority-data")?,
        )
    } else if let Some(file) = cluster.get("certificate-authority").and_then(Value::as_str) {
        let file = resolve(path, file);
        Some(std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?)
    } else {
        None
    };
    Ok(ClusterInfo {
        server,
        ca_pem,
        insecure_skip_tls_verify: cluster
            .get("insecure-skip-tls-verify")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The PEM of the current user's client certificate, None when it authenticates otherwise.
pub fn client_certificate(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let doc = read(path)?;
    let Some(user) = current(&doc)
        .and_then(|c| c.get("user"))
        .and_then(Value::as_str)
        .and_then(|u| named(&doc, "users", u, "user"))
    else {
        return Ok(None);
    };
    if let Some(data) = user.get("client-certificate-data").and_then(Value::as_str) {
        return Ok(Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .context("decoding client-certificate-data")?,
        ));
    }
    match user.get("client-certificate").and_then(Value::as_str) {
        Some(file) => {
            let file = resolve(path, file);
            Ok(Some(
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?,
            ))
        }
        None => Ok(None),
    }
}

/// Whether a PEM certificate (the first in the bundle) is valid now.
pub fn certificate_valid_now(pem: &[u8]) -> anyhow::Result<bool> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).context("parsing the PEM certificate")?;
    let cert = pem.parse_x509().context("parsing the certificate")?;
    Ok(cert.validity().is_valid())
}

/// Whether the kubeconfig at `path` can be used as is: it exists and its client certificate
/// (if it has one) has not expired, as upstream's `isClientConfigStillValid`.
pub fn still_valid(path: &Path) -> bool {
    if !path.exists() {
        return false;
    }
    match client_certificate(path) {
        Ok(None) => cluster(path).is_ok(),
        Ok(Some(pem)) => certificate_valid_now(&pem).unwrap_or(false),
        Err(err) => {
            tracing::info!("kubeconfig {} is not usable: {err:#}", path.display());
            false
        }
    }
}

/// Writes a kubeconfig for `cluster` authenticating with the cert+key file `cert_file`.
pub fn write(path: &Path, cluster: &ClusterInfo, cert_file: &Path) -> anyhow::Result<()> {
    let mut cluster_entry = serde_json::json!({ "server": cluster.server });
    if let Some(ca) = &cluster.ca_pem {
        cluster_entry["certificate-authority-data"] =
            base64::engine::general_purpose::STANDARD.encode(ca).into();
    }
    if cluster.insecure_skip_tls_verify {
        cluster_entry["insecure-skip-tls-verify"] = true.into();
    }
    let cert = cert_file.display().to_string();
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": cluster_entry}],
        "contexts": [{"name": "default-context", "context": {
            "cluster": "default-cluster", "namespace": "default", "user": "default-auth"}}],
        "current-context": "default-context",
        "users": [{"name": "default-auth", "user": {
            "client-certificate": cert, "client-key": cert}}],
    });
    if cluster.server.is_empty() {
        bail!("no server to write into {}", path.display());
    }
    let text = serde_yaml::to_string(&doc).context("encoding the kubeconfig")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}
