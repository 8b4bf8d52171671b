//! The run phase: the HTTPS server on `--port` and the plain healthz port, until a signal.

use super::config::Config;
use anyhow::Context;
use component_base::debug::DebugHandlers;
use component_base::serving::serve;
use component_base::signals::shutdown_on_signals;

/// Runs the kubelet until SIGTERM or SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    let handlers = DebugHandlers::default();
    handlers
        .configz
        .set("kubeletconfig", config.configz()["kubeletconfig"].clone());
    let server = config
        .serving
        .start("kubelet", handlers.clone().service(), shutdown.clone())
        .await?;
    let healthz = match config.healthz_addr {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("failed to listen on --healthz-port {addr}"))?;
            Some(serve(
                listener,
                None,
                handlers.clone().service(),
                shutdown.clone(),
            )?)
        }
        None => None,
    };
    tracing::info!(
        node = %config.node_name,
        version = component_base::version::GIT_VERSION,
        "kubelet started"
    );
    shutdown.cancelled().await;
    handlers.health.mark_shutting_down();
    for server in [server, healthz].into_iter().flatten() {
        server.wait().await;
    }
    Ok(())
}
