//! The validated, completed configuration kube-apiserver runs with.

use super::options::{DEFAULT_SECURE_PORT, Options};
pub use crate::admission::AdmissionConfig;
pub use crate::registry::services::Ipv4Cidr;
use anyhow::{Context, bail};
use component_base::serving::SecureServingOptions;
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

/// Where upstream keeps the generated serving certificate when no `--cert-dir` is given.
pub const DEFAULT_CERT_DIR: &str = "/var/run/kubernetes";

/// Which storage backend holds the objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageConfig {
    /// The embedded single-node store under this directory.
    Embedded { data_dir: PathBuf },
    /// etcd at these endpoints, keys under `prefix`.
    Etcd {
        servers: Vec<String>,
        prefix: String,
    },
}

/// The authorizers `--authorization-mode` may name today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthorizationMode {
    AlwaysAllow,
    AlwaysDeny,
    Node,
    Rbac,
}

/// The service account token settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceAccountConfig {
    /// `--service-account-issuer`: the first signs, all are accepted.
    pub issuers: Vec<String>,
    /// `--service-account-key-file` (or the serving key when none is given).
    pub key_files: Vec<PathBuf>,
    pub signing_key_file: Option<PathBuf>,
    /// `--service-account-lookup`.
    pub lookup: bool,
    pub max_token_expiration: Option<Duration>,
}

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    pub storage: StorageConfig,
    /// How often the apiserver compacts storage history; None disables it.
    pub compaction_interval: Option<Duration>,
    pub token_auth_file: Option<PathBuf>,
    pub anonymous_auth: bool,
    pub client_ca_file: Option<PathBuf>,
    pub enable_bootstrap_token_auth: bool,
    /// `--api-audiences`, defaulted to the first issuer.
    pub api_audiences: Vec<String>,
    pub service_accounts: ServiceAccountConfig,
    pub authorization_modes: Vec<AuthorizationMode>,
    pub admission: AdmissionConfig,
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
    /// `--request-timeout`.
    pub request_timeout: std::time::Duration,
    pub service_cluster_ip_range: Ipv4Cidr,
    pub service_node_port_range: RangeInclusive<u16>,
    /// The address the `kubernetes` service's endpoints point at.
    pub advertise_address: IpAddr,
    /// `--audit-policy-file` (read and validated) and `--audit-log-*`.
    pub audit: crate::audit::AuditConfig,
    /// `--kubelet-*`: how logs, exec, attach, port-forward and proxy reach kubelets.
    pub kubelet_client: crate::rest::proxy::KubeletClientConfig,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Validates the options and fills in derived defaults.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        let mut secure_serving = options.secure_serving;
        // Bad TLS flags are flag errors, not a failure when serving starts.
        secure_serving.tls_settings()?;
        // Unlike the scheduler and controller manager, the apiserver cannot run without HTTPS.
        if secure_serving.secure_port == 0 {
            bail!("invalid --secure-port 0: must be between 1 and 65535, inclusive");
        }
        secure_serving
            .cert_dir
            .get_or_insert_with(|| PathBuf::from(DEFAULT_CERT_DIR));

        let etcd = options.etcd;
        let servers: Vec<String> = etcd
            .etcd_servers
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        for server in &servers {
            if !(server.starts_with("http://") || server.starts_with("https://")) {
                bail!(
                    "invalid --etcd-servers {server:?}: must be a URL such as http://127.0.0.1:2379"
                );
            }
        }
        if !etcd.etcd_prefix.starts_with('/') {
            bail!(
                "invalid --etcd-prefix {:?}: must start with /",
                etcd.etcd_prefix
            );
        }
        let storage = if servers.is_empty() {
            StorageConfig::Embedded {
                data_dir: etcd.data_dir,
            }
        } else {
            StorageConfig::Etcd {
                servers,
                prefix: etcd.etcd_prefix,
            }
        };

        let authorization_modes = options
            .authorization
            .authorization_mode
            .iter()
            .map(|mode| match mode.trim() {
                "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
                "AlwaysDeny" => Ok(AuthorizationMode::AlwaysDeny),
                "Node" => Ok(AuthorizationMode::Node),
                "RBAC" => Ok(AuthorizationMode::Rbac),
                "Webhook" | "ABAC" => bail!(
                    "--authorization-mode {mode:?} is not supported yet: supported modes are AlwaysAllow, AlwaysDeny, Node, RBAC"
                ),
                other => bail!("authorization-mode {other:?} is not a valid mode"),
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        if authorization_modes.is_empty() {
            bail!("at least one authorization-mode must be passed");
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = authorization_modes.iter().find(|m| !seen.insert(**m)) {
            bail!("authorization-mode {dup:?} has mode specified more than once");
        }
        let authn = options.authentication;
        for (flag, path) in [
            ("--token-auth-file", &authn.token_auth_file),
            ("--client-ca-file", &authn.client_ca_file),
            (
                "--service-account-signing-key-file",
                &authn.service_account_signing_key_file,
            ),
        ] {
            if let Some(path) = path {
                std::fs::metadata(path)
                    .with_context(|| format!("invalid {flag} {}", path.display()))?;
            }
        }
        for path in &authn.service_account_key_file {
            std::fs::metadata(path).with_context(|| {
                format!("invalid --service-account-key-file {}", path.display())
            })?;
        }
        let issuers: Vec<String> = authn
            .service_account_issuer
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if authn.service_account_signing_key_file.is_some() && issuers.is_empty() {
            bail!(
                "service-account-issuer is a required flag when service-account-signing-key-file is set"
            );
        }
        for issuer in &issuers {
            if issuer.contains(':') && !issuer.starts_with("https://") {
                bail!("service-account-issuer {issuer:?} contained a ':' but was not a valid URL");
            }
        }
        let mut key_files = authn.service_account_key_file.clone();
        if key_files.is_empty()
            && let Some(key) = &secure_serving.tls_private_key_file
        {
            key_files.push(key.clone());
        }
        let api_audiences = if authn.api_audiences.is_empty() {
            issuers.iter().take(1).cloned().collect()
        } else {
            authn.api_audiences.clone()
        };
        let max_token_expiration = authn.service_account_max_token_expiration.map(|d| d.0);
        if let Some(max) = max_token_expiration
            && max < Duration::from_secs(3600)
        {
            bail!("service-account-max-token-expiration {max:?} must be at least one hour");
        }
        let admission = AdmissionConfig {
            enable: options.admission.enable_admission_plugins.clone(),
            disable: options.admission.disable_admission_plugins.clone(),
        };
        admission
            .resolve()
            .map_err(|e| anyhow::anyhow!("invalid admission plugins: {e}"))?;

        let service_cluster_ip_range = Ipv4Cidr::parse(&options.misc.service_cluster_ip_range)
            .map_err(|e| anyhow::anyhow!("invalid --service-cluster-ip-range: {e}"))?;
        if service_cluster_ip_range.size() < 8 {
            bail!("invalid --service-cluster-ip-range: the range is too small to hold services");
        }
        let service_node_port_range = parse_port_range(&options.misc.service_node_port_range)
            .map_err(|e| anyhow::anyhow!("invalid --service-node-port-range: {e}"))?;

        let advertise_address = options
            .generic
            .advertise_address
            .or_else(|| {
                let bind = secure_serving.bind_address;
                (!bind.is_unspecified()).then_some(bind)
            })
            .unwrap_or_else(default_interface_address);
        let audit = audit_config(&options.audit)?;
        let kubelet_client =
            crate::rest::proxy::KubeletClientConfig::from_options(&options.kubelet)?;

        Ok(Self {
            secure_serving,
            storage,
            compaction_interval: Some(etcd.etcd_compaction_interval.0).filter(|d| !d.is_zero()),
            token_auth_file: authn.token_auth_file,
            anonymous_auth: authn.anonymous_auth,
            client_ca_file: authn.client_ca_file,
            enable_bootstrap_token_auth: authn.enable_bootstrap_token_auth,
            api_audiences,
            service_accounts: ServiceAccountConfig {
                issuers,
                key_files,
                signing_key_file: authn.service_account_signing_key_file,
                lookup: authn.service_account_lookup,
                max_token_expiration,
            },
            authorization_modes,
            admission,
            max_requests_inflight: options.generic.max_requests_inflight,
            max_mutating_requests_inflight: options.generic.max_mutating_requests_inflight,
            request_timeout: options.generic.request_timeout.0,
            service_cluster_ip_range,
            service_node_port_range,
            advertise_address,
            audit,
            kubelet_client,
        })
    }
}

/// Validates the audit flags as upstream: the log flags only matter with a path, and a policy
/// file that cannot be read or is invalid stops the start.
fn audit_config(o: &super::options::AuditOptions) -> anyhow::Result<crate::audit::AuditConfig> {
    use crate::audit::log::{DEFAULT_BATCH_BUFFER_SIZE, Format, LogConfig, Mode};
    use crate::audit::rotate::Rotation;
    let policy = o
        .audit_policy_file
        .as_deref()
        .filter(|p| !p.as_os_str().is_empty())
        .map(crate::audit::policy::Policy::load)
        .transpose()
        .map_err(|e| anyhow::anyhow!("loading audit policy file: {e}"))?;
    let Some(path) = o
        .audit_log_path
        .clone()
        .filter(|p| !p.as_os_str().is_empty())
    else {
        return Ok(crate::audit::AuditConfig { policy, log: None });
    };
    let format = Format::parse(&o.audit_log_format).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid audit log format {}, allowed formats are {:?}",
            o.audit_log_format,
            Format::ALLOWED
        )
    })?;
    let mode = Mode::parse(&o.audit_log_mode).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid audit log mode {}, allowed modes are {:?}",
            o.audit_log_mode,
            Mode::ALLOWED
        )
    })?;
    if mode == Mode::Batch && o.audit_log_batch_buffer_size <= 0 {
        bail!(
            "invalid audit batch log buffer size {}, must be a positive number",
            o.audit_log_batch_buffer_size
        );
    }
    if o.audit_log_version != crate::audit::policy::API_VERSION {
        bail!(
            "invalid --audit-log-version {:?}: only {} is supported",
            o.audit_log_version,
            crate::audit::policy::API_VERSION
        );
    }
    for (flag, value) in [
        ("--audit-log-maxage", o.audit_log_maxage),
        ("--audit-log-maxbackup", o.audit_log_maxbackup),
        ("--audit-log-maxsize", o.audit_log_maxsize),
    ] {
        if value < 0 {
            bail!("{flag} {value} can't be a negative number");
        }
    }
    if o.audit_log_compress {
        bail!(
            "--audit-log-compress is not supported yet: rotated audit logs are kept uncompressed"
        );
    }
    Ok(crate::audit::AuditConfig {
        policy,
        log: Some(LogConfig {
            path,
            rotation: Rotation {
                max_size_mb: o.audit_log_maxsize as u64,
                max_backups: o.audit_log_maxbackup as usize,
                max_age_days: o.audit_log_maxage as u64,
            },
            format,
            mode,
            batch_buffer_size: usize::try_from(o.audit_log_batch_buffer_size)
                .unwrap_or(DEFAULT_BATCH_BUFFER_SIZE),
        }),
    })
}

/// Parses upstream's port range syntax: `30000-32767` or `30000+2767`.
fn parse_port_range(s: &str) -> Result<RangeInclusive<u16>, String> {
    let invalid = || format!("{s:?} is not a port range (e.g. 30000-32767)");
    let (low, high) = if let Some((low, high)) = s.split_once('-') {
        let low: u16 = low.trim().parse().map_err(|_| invalid())?;
        (low, high.trim().parse::<u16>().map_err(|_| invalid())?)
    } else if let Some((low, size)) = s.split_once('+') {
        let low: u16 = low.trim().parse().map_err(|_| invalid())?;
        let size: u16 = size.trim().parse().map_err(|_| invalid())?;
        (low, low.checked_add(size).ok_or_else(invalid)?)
    } else {
        return Err(invalid());
    };
    if low == 0 || high < low {
        return Err(invalid());
    }
    Ok(low..=high)
}

/// The address of the interface the default route leaves by (no packet is sent: connecting a
/// UDP socket only picks the route); loopback when the host has no route out.
fn default_interface_address() -> IpAddr {
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| {
            socket.connect("192.0.2.1:9")?;
            socket.local_addr()
        })
        .map(|addr| addr.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_ranges() {
        assert_eq!(parse_port_range("30000-32767").unwrap(), 30000..=32767);
        assert_eq!(parse_port_range("30000+10").unwrap(), 30000..=30010);
        for bad in ["", "30000", "5-1", "0-10", "a-b", "65535+1"] {
            assert!(parse_port_range(bad).is_err(), "{bad}");
        }
    }
}
