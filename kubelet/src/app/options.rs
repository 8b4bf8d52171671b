//! The command line of the kubelet, with upstream's flag names.

use super::config::Config;
use clap::{Args, Parser};
use component_base::cli::{CommonFlags, ComponentOptions};
use std::net::IpAddr;
use std::path::PathBuf;

/// The kubelet's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kubelet",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The kubelet is the primary \"node agent\" that runs on each node.",
    long_about = "The kubelet is the primary \"node agent\" that runs on each node. It registers \
the node with the apiserver and runs the pods bound to it through the container runtime."
)]
pub struct Options {
    #[command(flatten)]
    pub kubelet: KubeletFlags,
    #[command(flatten)]
    pub serving: ServingFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Where the kubelet keeps its state and how it reaches the apiserver.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Kubelet flags")]
pub struct KubeletFlags {
    /// Path to a kubeconfig file, specifying how to connect to the API server.
    #[arg(long, value_name = "string")]
    pub kubeconfig: Option<PathBuf>,

    /// If non-empty, will use this string as identification instead of the actual hostname.
    #[arg(long, value_name = "string")]
    pub hostname_override: Option<String>,

    /// Directory path for managing kubelet files (volume mounts, etc).
    #[arg(long, value_name = "string", default_value = "/var/lib/kubelet")]
    pub root_dir: PathBuf,
}

/// The kubelet's own serving flags (it does not use the control plane's `--secure-port`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Serving flags")]
pub struct ServingFlags {
    /// The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for listening on all
    /// interfaces and IP address families).
    #[arg(long, value_name = "ip", default_value = "0.0.0.0")]
    pub address: IpAddr,

    /// The port for the Kubelet to serve on.
    #[arg(long, value_name = "int32", default_value_t = 10250)]
    pub port: u16,

    /// The directory where the TLS certs are located. If --tls-cert-file and
    /// --tls-private-key-file are provided, this flag will be ignored.
    #[arg(long, value_name = "string", default_value = "/var/lib/kubelet/pki")]
    pub cert_dir: PathBuf,

    /// File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any,
    /// concatenated after server cert).
    #[arg(long, value_name = "string", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing x509 private key matching --tls-cert-file.
    #[arg(long, value_name = "string", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// The IP address for the healthz server to serve on.
    #[arg(long, value_name = "ip", default_value = "127.0.0.1")]
    pub healthz_bind_address: IpAddr,

    /// The port of the localhost healthz endpoint (set to 0 to disable).
    #[arg(long, value_name = "int32", default_value_t = 10248)]
    pub healthz_port: u16,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}
