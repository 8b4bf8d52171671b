//! The run phase: serve until a signal asks to stop, failing readiness while draining.

use super::config::Config;
use component_base::debug::DebugHandlers;
use component_base::signals::shutdown_on_signals;

/// The name of the generated serving certificate pair in `--cert-dir`, as upstream's.
const CERT_PAIR_NAME: &str = "apiserver";

/// Runs kube-apiserver until SIGTERM or SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    tracing::info!(
        version = component_base::version::GIT_VERSION,
        "starting kube-apiserver"
    );
    DebugHandlers::default()
        .serve_until_shutdown(&config.secure_serving, CERT_PAIR_NAME, shutdown)
        .await
}
