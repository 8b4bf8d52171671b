//! Client configuration, as client-go's `clientcmd` and `rest.Config`: where to find the
//! apiserver and credentials, plus the client-side rate limit and user agent.
//!
//! kube parses kubeconfig files and builds the HTTP client; this module adds client-go's loading
//! precedence (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, in-cluster), `--master`,
//! QPS/burst and the user agent.

mod environment;
mod error;
mod loader;
mod rate_limit;
mod user_agent;

pub use environment::Environment;
pub use error::ConfigError;
pub use loader::{
    ClientConfig, DEFAULT_BURST, DEFAULT_QPS, component_client, load_client_config,
    load_client_config_from,
};
pub use rate_limit::{RateLimitLayer, RateLimited, TokenBucket};
pub use user_agent::{build_user_agent, default_user_agent};
