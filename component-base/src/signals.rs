//! Graceful shutdown on SIGTERM or SIGINT; a second signal exits at once, as upstream does.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Exit status after a second signal interrupts a graceful shutdown.
const EXIT_ON_SECOND_SIGNAL: i32 = 1;

/// A token cancelled at the first SIGTERM or SIGINT. Must be called inside a tokio runtime.
pub fn shutdown_on_signals() -> std::io::Result<CancellationToken> {
    let token = CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("received SIGTERM, shutting down"),
            _ = int.recv() => tracing::info!("received SIGINT, shutting down"),
        }
        cancel.cancel();
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!("second signal received, exiting now");
        std::process::exit(EXIT_ON_SECOND_SIGNAL);
    });
    Ok(token)
}
