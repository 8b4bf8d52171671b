//! What every controller is started with: clients, the shared informers, the event broadcaster
//! and the controller manager's settings, as upstream's `ControllerContext`.

use super::settings::ControllerSettings;
use client_go_rs::config::ClientConfig;
use client_go_rs::events::{EventBroadcaster, EventRecorder};
use client_go_rs::informers::SharedInformerFactory;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Shared by every controller of one leadership term.
#[derive(Clone)]
pub struct ControllerContext {
    /// The controller manager's own client (its `--kubeconfig` identity).
    pub client: kube::Client,
    /// How `client` was configured, so per-controller clients can reuse its server and TLS.
    pub client_config: Arc<ClientConfig>,
    /// One watch per resource, shared by every controller; started after all controllers
    /// registered their handlers.
    pub informers: Arc<SharedInformerFactory>,
    pub broadcaster: Arc<EventBroadcaster>,
    pub settings: Arc<ControllerSettings>,
    /// Cancelled when leadership is lost or the process stops.
    pub shutdown: CancellationToken,
    /// The name of the controller being started (upstream's name, e.g. `replicaset-controller`).
    pub controller_name: &'static str,
}

impl std::fmt::Debug for ControllerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerContext")
            .field("controller_name", &self.controller_name)
            .finish_non_exhaustive()
    }
}

impl ControllerContext {
    /// The client a controller writes with: its own connection and its own `--kube-api-qps`
    /// budget, as upstream's client builder gives each controller (one shared limiter made the
    /// namespace controller's discovery queue behind the garbage collector's for seconds).
    /// With `--use-service-account-credentials` it is authenticated as the service account
    /// `kube-system/<service_account>` (created if missing, with a token from the TokenRequest
    /// API); otherwise it carries the controller manager's own credentials.
    pub async fn client_for(&self, service_account: &str) -> anyhow::Result<kube::Client> {
        if !self.settings.use_service_account_credentials {
            return Ok(self.client_config.build_client()?);
        }
        super::credentials::service_account_client(self, service_account).await
    }

    /// An event recorder reporting as `component` (upstream's controllers use names such as
    /// `replicaset-controller` or `deployment-controller`).
    pub fn recorder(&self, component: &str) -> EventRecorder {
        self.broadcaster
            .new_recorder(component.to_string(), String::new())
    }
}
