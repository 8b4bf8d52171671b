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
Find more information at: https://kubernetes.io/docs/reference/kubectl/",
    // klog's flags are global upstream (`kubectl get pods -v=6`).
    mut_arg("verbosity", |a| a.global(true)),
    mut_arg("vmodule", |a| a.global(true)),
    mut_arg("logging_format", |a| a.global(true)),
    // Upstream lists the global flags under `kubectl options`, not in each command's help.
    mut_args(|a| if a.is_global_set() { a.hide_short_help(true).hide_long_help(true) } else { a })
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
    /// Display one or many resources
    Get(crate::cmd::get::GetArgs),
    /// Print the supported API resources on the server
    ApiResources(crate::cmd::api_resources::ApiResourcesArgs),
    /// Create a resource from a file or from stdin
    Create(crate::cmd::create::CreateArgs),
    /// Delete resources by file names, stdin, resources and names, or by resources and label selector
    Delete(crate::cmd::delete::DeleteArgs),
    /// Replace a resource by file name or stdin
    Replace(crate::cmd::replace::ReplaceArgs),
    /// Apply a configuration to a resource by file name or stdin
    Apply(crate::cmd::apply::ApplyArgs),
    /// Diff the live version against a would-be applied version
    Diff(crate::cmd::diff::DiffArgs),
    /// Edit a resource on the server
    Edit(crate::cmd::edit::EditArgs),
    /// Update fields of a resource
    Patch(crate::cmd::patch::PatchArgs),
    /// Update the labels on a resource
    Label(crate::cmd::label::LabelArgs),
    /// Update the annotations on a resource
    Annotate(crate::cmd::label::LabelArgs),
    /// Set a new size for a deployment, replica set, or replication controller
    Scale(crate::cmd::scale::ScaleArgs),
    /// Modify kubeconfig files
    Config(crate::cmd::config::ConfigArgs),
    /// Provides utilities for interacting with plugins
    Plugin(crate::cmd::plugin::PluginArgs),
    /// Inspect authorization
    Auth(crate::cmd::auth::AuthArgs),
    /// Display cluster information
    ClusterInfo(crate::cmd::cluster_info::ClusterInfoArgs),
    /// Output shell completion code for the specified shell (bash, zsh, fish)
    Completion(crate::cmd::completion::CompletionArgs),
    /// Print the list of flags inherited by all commands
    Options(crate::cmd::options::OptionsArgs),
    /// Modify certificate resources
    Certificate(crate::cmd::certificate::CertificateArgs),
    /// Print the supported API versions on the server, in the form of "group/version"
    ApiVersions(crate::cmd::api_versions::ApiVersionsArgs),
    /// Show details of a specific resource or group of resources
    Describe(crate::cmd::describe::DescribeArgs),
    /// List events
    Events(crate::cmd::events::EventsArgs),
    /// Mark node as unschedulable
    Cordon(crate::cmd::cordon::CordonArgs),
    /// Mark node as schedulable
    Uncordon(crate::cmd::cordon::CordonArgs),
    /// Drain node in preparation for maintenance
    Drain(crate::cmd::drain::DrainArgs),
    /// Update the taints on one or more nodes
    Taint(crate::cmd::taint::TaintArgs),
    /// Display resource (CPU/memory) usage
    Top(crate::cmd::top::TopArgs),
    /// Get documentation for a resource
    Explain(crate::cmd::explain::ExplainArgs),
    /// Run a particular image on the cluster
    Run(crate::cmd::run::RunArgs),
    /// Take a replication controller, service, deployment or pod and expose it as a new Kubernetes service
    Expose(crate::cmd::expose::ExposeArgs),
    /// Set specific features on objects
    Set(crate::cmd::set::SetArgs),
    /// Manage the rollout of a resource
    Rollout(crate::cmd::rollout::RolloutArgs),
    /// Auto-scale a deployment, replica set, stateful set, or replication controller
    Autoscale(crate::cmd::autoscale::AutoscaleArgs),
    /// Experimental: Wait for a specific condition on one or many resources
    Wait(crate::cmd::wait::WaitArgs),
    /// Execute a command in a container
    Exec(crate::cmd::exec::ExecArgs),
    /// Attach to a running container
    Attach(crate::cmd::attach::AttachArgs),
    /// Print the logs for a container in a pod
    Logs(crate::cmd::logs::LogsArgs),
    /// Forward one or more local ports to a pod
    PortForward(crate::cmd::portforward::PortForwardArgs),
    /// Copy files and directories to and from containers
    Cp(crate::cmd::cp::CpArgs),
    /// Run a proxy to the Kubernetes API server
    Proxy(crate::cmd::proxy::ProxyArgs),
    /// Create debugging sessions for troubleshooting workloads and nodes
    Debug(crate::cmd::debug::DebugArgs),
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

    /// The name of the kubeconfig cluster to use
    #[arg(long, global = true, value_name = "string")]
    pub cluster: Option<String>,

    /// The name of the kubeconfig user to use
    #[arg(long, global = true, value_name = "string")]
    pub user: Option<String>,

    /// Path to a cert file for the certificate authority
    #[arg(long, global = true, value_name = "string")]
    pub certificate_authority: Option<PathBuf>,

    /// Path to a client certificate file for TLS
    #[arg(long, global = true, value_name = "string")]
    pub client_certificate: Option<PathBuf>,

    /// Path to a client key file for TLS
    #[arg(long, global = true, value_name = "string")]
    pub client_key: Option<PathBuf>,

    /// Username to impersonate for the operation. User could be a regular user or a service
    /// account in a namespace.
    #[arg(long = "as", global = true, value_name = "string")]
    pub as_user: Option<String>,

    /// Group to impersonate for the operation, this flag can be repeated to specify multiple
    /// groups.
    #[arg(long = "as-group", global = true, value_name = "stringArray")]
    pub as_group: Vec<String>,

    /// The length of time to wait before giving up on a single server request. Non-zero values
    /// should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't
    /// timeout requests.
    #[arg(long, global = true, value_name = "string", default_value = "0")]
    pub request_timeout: String,

    /// Default cache directory
    #[arg(long, global = true, value_name = "string")]
    pub cache_dir: Option<PathBuf>,
}
