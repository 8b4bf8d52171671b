//! What every daemon shares, as upstream's `k8s.io/component-base`: the command line's error
//! handling, logging with klog's verbosity levels, the health, metrics, configz and version
//! endpoints, HTTPS serving with a self-signed fallback, and shutdown on signals.

pub mod cli;
pub mod client_flags;
pub mod configz;
pub mod debug;
pub mod duration;
pub mod healthz;
pub mod leaderelection;
pub mod logs;
pub mod metrics;
pub mod serving;
pub mod signals;
pub mod version;
