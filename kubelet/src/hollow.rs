//! `--hollow`: a TEST mode, as upstream's kubemark hollow node, never the default. The kubelet
//! registers its node, heartbeats, admits and syncs pods and reports them Running exactly as it
//! does on a real node, but its runtime is an in-process fake CRI server (no containers, no
//! network, no images to pull), its cgroups and volumes are no-ops. One machine can carry
//! hundreds of such nodes for the scheduler and controller benchmarks.

mod images;
mod runtime;
mod state;

use anyhow::Context;
use k8s_cri::v1::image_service_server::ImageServiceServer;
use k8s_cri::v1::runtime_service_server::RuntimeServiceServer;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Serves the fake runtime on the unix socket `socket` (replaced if it exists) until
/// `shutdown`; returns its endpoint (`unix://...`) once it accepts connections. Pod addresses
/// are `10.<a>.<b>.<n>` with `a.b` derived from `node_name`.
pub async fn start_runtime(
    socket: &Path,
    node_name: &str,
    mountpoint: &Path,
    shutdown: CancellationToken,
) -> anyhow::Result<String> {
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let _ = std::fs::remove_file(socket);
    let listener = tokio::net::UnixListener::bind(socket)
        .with_context(|| format!("listening on {}", socket.display()))?;
    let state = Arc::default();
    let runtime = runtime::HollowRuntime {
        state: Arc::clone(&state),
        ip_prefix: ip_prefix(node_name),
    };
    let images = images::HollowImages {
        state,
        mountpoint: mountpoint.display().to_string(),
    };
    let incoming = futures::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(stream, _)| stream);
        Some((accepted, listener))
    });
    tokio::spawn(async move {
        let served = tonic::transport::Server::builder()
            .add_service(RuntimeServiceServer::new(runtime))
            .add_service(ImageServiceServer::new(images))
            .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
            .await;
        if let Err(err) = served {
            tracing::error!(error = %err, "the hollow runtime stopped");
        }
    });
    Ok(format!("unix://{}", socket.display()))
}

/// Two octets from the node's name: nodes' pod addresses differ (collisions among hundreds of
/// nodes are possible and harmless: nothing routes to a hollow pod).
fn ip_prefix(node_name: &str) -> [u8; 2] {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(node_name.as_bytes());
    // 10.0/16 and 10.255/16 stay out of it; the third octet leaves room to wrap.
    [digest[0] % 254 + 1, digest[1] % 128]
}

#[cfg(test)]
mod tests;
