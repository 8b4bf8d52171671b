//! kubectl's global flags and its commands.

use clap::{Args, Parser, Subcommand};
use component_base::logs::LogOptions;
use std::path::PathBuf;

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl",
    disable_version_flag = true,
    about = "kubectl controls the Kubernetes cluster manager.",
    long_about = "kubectl controls the Kubernetes cluster manager.\n\n \
Find more information at: https://kubernetes.io/docs/reference/kubectl/"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(flatten)]
    pub logs: LogOptions,
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the client and server version information
    Version(crate::cmd::version::VersionArgs),
}

/// Flags every command takes (upstream's `kubectl options`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global flags")]
pub struct GlobalOptions {
    /// Path to the kubeconfig file to use for CLI requests.
    #[arg(long, global = true, value_name = "string")]
    pub kubeconfig: Option<PathBuf>,

    /// The name of the kubeconfig context to use
    #[arg(long, global = true, value_name = "string")]
    pub context: Option<String>,

    /// The address and port of the Kubernetes API server
    #[arg(short = 's', long, global = true, value_name = "string")]
    pub server: Option<String>,

    /// Bearer token for authentication to the API server
    #[arg(long, global = true, value_name = "string")]
    pub token: Option<String>,

    /// If true, the server's certificate will not be checked for validity. This will make your
    /// HTTPS connections insecure
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,

    /// If present, the namespace scope for this CLI request
    #[arg(short = 'n', long, global = true, value_name = "string")]
    pub namespace: Option<String>,
}
