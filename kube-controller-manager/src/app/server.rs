//! The run phase: serve health, metrics and configz until a signal asks to stop.

use super::config::{COMPONENT, Config};
use component_base::debug::DebugHandlers;
use component_base::signals::shutdown_on_signals;

/// Runs kube-controller-manager until SIGTERM or SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    let handlers = DebugHandlers::default();
    handlers
        .configz
        .set("kubecontrollermanager.config.k8s.io", config.configz());
    tracing::info!(
        version = component_base::version::GIT_VERSION,
        controllers = config.controllers.len(),
        "starting kube-controller-manager"
    );
    handlers
        .serve_until_shutdown(&config.secure_serving, COMPONENT, shutdown)
        .await
}
