//! How the apiserver reaches kubelets: upstream's `--kubelet-*` flags, the TLS client built from
//! them, and a node's connection info (preferred address and kubelet port).

use crate::http::status::ApiError;
use crate::http::tls_client::ServerVerifier;
use clap::Args;
use component_base::duration::GoDuration;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The node address types upstream knows, in its default preference.
pub const ADDRESS_TYPES: &[&str] = &[
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// The kubelet port used when a node does not report one (upstream's `ports.KubeletPort`).
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// Upstream's kubelet client flags (its "Misc flags" section).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Misc flags")]
pub struct KubeletClientOptions {
    /// Path to a cert file for the certificate authority.
    #[arg(long, value_name = "string")]
    pub kubelet_certificate_authority: Option<PathBuf>,

    /// Path to a client cert file for TLS.
    #[arg(long, value_name = "string")]
    pub kubelet_client_certificate: Option<PathBuf>,

    /// Path to a client key file for TLS.
    #[arg(long, value_name = "string")]
    pub kubelet_client_key: Option<PathBuf>,

    /// List of the preferred NodeAddressTypes to use for kubelet connections.
    #[arg(
        long,
        value_name = "strings",
        value_delimiter = ',',
        default_value = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP"
    )]
    pub kubelet_preferred_address_types: Vec<String>,

    /// Timeout for kubelet operations.
    #[arg(long, value_name = "duration", default_value = "5s")]
    pub kubelet_timeout: GoDuration,
}

/// The validated kubelet client: TLS configurations and address preference.
#[derive(Debug, Clone)]
pub struct KubeletClientConfig {
    /// Verifies the kubelet's serving certificate with `--kubelet-certificate-authority`, or
    /// accepts any (upstream's behaviour without a CA); presents the client certificate.
    pub tls: Arc<ClientConfig>,
    /// Same client certificate, never verifying the kubelet (`insecureSkipTLSVerifyBackend`).
    pub insecure_tls: Arc<ClientConfig>,
    /// For HTTPS backends that are not kubelets (pods, services, other node ports): upstream's
    /// proxy transport does not verify them and presents no client certificate.
    pub backend_tls: Arc<ClientConfig>,
    pub preferred_address_types: Vec<String>,
    /// Dial and TLS handshake timeout.
    pub timeout: Duration,
}

impl Default for KubeletClientConfig {
    /// No client certificate, no verification, upstream's default preference and timeout.
    fn default() -> Self {
        let insecure = Arc::new(client_config(None, None).expect("no files to read"));
        KubeletClientConfig {
            tls: insecure.clone(),
            insecure_tls: insecure.clone(),
            backend_tls: insecure,
            preferred_address_types: ADDRESS_TYPES.iter().map(|s| s.to_string()).collect(),
            timeout: Duration::from_secs(5),
        }
    }
}

impl KubeletClientConfig {
    /// Reads the certificate files and checks the flags, as the config phase does.
    pub fn from_options(o: &KubeletClientOptions) -> anyhow::Result<Self> {
        for t in &o.kubelet_preferred_address_types {
            if !ADDRESS_TYPES.contains(&t.as_str()) {
                anyhow::bail!(
                    "--kubelet-preferred-address-types: unsupported address type {t:?}, \
                     must be one of {}",
                    ADDRESS_TYPES.join(", ")
                );
            }
        }
        if o.kubelet_preferred_address_types.is_empty() {
            anyhow::bail!("--kubelet-preferred-address-types must not be empty");
        }
        let identity = match (&o.kubelet_client_certificate, &o.kubelet_client_key) {
            (Some(cert), Some(key)) => Some(read_identity(cert, key)?),
            (None, None) => None,
            _ => anyhow::bail!(
                "--kubelet-client-certificate and --kubelet-client-key must be given together"
            ),
        };
        let roots = match &o.kubelet_certificate_authority {
            Some(path) => {
                let mut roots = RootCertStore::empty();
                for cert in CertificateDer::pem_file_iter(path)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?
                {
                    let cert = cert.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                    roots
                        .add(cert)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                }
                if roots.is_empty() {
                    anyhow::bail!("{}: no certificates found", path.display());
                }
                Some(Arc::new(roots))
            }
            None => None,
        };
        let copy = identity
            .as_ref()
            .map(|(certs, key)| (certs.clone(), key.clone_key()));
        let tls = client_config(roots, copy)?;
        let insecure_tls = client_config(None, identity)?;
        Ok(KubeletClientConfig {
            tls: Arc::new(tls),
            insecure_tls: Arc::new(insecure_tls),
            backend_tls: Arc::new(client_config(None, None)?),
            preferred_address_types: o.kubelet_preferred_address_types.clone(),
            timeout: o.kubelet_timeout.0,
        })
    }

    /// The kubelet of `node`: its preferred address and its port. A node without any address
    /// of the preferred types is upstream's `NoMatchError`, which reaches clients as a 500.
    pub fn connection(&self, node: &Value) -> Result<(String, u16), ApiError> {
        let host = preferred_address(node, &self.preferred_address_types).ok_or_else(|| {
            ApiError::internal(format!(
                "no preferred addresses found; known addresses: {}",
                go_addresses(node)
            ))
        })?;
        let port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .unwrap_or(DEFAULT_KUBELET_PORT);
        Ok((host, port))
    }
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn read_identity(cert: &PathBuf, key: &PathBuf) -> anyhow::Result<Identity> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{}: no certificates found", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", key.display()))?;
    Ok((certs, key))
}

fn client_config(
    roots: Option<Arc<RootCertStore>>,
    identity: Option<Identity>,
) -> anyhow::Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = match roots {
        Some(roots) => {
            Some(WebPkiServerVerifier::builder_with_provider(roots, provider.clone()).build()?)
        }
        None => None,
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ServerVerifier::new(provider, verifier)));
    let mut config = match identity {
        Some((certs, key)) => builder.with_client_auth_cert(certs, key)?,
        None => builder.with_no_client_auth(),
    };
    // Upgrades (exec, attach, port-forward) need HTTP/1.1.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Upstream's `GetPreferredNodeAddress`: the first address of the first preferred type; a
/// `Hostname` preference is also met by the `kubernetes.io/hostname` label.
pub fn preferred_address(node: &Value, preferred: &[String]) -> Option<String> {
    let addresses = node["status"]["addresses"].as_array();
    for wanted in preferred {
        let found = addresses.into_iter().flatten().find_map(|a| {
            (a["type"].as_str() == Some(wanted.as_str()))
                .then(|| a["address"].as_str().filter(|s| !s.is_empty()))
                .flatten()
        });
        if let Some(found) = found {
            return Some(found.to_string());
        }
        if wanted == "Hostname"
            && let Some(label) = node["metadata"]["labels"]["kubernetes.io/hostname"].as_str()
            && !label.is_empty()
        {
            return Some(label.to_string());
        }
    }
    None
}

/// Go's `%v` of `[]NodeAddress`: `[{InternalIP 10.0.0.1} {Hostname n1}]`.
fn go_addresses(node: &Value) -> String {
    let items: Vec<String> = node["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            format!(
                "{{{} {}}}",
                a["type"].as_str().unwrap_or_default(),
                a["address"].as_str().unwrap_or_default()
            )
        })
        .collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        kubelet: KubeletClientOptions,
    }

    #[test]
    fn flags_default_as_upstream() {
        let cli = Cli::parse_from(["x"]);
        let config = KubeletClientConfig::from_options(&cli.kubelet).unwrap();
        assert_eq!(config.preferred_address_types, ADDRESS_TYPES);
        assert_eq!(config.timeout, Duration::from_secs(5));
        let cli = Cli::parse_from(["x", "--kubelet-preferred-address-types=Bogus"]);
        let err = KubeletClientConfig::from_options(&cli.kubelet).unwrap_err();
        assert!(err.to_string().contains("\"Bogus\""), "{err}");
        let cli = Cli::parse_from(["x", "--kubelet-client-key=/nope"]);
        assert!(KubeletClientConfig::from_options(&cli.kubelet).is_err());
    }

    #[test]
    fn preferred_address_follows_the_order() {
        let node = json!({"metadata": {"labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"addresses": [
                {"type": "ExternalIP", "address": "1.2.3.4"},
                {"type": "InternalIP", "address": "10.0.0.1"}]}});
        let prefs = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            preferred_address(&node, &prefs(&["InternalIP", "ExternalIP"])).as_deref(),
            Some("10.0.0.1")
        );
        assert_eq!(
            preferred_address(&node, &prefs(ADDRESS_TYPES)).as_deref(),
            Some("n1")
        );
        assert_eq!(preferred_address(&node, &prefs(&["InternalDNS"])), None);
    }

    #[test]
    fn connection_uses_the_reported_port_and_upstreams_error() {
        let config = KubeletClientConfig::default();
        let node = json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 4321}}}});
        assert_eq!(
            config.connection(&node).unwrap(),
            ("127.0.0.1".to_string(), 4321)
        );
        let bare = json!({"status": {"addresses": [{"type": "InternalDNS", "address": ""}]}});
        let err = config.connection(&bare).unwrap_err();
        assert_eq!(err.code().as_u16(), 500);
        assert!(
            err.message()
                .ends_with("no preferred addresses found; known addresses: [{InternalDNS }]"),
            "{}",
            err.message()
        );
    }
}
