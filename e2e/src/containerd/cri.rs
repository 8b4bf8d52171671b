//! A CRI v1 client over containerd's unix socket (k8s-cri on tonic), with what the harness
//! needs from it: readiness at start and removing every sandbox at the end.

use anyhow::Context as _;
use hyper_util::rt::TokioIo;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    ListPodSandboxRequest, PodSandboxStatusRequest, RemovePodSandboxRequest, StatusRequest,
    StopPodSandboxRequest, VersionRequest,
};
use std::path::{Path, PathBuf};
use tonic::transport::{Channel, Endpoint, Uri};

/// A channel to the CRI server listening on `socket`. The URI is a placeholder: every
/// connection goes to the socket.
pub async fn channel(socket: &Path) -> anyhow::Result<Channel> {
    let socket = socket.to_path_buf();
    Endpoint::try_from("http://[::]:50051")?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .context("connecting to the CRI socket")
}

/// Ok when CRI answers `Version` for v1 and `Status` reports the runtime and the network ready
/// (the CNI conflist loaded).
pub async fn ready(socket: PathBuf) -> anyhow::Result<()> {
    let mut client = RuntimeServiceClient::new(channel(&socket).await?);
    let version = client
        .version(VersionRequest {
            version: "v1".into(),
        })
        .await?
        .into_inner();
    anyhow::ensure!(
        version.runtime_api_version == "v1",
        "CRI API {}",
        version.runtime_api_version
    );
    let status = client
        .status(StatusRequest { verbose: false })
        .await?
        .into_inner()
        .status
        .context("Status without status")?;
    let not_ready: Vec<String> = status
        .conditions
        .iter()
        .filter(|c| !c.status)
        .map(|c| format!("{}: {} {}", c.r#type, c.reason, c.message))
        .collect();
    anyhow::ensure!(not_ready.is_empty(), "not ready: {}", not_ready.join("; "));
    Ok(())
}

/// Stops and removes every pod sandbox (and so its containers, network and mounts).
pub async fn remove_all(socket: PathBuf) -> anyhow::Result<()> {
    let mut client = RuntimeServiceClient::new(channel(&socket).await?);
    let sandboxes = client
        .list_pod_sandbox(ListPodSandboxRequest { filter: None })
        .await?
        .into_inner()
        .items;
    for sandbox in sandboxes {
        let id = sandbox.id;
        client
            .stop_pod_sandbox(StopPodSandboxRequest {
                pod_sandbox_id: id.clone(),
            })
            .await?;
        client
            .remove_pod_sandbox(RemovePodSandboxRequest { pod_sandbox_id: id })
            .await?;
    }
    Ok(())
}

/// Stops and removes the pod sandboxes whose verbose status mentions `marker` (e.g. a
/// kubelet's cgroup root in their cgroup parent).
pub async fn remove_matching(socket: PathBuf, marker: String) -> anyhow::Result<()> {
    let mut client = RuntimeServiceClient::new(channel(&socket).await?);
    let sandboxes = client
        .list_pod_sandbox(ListPodSandboxRequest { filter: None })
        .await?
        .into_inner()
        .items;
    for sandbox in sandboxes {
        let status = client
            .pod_sandbox_status(PodSandboxStatusRequest {
                pod_sandbox_id: sandbox.id.clone(),
                verbose: true,
            })
            .await?
            .into_inner();
        if !status.info.values().any(|v| v.contains(&marker)) {
            continue;
        }
        client
            .stop_pod_sandbox(StopPodSandboxRequest {
                pod_sandbox_id: sandbox.id.clone(),
            })
            .await?;
        client
            .remove_pod_sandbox(RemovePodSandboxRequest {
                pod_sandbox_id: sandbox.id,
            })
            .await?;
    }
    Ok(())
}

/// Runs `future` to completion on a runtime of its own in another thread, so sync code (start,
/// drop) can call CRI whether or not the caller is inside a tokio runtime.
pub fn blocking<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> anyhow::Result<T> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| rt.block_on(future))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the CRI thread panicked"))?
    .context("building a runtime")
}
