//! The hollow runtime's CRI RuntimeService: sandboxes get an address and containers "run" the
//! moment they are started, until they are stopped; nothing else happens on the host.

use super::state::{Container, Sandbox, State, new_id, now_nanos};
use k8s_cri::v1 as cri;
use k8s_cri::v1::runtime_service_server::RuntimeService;
use parking_lot::Mutex;
use std::pin::Pin;
use std::sync::Arc;
use tonic::{Request, Response, Status};

type Answer<T> = Result<Response<T>, Status>;

pub(super) struct HollowRuntime {
    pub state: Arc<Mutex<State>>,
    /// The first two octets after 10. of this node's pod addresses.
    pub ip_prefix: [u8; 2],
}

fn not_found(what: &str, id: &str) -> Status {
    Status::not_found(format!("{what} {id:?} not found"))
}

#[tonic::async_trait]
impl RuntimeService for HollowRuntime {
    async fn version(&self, _: Request<cri::VersionRequest>) -> Answer<cri::VersionResponse> {
        Ok(Response::new(cri::VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "hollow".into(),
            runtime_version: component_base::version::GIT_VERSION.into(),
            runtime_api_version: "v1".into(),
        }))
    }

    async fn run_pod_sandbox(
        &self,
        request: Request<cri::RunPodSandboxRequest>,
    ) -> Answer<cri::RunPodSandboxResponse> {
        let request = request.into_inner();
        let config = request
            .config
            .ok_or_else(|| Status::invalid_argument("sandbox config is missing"))?;
        let id = new_id();
        let mut state = self.state.lock();
        let ip = state.next_ip(self.ip_prefix);
        let namespaces = config
            .linux
            .as_ref()
            .and_then(|l| l.security_context.as_ref())
            .and_then(|s| s.namespace_options.clone());
        let status = cri::PodSandboxStatus {
            id: id.clone(),
            metadata: config.metadata,
            state: cri::PodSandboxState::SandboxReady as i32,
            created_at: now_nanos(),
            network: Some(cri::PodSandboxNetworkStatus {
                ip,
                additional_ips: Vec::new(),
            }),
            linux: Some(cri::LinuxPodSandboxStatus {
                namespaces: Some(cri::Namespace {
                    options: namespaces,
                }),
            }),
            labels: config.labels,
            annotations: config.annotations,
            runtime_handler: request.runtime_handler,
        };
        state.sandboxes.insert(id.clone(), Sandbox { status });
        Ok(Response::new(cri::RunPodSandboxResponse {
            pod_sandbox_id: id,
        }))
    }

    async fn stop_pod_sandbox(
        &self,
        request: Request<cri::StopPodSandboxRequest>,
    ) -> Answer<cri::StopPodSandboxResponse> {
        self.state
            .lock()
            .stop_sandbox(&request.into_inner().pod_sandbox_id);
        Ok(Response::new(cri::StopPodSandboxResponse {}))
    }

    async fn remove_pod_sandbox(
        &self,
        request: Request<cri::RemovePodSandboxRequest>,
    ) -> Answer<cri::RemovePodSandboxResponse> {
        self.state
            .lock()
            .remove_sandbox(&request.into_inner().pod_sandbox_id);
        Ok(Response::new(cri::RemovePodSandboxResponse {}))
    }

    async fn pod_sandbox_status(
        &self,
        request: Request<cri::PodSandboxStatusRequest>,
    ) -> Answer<cri::PodSandboxStatusResponse> {
        let id = request.into_inner().pod_sandbox_id;
        let state = self.state.lock();
        let sandbox = state
            .sandboxes
            .get(&id)
            .ok_or_else(|| not_found("sandbox", &id))?;
        Ok(Response::new(cri::PodSandboxStatusResponse {
            status: Some(sandbox.status.clone()),
            timestamp: now_nanos(),
            ..Default::default()
        }))
    }

    async fn list_pod_sandbox(
        &self,
        request: Request<cri::ListPodSandboxRequest>,
    ) -> Answer<cri::ListPodSandboxResponse> {
        let filter = request.into_inner().filter;
        let items = self.state.lock().list_sandboxes(filter.as_ref());
        Ok(Response::new(cri::ListPodSandboxResponse { items }))
    }

    async fn create_container(
        &self,
        request: Request<cri::CreateContainerRequest>,
    ) -> Answer<cri::CreateContainerResponse> {
        let request = request.into_inner();
        let config = request
            .config
            .ok_or_else(|| Status::invalid_argument("container config is missing"))?;
        let mut state = self.state.lock();
        if !state.sandboxes.contains_key(&request.pod_sandbox_id) {
            return Err(not_found("sandbox", &request.pod_sandbox_id));
        }
        let id = new_id();
        let image_ref = config
            .image
            .as_ref()
            .map(|i| State::image_id(&i.image))
            .unwrap_or_default();
        let status = cri::ContainerStatus {
            id: id.clone(),
            metadata: config.metadata,
            state: cri::ContainerState::ContainerCreated as i32,
            created_at: now_nanos(),
            image: config.image,
            image_ref: image_ref.clone(),
            image_id: image_ref,
            labels: config.labels,
            annotations: config.annotations,
            log_path: config.log_path,
            ..Default::default()
        };
        state.containers.insert(
            id.clone(),
            Container {
                status,
                sandbox_id: request.pod_sandbox_id,
            },
        );
        Ok(Response::new(cri::CreateContainerResponse {
            container_id: id,
        }))
    }

    async fn start_container(
        &self,
        request: Request<cri::StartContainerRequest>,
    ) -> Answer<cri::StartContainerResponse> {
        let id = request.into_inner().container_id;
        let mut state = self.state.lock();
        let c = state
            .containers
            .get_mut(&id)
            .ok_or_else(|| not_found("container", &id))?;
        if c.status.state != cri::ContainerState::ContainerCreated as i32 {
            return Err(Status::failed_precondition(format!(
                "container {id} is not in the created state"
            )));
        }
        c.status.state = cri::ContainerState::ContainerRunning as i32;
        c.status.started_at = now_nanos();
        Ok(Response::new(cri::StartContainerResponse {}))
    }

    async fn stop_container(
        &self,
        request: Request<cri::StopContainerRequest>,
    ) -> Answer<cri::StopContainerResponse> {
        let id = request.into_inner().container_id;
        // As if the process ended on SIGTERM.
        if !self.state.lock().exit_container(&id, 143, "Error") {
            return Err(not_found("container", &id));
        }
        Ok(Response::new(cri::StopContainerResponse {}))
    }

    async fn remove_container(
        &self,
        request: Request<cri::RemoveContainerRequest>,
    ) -> Answer<cri::RemoveContainerResponse> {
        let id = request.into_inner().container_id;
        self.state.lock().containers.remove(&id);
        Ok(Response::new(cri::RemoveContainerResponse {}))
    }

    async fn list_containers(
        &self,
        request: Request<cri::ListContainersRequest>,
    ) -> Answer<cri::ListContainersResponse> {
        let filter = request.into_inner().filter;
        let containers = self.state.lock().list_containers(filter.as_ref());
        Ok(Response::new(cri::ListContainersResponse { containers }))
    }

    async fn container_status(
        &self,
        request: Request<cri::ContainerStatusRequest>,
    ) -> Answer<cri::ContainerStatusResponse> {
        let id = request.into_inner().container_id;
        let state = self.state.lock();
        let c = state
            .containers
            .get(&id)
            .ok_or_else(|| not_found("container", &id))?;
        Ok(Response::new(cri::ContainerStatusResponse {
            status: Some(c.status.clone()),
            ..Default::default()
        }))
    }

    async fn update_container_resources(
        &self,
        _: Request<cri::UpdateContainerResourcesRequest>,
    ) -> Answer<cri::UpdateContainerResourcesResponse> {
        Ok(Response::new(cri::UpdateContainerResourcesResponse {}))
    }

    async fn reopen_container_log(
        &self,
        _: Request<cri::ReopenContainerLogRequest>,
    ) -> Answer<cri::ReopenContainerLogResponse> {
        Ok(Response::new(cri::ReopenContainerLogResponse {}))
    }

    /// Every exec probe succeeds: there is no process to run it in.
    async fn exec_sync(&self, _: Request<cri::ExecSyncRequest>) -> Answer<cri::ExecSyncResponse> {
        Ok(Response::new(cri::ExecSyncResponse::default()))
    }

    async fn exec(&self, _: Request<cri::ExecRequest>) -> Answer<cri::ExecResponse> {
        Err(Status::unimplemented("a hollow node runs no processes"))
    }

    async fn attach(&self, _: Request<cri::AttachRequest>) -> Answer<cri::AttachResponse> {
        Err(Status::unimplemented("a hollow node runs no processes"))
    }

    async fn port_forward(
        &self,
        _: Request<cri::PortForwardRequest>,
    ) -> Answer<cri::PortForwardResponse> {
        Err(Status::unimplemented("a hollow node runs no processes"))
    }

    async fn container_stats(
        &self,
        _: Request<cri::ContainerStatsRequest>,
    ) -> Answer<cri::ContainerStatsResponse> {
        Ok(Response::new(cri::ContainerStatsResponse::default()))
    }

    async fn list_container_stats(
        &self,
        _: Request<cri::ListContainerStatsRequest>,
    ) -> Answer<cri::ListContainerStatsResponse> {
        Ok(Response::new(cri::ListContainerStatsResponse::default()))
    }

    async fn pod_sandbox_stats(
        &self,
        _: Request<cri::PodSandboxStatsRequest>,
    ) -> Answer<cri::PodSandboxStatsResponse> {
        Ok(Response::new(cri::PodSandboxStatsResponse::default()))
    }

    async fn list_pod_sandbox_stats(
        &self,
        _: Request<cri::ListPodSandboxStatsRequest>,
    ) -> Answer<cri::ListPodSandboxStatsResponse> {
        Ok(Response::new(cri::ListPodSandboxStatsResponse::default()))
    }

    async fn update_runtime_config(
        &self,
        _: Request<cri::UpdateRuntimeConfigRequest>,
    ) -> Answer<cri::UpdateRuntimeConfigResponse> {
        Ok(Response::new(cri::UpdateRuntimeConfigResponse {}))
    }

    async fn status(&self, _: Request<cri::StatusRequest>) -> Answer<cri::StatusResponse> {
        let ready = |kind: &str| cri::RuntimeCondition {
            r#type: kind.into(),
            status: true,
            ..Default::default()
        };
        Ok(Response::new(cri::StatusResponse {
            status: Some(cri::RuntimeStatus {
                conditions: vec![ready("RuntimeReady"), ready("NetworkReady")],
            }),
            ..Default::default()
        }))
    }

    async fn checkpoint_container(
        &self,
        _: Request<cri::CheckpointContainerRequest>,
    ) -> Answer<cri::CheckpointContainerResponse> {
        Err(Status::unimplemented("a hollow node cannot checkpoint"))
    }

    type GetContainerEventsStream = Pin<
        Box<
            dyn futures::Stream<Item = Result<cri::ContainerEventResponse, Status>>
                + Send
                + 'static,
        >,
    >;

    /// No events: the kubelet relists (as against containerd 1.6).
    async fn get_container_events(
        &self,
        _: Request<cri::GetEventsRequest>,
    ) -> Answer<Self::GetContainerEventsStream> {
        Err(Status::unimplemented("container events are not supported"))
    }

    async fn list_metric_descriptors(
        &self,
        _: Request<cri::ListMetricDescriptorsRequest>,
    ) -> Answer<cri::ListMetricDescriptorsResponse> {
        Ok(Response::new(cri::ListMetricDescriptorsResponse::default()))
    }

    async fn list_pod_sandbox_metrics(
        &self,
        _: Request<cri::ListPodSandboxMetricsRequest>,
    ) -> Answer<cri::ListPodSandboxMetricsResponse> {
        Ok(Response::new(cri::ListPodSandboxMetricsResponse::default()))
    }

    async fn runtime_config(
        &self,
        _: Request<cri::RuntimeConfigRequest>,
    ) -> Answer<cri::RuntimeConfigResponse> {
        Ok(Response::new(cri::RuntimeConfigResponse {
            linux: Some(cri::LinuxRuntimeConfiguration {
                cgroup_driver: cri::CgroupDriver::Cgroupfs as i32,
            }),
        }))
    }
}
