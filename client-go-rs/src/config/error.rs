//! Config loading errors.

use std::path::PathBuf;

/// Why no client configuration could be built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No kubeconfig, no `--master`, not in a cluster (client-go's `ErrEmptyConfig`).
    #[error(
        "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable"
    )]
    Empty,
    /// The explicit `--kubeconfig` file does not exist.
    #[error("stat {}: no such file or directory", .0.display())]
    KubeconfigNotFound(PathBuf),
    /// `--context` names a context the kubeconfig does not have.
    #[error("context was not found for specified context: {0}")]
    ContextNotFound(String),
    /// The kubeconfig has no current context and none was given.
    #[error("invalid configuration: no current context is set and no --context was given")]
    NoCurrentContext,
    /// kube could not read or use the kubeconfig.
    #[error("invalid kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// A server URL (from `--master` or the in-cluster environment) does not parse.
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidServer {
        /// The URL as given.
        url: String,
        /// Why it is invalid.
        reason: String,
    },
    /// In-cluster variables are set but the service account files are unusable.
    #[error("unable to load in-cluster configuration: {0}")]
    InCluster(String),
    /// The user agent is not a valid header value.
    #[error("invalid user agent {0:?}")]
    InvalidUserAgent(String),
    /// kube could not build the HTTP client (TLS material, auth plugins...).
    #[error("unable to build client: {0}")]
    Client(#[from] kube::Error),
}
