//! The validated, completed configuration kube-controller-manager runs with.

use super::controllers;
use super::options::{DEFAULT_SECURE_PORT, Options};
use anyhow::anyhow;
use component_base::client_flags::KubeconfigOptions;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The name used for the lease and the serving certificate.
pub const COMPONENT: &str = "kube-controller-manager";

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    /// The controllers `--controllers` resolves to, by upstream name.
    pub controllers: BTreeSet<&'static str>,
    pub client: KubeconfigOptions,
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    pub leader_election: LeaderElectionOptions,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Validates the options and fills in derived defaults.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        let controllers = controllers::resolve(&options.generic.controllers)
            .map_err(|e| anyhow!("invalid --controllers: {e}"))?;
        options.client.validate().map_err(|e| anyhow!(e))?;
        // Bad TLS flags are flag errors, not a failure when serving starts.
        options.secure_serving.tls_settings()?;
        let leader_election = options
            .leader_election
            .complete(COMPONENT)
            .map_err(|e| anyhow!(e))?;
        Ok(Self {
            controllers,
            client: options.client,
            secure_serving: options.secure_serving,
            leader_election,
        })
    }
}

impl Config {
    /// The configuration as `/configz` publishes it, in KubeControllerManagerConfiguration's shape.
    pub fn configz(&self) -> Value {
        let le = &self.leader_election;
        json!({
            "Generic": {
                "Controllers": self.controllers,
                "ClientConnection": {
                    "Kubeconfig": self.client.kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                },
                "LeaderElection": {
                    "LeaderElect": le.leader_elect,
                    "LeaseDuration": le.leader_elect_lease_duration.to_string(),
                    "RenewDeadline": le.leader_elect_renew_deadline.to_string(),
                    "RetryPeriod": le.leader_elect_retry_period.to_string(),
                    "ResourceLock": le.leader_elect_resource_lock,
                    "ResourceName": le.leader_elect_resource_name,
                    "ResourceNamespace": le.leader_elect_resource_namespace,
                },
            },
        })
    }
}
