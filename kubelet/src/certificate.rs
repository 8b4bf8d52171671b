//! `--bootstrap-kubeconfig`: a client certificate requested through a
//! CertificateSigningRequest (`kubernetes.io/kube-apiserver-client-kubelet`) and written as the
//! `--kubeconfig`. Owner: the node engineer.
//!
//! The core calls [`bootstrap_client_certificate`] before it builds its client from
//! `--kubeconfig`. Approval and signing are kube-controller-manager's (csrapproving,
//! csrsigning).

pub mod kubeconfig;

use crate::app::config::Config;
use anyhow::{Context, bail};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const SIGNER_KUBELET_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The cert+key file the kubeconfig points at, as upstream names it.
pub const CURRENT_CLIENT_CERT: &str = "kubelet-client-current.pem";
/// How long to wait for the controller manager to sign (upstream waits 15 minutes).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(15 * 60);

/// When `--bootstrap-kubeconfig` is set and `--kubeconfig` is missing or its certificate
/// expired: reuse a still-valid `<cert-dir>/kubelet-client-current.pem`, else generate a key,
/// request a certificate through a CSR, wait for it, and write both the certificate and the
/// `--kubeconfig`. Without `--bootstrap-kubeconfig` it does nothing.
pub async fn bootstrap_client_certificate(config: &Config) -> anyhow::Result<()> {
    let (Some(bootstrap), Some(kubeconfig)) = (&config.bootstrap_kubeconfig, &config.kubeconfig)
    else {
        return Ok(());
    };
    bootstrap_with(
        bootstrap,
        kubeconfig,
        &config.cert_dir,
        &config.node_name,
        DEFAULT_WAIT,
    )
    .await
}

/// [`bootstrap_client_certificate`] with explicit paths and wait.
pub async fn bootstrap_with(
    bootstrap: &Path,
    kubeconfig: &Path,
    cert_dir: &Path,
    node_name: &str,
    wait: Duration,
) -> anyhow::Result<()> {
    if kubeconfig::still_valid(kubeconfig) {
        tracing::info!(
            "kubeconfig {} is valid, skipping bootstrap",
            kubeconfig.display()
        );
        return Ok(());
    }
    let cluster = kubeconfig::cluster(bootstrap)
        .with_context(|| format!("reading --bootstrap-kubeconfig {}", bootstrap.display()))?;
    let current = cert_dir.join(CURRENT_CLIENT_CERT);
    if let Ok(pem) = std::fs::read(&current)
        && kubeconfig::certificate_valid_now(&pem).unwrap_or(false)
    {
        tracing::info!(
            "using the existing client certificate {}",
            current.display()
        );
        return kubeconfig::write(kubeconfig, &cluster, &current);
    }
    tracing::info!(
        node = node_name,
        "requesting a client certificate through a CSR"
    );
    let client = client_go_rs::config::load_client_config(Some(bootstrap), None, None)
        .await
        .context("loading --bootstrap-kubeconfig")?
        .with_user_agent(client_go_rs::config::default_user_agent(
            "kubelet",
            crate::nodestatus::KUBELET_VERSION,
        ))
        .build_client()
        .context("building the bootstrap client")?;
    let (key_pem, csr_pem) = key_and_request(node_name)?;
    let cert_pem = request_certificate(client, node_name, &csr_pem, wait).await?;
    let file = write_cert(cert_dir, &cert_pem, &key_pem)?;
    kubeconfig::write(kubeconfig, &cluster, &file)?;
    tracing::info!(
        node = node_name,
        "client certificate bootstrapped: {}",
        file.display()
    );
    Ok(())
}

/// A new ECDSA P-256 key and a CSR for `system:node:<name>` in `system:nodes`, both PEM.
pub fn key_and_request(node_name: &str) -> anyhow::Result<(String, String)> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .context("generating the private key")?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
        .context("building the certificate request")?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "system:nodes");
    dn.push(
        rcgen::DnType::CommonName,
        format!("system:node:{node_name}"),
    );
    params.distinguished_name = dn;
    let csr = params
        .serialize_request(&key)
        .context("signing the certificate request")?;
    Ok((key.serialize_pem(), csr.pem().context("encoding the CSR")?))
}

/// The CSR's name: a digest of the request, so a restarted kubelet finds its own pending
/// request (upstream names them `node-csr-<digest>` the same way; hex keeps the name a valid
/// DNS subdomain).
fn csr_name(csr_pem: &str) -> String {
    let digest = Sha256::digest(csr_pem.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("node-csr-{hex}")
}

/// Creates the CSR and waits until it is issued (or denied, failed, or the wait ends).
pub async fn request_certificate(
    client: kube::Client,
    node_name: &str,
    csr_pem: &str,
    wait: Duration,
) -> anyhow::Result<Vec<u8>> {
    let api: Api<CertificateSigningRequest> = Api::all(client);
    let name = csr_name(csr_pem);
    let csr = CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..ObjectMeta::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.as_bytes().to_vec()),
            signer_name: SIGNER_KUBELET_CLIENT.into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    };
    match api.create(&PostParams::default(), &csr).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_already_exists() => {}
        Err(err) => {
            return Err(err).with_context(|| format!("creating CSR {name} for node {node_name}"));
        }
    }
    let deadline = Instant::now() + wait;
    loop {
        let current = api
            .get(&name)
            .await
            .with_context(|| format!("reading CSR {name}"))?;
        if let Some(status) = &current.status {
            for c in status.conditions.iter().flatten() {
                if (c.type_ == "Denied" || c.type_ == "Failed") && c.status == "True" {
                    bail!(
                        "certificate request {name} was {}: {}",
                        c.type_.to_lowercase(),
                        c.message.as_deref().unwrap_or_default()
                    );
                }
            }
            if let Some(cert) = &status.certificate
                && !cert.0.is_empty()
            {
                return Ok(cert.0.clone());
            }
        }
        if Instant::now() >= deadline {
            bail!("timed out waiting for CSR {name} to be signed");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Writes `kubelet-client-<timestamp>.pem` (certificate then key, mode 0600) and points
/// `kubelet-client-current.pem` at it.
fn write_cert(cert_dir: &Path, cert_pem: &[u8], key_pem: &str) -> anyhow::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(cert_dir)
        .with_context(|| format!("creating --cert-dir {}", cert_dir.display()))?;
    let stamp = jiff::Timestamp::now()
        .strftime("%Y-%m-%d-%H-%M-%S")
        .to_string();
    let file = cert_dir.join(format!("kubelet-client-{stamp}.pem"));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&file)
        .with_context(|| format!("writing {}", file.display()))?;
    out.write_all(cert_pem)?;
    if !cert_pem.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.write_all(key_pem.as_bytes())?;
    let current = cert_dir.join(CURRENT_CLIENT_CERT);
    let tmp = cert_dir.join(format!(".{CURRENT_CLIENT_CERT}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&file, &tmp)
        .with_context(|| format!("linking {}", tmp.display()))?;
    std::fs::rename(&tmp, &current).with_context(|| format!("writing {}", current.display()))?;
    Ok(current)
}

#[cfg(test)]
mod tests;
