//! The CRI gRPC client: runtime and image services over the runtime's unix socket, every call
//! bounded by the runtime request timeout (a hung runtime must not hang a pod worker).

use hyper_util::rt::TokioIo;
use k8s_cri::v1 as cri;
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use std::future::Future;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

/// Upstream's CRI message limit: a node with many containers lists more than gRPC's 4 MiB.
const MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// The CRI API version the kubelet speaks.
pub const CRI_VERSION: &str = "v1";

/// Both CRI services of one runtime.
#[derive(Clone)]
pub struct CriClient {
    runtime: RuntimeServiceClient<Channel>,
    image: ImageServiceClient<Channel>,
    timeout: Duration,
}

/// `unix:///run/x.sock` or a bare `/run/x.sock` to the socket path.
pub fn socket_path(endpoint: &str) -> anyhow::Result<String> {
    if let Some(path) = endpoint.strip_prefix("unix://") {
        if path.is_empty() {
            anyhow::bail!("endpoint {endpoint:?} names no socket");
        }
        return Ok(path.to_string());
    }
    if endpoint.starts_with('/') {
        return Ok(endpoint.to_string());
    }
    anyhow::bail!("unsupported runtime endpoint {endpoint:?}: only unix sockets are supported")
}

fn channel(endpoint: &str) -> anyhow::Result<Channel> {
    let path = socket_path(endpoint)?;
    // The URI is only a placeholder: the connector below always dials the socket.
    let channel = Endpoint::try_from("http://[::]:50051")?
        .connect_timeout(Duration::from_secs(10))
        .connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }));
    Ok(channel)
}

impl CriClient {
    pub fn new(
        runtime_endpoint: &str,
        image_endpoint: &str,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let runtime_channel = channel(runtime_endpoint)?;
        let image_channel = if image_endpoint.is_empty() || image_endpoint == runtime_endpoint {
            runtime_channel.clone()
        } else {
            channel(image_endpoint)?
        };
        Ok(Self {
            runtime: RuntimeServiceClient::new(runtime_channel)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
            image: ImageServiceClient::new(image_channel)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
            timeout,
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn rt(&self) -> RuntimeServiceClient<Channel> {
        self.runtime.clone()
    }

    fn img(&self) -> ImageServiceClient<Channel> {
        self.image.clone()
    }

    pub async fn version(&self) -> Result<cri::VersionResponse, tonic::Status> {
        let req = cri::VersionRequest {
            version: CRI_VERSION.to_string(),
        };
        bounded(self.timeout, self.rt().version(req)).await
    }

    /// The status with the runtime's `info` (containerd puts its CRI config there).
    pub async fn status_verbose(&self) -> Result<cri::StatusResponse, tonic::Status> {
        bounded(
            self.timeout,
            self.rt().status(cri::StatusRequest { verbose: true }),
        )
        .await
    }

    pub async fn status(&self) -> Result<cri::StatusResponse, tonic::Status> {
        bounded(
            self.timeout,
            self.rt().status(cri::StatusRequest { verbose: false }),
        )
        .await
    }

    pub async fn run_pod_sandbox(
        &self,
        config: cri::PodSandboxConfig,
        runtime_handler: String,
    ) -> Result<String, tonic::Status> {
        let req = cri::RunPodSandboxRequest {
            config: Some(config),
            runtime_handler,
        };
        // Sandbox creation sets up networking: upstream allows it twice the usual time.
        let resp = bounded(self.timeout * 2, self.rt().run_pod_sandbox(req)).await?;
        Ok(resp.pod_sandbox_id)
    }

    pub async fn stop_pod_sandbox(&self, id: &str) -> Result<(), tonic::Status> {
        let req = cri::StopPodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        bounded(self.timeout, self.rt().stop_pod_sandbox(req)).await?;
        Ok(())
    }

    pub async fn remove_pod_sandbox(&self, id: &str) -> Result<(), tonic::Status> {
        let req = cri::RemovePodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        bounded(self.timeout, self.rt().remove_pod_sandbox(req)).await?;
        Ok(())
    }

    pub async fn pod_sandbox_status(
        &self,
        id: &str,
    ) -> Result<cri::PodSandboxStatus, tonic::Status> {
        let req = cri::PodSandboxStatusRequest {
            pod_sandbox_id: id.to_string(),
            verbose: false,
        };
        let resp = bounded(self.timeout, self.rt().pod_sandbox_status(req)).await?;
        resp.status
            .ok_or_else(|| tonic::Status::internal(format!("sandbox {id}: status is nil")))
    }

    pub async fn list_pod_sandbox(
        &self,
        filter: Option<cri::PodSandboxFilter>,
    ) -> Result<Vec<cri::PodSandbox>, tonic::Status> {
        let req = cri::ListPodSandboxRequest { filter };
        Ok(bounded(self.timeout, self.rt().list_pod_sandbox(req))
            .await?
            .items)
    }

    pub async fn create_container(
        &self,
        sandbox_id: &str,
        config: cri::ContainerConfig,
        sandbox_config: cri::PodSandboxConfig,
    ) -> Result<String, tonic::Status> {
        let req = cri::CreateContainerRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        Ok(bounded(self.timeout, self.rt().create_container(req))
            .await?
            .container_id)
    }

    pub async fn start_container(&self, id: &str) -> Result<(), tonic::Status> {
        let req = cri::StartContainerRequest {
            container_id: id.to_string(),
        };
        bounded(self.timeout, self.rt().start_container(req)).await?;
        Ok(())
    }

    /// Stops with `grace_secs` before SIGKILL; the call itself may take that long on top of
    /// the request timeout.
    pub async fn stop_container(&self, id: &str, grace_secs: i64) -> Result<(), tonic::Status> {
        let req = cri::StopContainerRequest {
            container_id: id.to_string(),
            timeout: grace_secs,
        };
        let limit = self.timeout + Duration::from_secs(grace_secs.max(0) as u64);
        bounded(limit, self.rt().stop_container(req)).await?;
        Ok(())
    }

    pub async fn remove_container(&self, id: &str) -> Result<(), tonic::Status> {
        let req = cri::RemoveContainerRequest {
            container_id: id.to_string(),
        };
        bounded(self.timeout, self.rt().remove_container(req)).await?;
        Ok(())
    }

    pub async fn list_containers(
        &self,
        filter: Option<cri::ContainerFilter>,
    ) -> Result<Vec<cri::Container>, tonic::Status> {
        let req = cri::ListContainersRequest { filter };
        Ok(bounded(self.timeout, self.rt().list_containers(req))
            .await?
            .containers)
    }

    pub async fn container_status(&self, id: &str) -> Result<cri::ContainerStatus, tonic::Status> {
        let req = cri::ContainerStatusRequest {
            container_id: id.to_string(),
            verbose: false,
        };
        let resp = bounded(self.timeout, self.rt().container_status(req)).await?;
        resp.status
            .ok_or_else(|| tonic::Status::internal(format!("container {id}: status is nil")))
    }

    pub async fn reopen_container_log(&self, id: &str) -> Result<(), tonic::Status> {
        let req = cri::ReopenContainerLogRequest {
            container_id: id.to_string(),
        };
        bounded(self.timeout, self.rt().reopen_container_log(req)).await?;
        Ok(())
    }

    /// `timeout` zero means none (the runtime waits for the command); the call still ends
    /// after the request timeout past it.
    pub async fn exec_sync(
        &self,
        id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<cri::ExecSyncResponse, tonic::Status> {
        let req = cri::ExecSyncRequest {
            container_id: id.to_string(),
            cmd,
            timeout: timeout.as_secs() as i64,
        };
        let mut rt = self.rt();
        let fut = rt.exec_sync(req);
        if timeout.is_zero() {
            return fut.await.map(tonic::Response::into_inner);
        }
        bounded(self.timeout + timeout, fut).await
    }

    pub async fn exec(&self, req: cri::ExecRequest) -> Result<String, tonic::Status> {
        Ok(bounded(self.timeout, self.rt().exec(req)).await?.url)
    }

    pub async fn attach(&self, req: cri::AttachRequest) -> Result<String, tonic::Status> {
        Ok(bounded(self.timeout, self.rt().attach(req)).await?.url)
    }

    pub async fn port_forward(
        &self,
        req: cri::PortForwardRequest,
    ) -> Result<String, tonic::Status> {
        Ok(bounded(self.timeout, self.rt().port_forward(req))
            .await?
            .url)
    }

    /// The image as the runtime stores it, None when absent.
    pub async fn image_status(&self, image: &str) -> Result<Option<cri::Image>, tonic::Status> {
        let req = cri::ImageStatusRequest {
            image: Some(image_spec(image)),
            verbose: false,
        };
        Ok(bounded(self.timeout, self.img().image_status(req))
            .await?
            .image)
    }

    /// Pulls are slow by nature: upstream gives them no deadline beyond the kubelet's own
    /// progress checks, here a generous multiple of the request timeout.
    pub async fn pull_image(
        &self,
        image: &str,
        auth: Option<cri::AuthConfig>,
        sandbox_config: Option<cri::PodSandboxConfig>,
    ) -> Result<String, tonic::Status> {
        let req = cri::PullImageRequest {
            image: Some(image_spec(image)),
            auth,
            sandbox_config,
        };
        Ok(bounded(self.timeout * 5, self.img().pull_image(req))
            .await?
            .image_ref)
    }

    pub async fn list_images(&self) -> Result<Vec<cri::Image>, tonic::Status> {
        let req = cri::ListImagesRequest { filter: None };
        Ok(bounded(self.timeout, self.img().list_images(req))
            .await?
            .images)
    }

    pub async fn remove_image(&self, image: &str) -> Result<(), tonic::Status> {
        let req = cri::RemoveImageRequest {
            image: Some(image_spec(image)),
        };
        bounded(self.timeout, self.img().remove_image(req)).await?;
        Ok(())
    }

    pub async fn image_fs_info(&self) -> Result<cri::ImageFsInfoResponse, tonic::Status> {
        bounded(
            self.timeout,
            self.img().image_fs_info(cri::ImageFsInfoRequest {}),
        )
        .await
    }
}

pub fn image_spec(image: &str) -> cri::ImageSpec {
    cri::ImageSpec {
        image: image.to_string(),
        ..Default::default()
    }
}

async fn bounded<T>(
    limit: Duration,
    fut: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, tonic::Status> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map(tonic::Response::into_inner),
        Err(_) => Err(tonic::Status::deadline_exceeded(format!(
            "CRI call did not answer within {limit:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_map_to_socket_paths() {
        let cases = [
            (
                "unix:///run/containerd/containerd.sock",
                Some("/run/containerd/containerd.sock"),
            ),
            ("/tmp/c.sock", Some("/tmp/c.sock")),
            ("unix://", None),
            ("tcp://127.0.0.1:1234", None),
            ("npipe:////./pipe/x", None),
        ];
        for (endpoint, want) in cases {
            assert_eq!(socket_path(endpoint).ok().as_deref(), want, "{endpoint}");
        }
    }
}
