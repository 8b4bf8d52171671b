//! The validated, completed configuration kube-scheduler runs with.

use super::options::{DEFAULT_SECURE_PORT, Options};
use anyhow::anyhow;
use component_base::client_flags::KubeconfigOptions;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;
use serde_json::{Value, json};

/// The name the scheduler uses for its lease and its serving certificate.
pub const COMPONENT: &str = "kube-scheduler";

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    pub client: KubeconfigOptions,
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    pub leader_election: LeaderElectionOptions,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Validates the options and fills in derived defaults.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        options.client.validate().map_err(|e| anyhow!(e))?;
        // Bad TLS flags are flag errors, not a failure when serving starts.
        options.secure_serving.tls_settings()?;
        let leader_election = options
            .leader_election
            .complete(COMPONENT)
            .map_err(|e| anyhow!(e))?;
        Ok(Self {
            client: options.client,
            secure_serving: options.secure_serving,
            leader_election,
        })
    }
}

impl Config {
    /// The configuration as `/configz` publishes it, in KubeSchedulerConfiguration's shape.
    pub fn configz(&self) -> Value {
        let le = &self.leader_election;
        json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {
                "kubeconfig": self.client.kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            },
            "leaderElection": {
                "leaderElect": le.leader_elect,
                "leaseDuration": le.leader_elect_lease_duration.to_string(),
                "renewDeadline": le.leader_elect_renew_deadline.to_string(),
                "retryPeriod": le.leader_elect_retry_period.to_string(),
                "resourceLock": le.leader_elect_resource_lock,
                "resourceName": le.leader_elect_resource_name,
                "resourceNamespace": le.leader_elect_resource_namespace,
            },
        })
    }
}
