//! The command line of kube-apiserver, with upstream's flag names and sections.

use super::config::Config;
use clap::{Args, Parser};
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::duration::GoDuration;
use component_base::serving::SecureServingOptions;
use std::net::IpAddr;
use std::path::PathBuf;

/// The port upstream's apiserver serves HTTPS on.
pub const DEFAULT_SECURE_PORT: u16 = 6443;

/// kube-apiserver's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-apiserver",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The Kubernetes API server validates and configures data for the api objects which \
include pods, services, replicationcontrollers, and others."
)]
pub struct Options {
    #[command(flatten)]
    pub generic: GenericOptions,
    #[command(flatten)]
    pub etcd: EtcdOptions,
    #[command(flatten)]
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    #[command(flatten)]
    pub authentication: AuthenticationOptions,
    #[command(flatten)]
    pub authorization: AuthorizationOptions,
    #[command(flatten)]
    pub admission: AdmissionOptions,
    #[command(flatten)]
    pub audit: AuditOptions,
    #[command(flatten)]
    pub misc: MiscOptions,
    #[command(flatten)]
    pub kubelet: crate::rest::proxy::KubeletClientOptions,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Upstream's "Generic flags".
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Generic flags")]
pub struct GenericOptions {
    /// The IP address on which to advertise the apiserver to members of the cluster. If blank,
    /// the --bind-address will be used; if that is unspecified, the host's default interface.
    #[arg(long, value_name = "ip")]
    pub advertise_address: Option<IpAddr>,

    /// This and --max-mutating-requests-inflight are summed to determine the server's total
    /// concurrency limit. This flag is the maximum number of non-mutating requests in flight at a
    /// given time.
    #[arg(long, value_name = "int", default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// The maximum number of mutating requests in flight at a given time.
    #[arg(long, value_name = "int", default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// An optional field indicating the duration a handler must keep a request open before
    /// timing it out. This is the default request timeout for requests but may be overridden
    /// by the timeout query parameter (to a shorter one only).
    #[arg(long, value_name = "duration", default_value = "1m0s")]
    pub request_timeout: component_base::duration::GoDuration,
}

/// Upstream's "Etcd flags", plus where the embedded store keeps its data.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Etcd flags")]
pub struct EtcdOptions {
    /// List of etcd servers to connect with (scheme://ip:port), comma separated. When empty,
    /// the embedded single-node store under --data-dir is used.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// The prefix to prepend to all resource paths in etcd.
    #[arg(long, value_name = "string", default_value = "/registry")]
    pub etcd_prefix: String,

    /// The interval of compaction requests. If 0, the compaction request from apiserver is
    /// disabled.
    #[arg(long, value_name = "duration", default_value = "5m0s")]
    pub etcd_compaction_interval: GoDuration,

    /// Where the embedded store (used when --etcd-servers is empty) keeps its data.
    #[arg(long, value_name = "string", default_value = "/var/lib/kube-apiserver")]
    pub data_dir: PathBuf,
}

/// Upstream's "Authentication flags".
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Authentication flags")]
pub struct AuthenticationOptions {
    /// If set, any request presenting a client certificate signed by one of the authorities in
    /// the client-ca-file is authenticated with an identity corresponding to the CommonName of
    /// the client certificate.
    #[arg(long, value_name = "string")]
    pub client_ca_file: Option<PathBuf>,

    /// Enable to allow secrets of type 'bootstrap.kubernetes.io/token' in the 'kube-system'
    /// namespace to be used for TLS bootstrapping authentication.
    #[arg(long, value_name = "bool", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub enable_bootstrap_token_auth: bool,

    /// Identifiers of the API. The service account token authenticator will validate that
    /// tokens used against the API are bound to at least one of these audiences. If the
    /// --service-account-issuer flag is configured and this flag is not, this field defaults
    /// to a single element list containing the issuer URL.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// Identifier of the service account token issuer. The issuer will assert this identifier
    /// in "iss" claim of issued tokens. When this flag is specified multiple times, the first
    /// is used to generate tokens and all are used to determine which issuers are accepted.
    #[arg(long, value_name = "stringArray", action = clap::ArgAction::Append)]
    pub service_account_issuer: Vec<String>,

    /// File containing PEM-encoded x509 RSA or ECDSA private or public keys, used to verify
    /// ServiceAccount tokens. The specified file can contain multiple keys, and the flag can be
    /// specified multiple times with different files. If unspecified,
    /// --tls-private-key-file is used.
    #[arg(long, value_name = "stringArray", action = clap::ArgAction::Append)]
    pub service_account_key_file: Vec<PathBuf>,

    /// Path to the file that contains the current private key of the service account token
    /// issuer. The issuer will sign issued ID tokens with this private key.
    #[arg(long, value_name = "string")]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// If true, validate ServiceAccount tokens exist in etcd as part of authentication.
    #[arg(long, value_name = "bool", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub service_account_lookup: bool,

    /// The maximum validity duration of a token created by the service account token issuer.
    /// If an otherwise valid TokenRequest with a validity duration larger than this value is
    /// requested, a token will be issued with a validity duration of this value.
    #[arg(long, value_name = "duration")]
    pub service_account_max_token_expiration: Option<GoDuration>,

    /// If set, the file that will be used to secure the secure port of the API server via token
    /// authentication.
    #[arg(long, value_name = "string")]
    pub token_auth_file: Option<PathBuf>,

    /// Enables anonymous requests to the secure port of the API server. Requests that are not
    /// rejected by another authentication method are treated as anonymous requests.
    #[arg(long, value_name = "bool", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,
}

/// Upstream's "Authorization flags".
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Authorization flags")]
pub struct AuthorizationOptions {
    /// Ordered list of plug-ins to do authorization on secure port. Supported:
    /// AlwaysAllow, AlwaysDeny, Node, RBAC.
    #[arg(
        long,
        value_name = "strings",
        value_delimiter = ',',
        default_value = "AlwaysAllow"
    )]
    pub authorization_mode: Vec<String>,
}

/// Upstream's "Admission flags".
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Admission flags")]
pub struct AdmissionOptions {
    /// admission plugins that should be enabled in addition to default enabled ones
    /// (NamespaceLifecycle, LimitRanger, ServiceAccount, TaintNodesByCondition, PodSecurity,
    /// Priority, DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection,
    /// RuntimeClass, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, ResourceQuota).
    /// The order of plugins in this flag does not matter.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// admission plugins that should be disabled although they are in the default enabled
    /// plugins list. The order of plugins in this flag does not matter.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
}

/// Upstream's audit flags (in its "Auditing flags" section): the policy and the log backend.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Auditing flags")]
pub struct AuditOptions {
    /// Path to the file that defines the audit policy configuration.
    #[arg(long, value_name = "string")]
    pub audit_policy_file: Option<PathBuf>,

    /// If set, all requests coming to the apiserver will be logged to this file.  '-' means
    /// standard out.
    #[arg(long, value_name = "string")]
    pub audit_log_path: Option<PathBuf>,

    /// The maximum number of days to retain old audit log files based on the timestamp encoded
    /// in their filename.
    #[arg(
        long,
        value_name = "int",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub audit_log_maxage: i64,

    /// The maximum number of old audit log files to retain. Setting a value of 0 will mean
    /// there's no restriction on the number of files.
    #[arg(
        long,
        value_name = "int",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub audit_log_maxbackup: i64,

    /// The maximum size in megabytes of the audit log file before it gets rotated.
    #[arg(
        long,
        value_name = "int",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub audit_log_maxsize: i64,

    /// If set, the rotated log files will be compressed using gzip.
    #[arg(long, value_name = "bool", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub audit_log_compress: bool,

    /// Format of saved audits. "legacy" indicates 1-line text format for each event. "json"
    /// indicates structured json format. Known formats are legacy,json.
    #[arg(long, value_name = "string", default_value = "json")]
    pub audit_log_format: String,

    /// Strategy for sending audit events. Blocking indicates sending events should block
    /// server responses. Batch causes the backend to buffer and write events asynchronously.
    /// Known modes are batch,blocking,blocking-strict.
    #[arg(long, value_name = "string", default_value = "blocking")]
    pub audit_log_mode: String,

    /// The size of the buffer to store events before batching and writing. Only used in batch
    /// mode.
    #[arg(
        long,
        value_name = "int",
        default_value_t = 10000,
        allow_negative_numbers = true
    )]
    pub audit_log_batch_buffer_size: i64,

    /// API group and version used for serializing audit events written to log.
    #[arg(long, value_name = "string", default_value = "audit.k8s.io/v1")]
    pub audit_log_version: String,
}

/// Upstream's "Misc flags" for services.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Misc flags")]
pub struct MiscOptions {
    /// A CIDR notation IP range from which to assign service cluster IPs.
    #[arg(long, value_name = "string", default_value = "10.0.0.0/24")]
    pub service_cluster_ip_range: String,

    /// A port range to reserve for services with NodePort visibility. Example: '30000-32767'.
    /// Inclusive at both ends of the range.
    #[arg(long, value_name = "portRange", default_value = "30000-32767")]
    pub service_node_port_range: String,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}
