//! The command line of kube-scheduler, with upstream's flag names and sections.

use super::config::Config;
use clap::Parser;
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::client_flags::KubeconfigOptions;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;

/// The port upstream's scheduler serves HTTPS on.
pub const DEFAULT_SECURE_PORT: u16 = 10259;

/// kube-scheduler's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-scheduler",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The Kubernetes scheduler is a control plane process which assigns Pods to Nodes.",
    long_about = "The Kubernetes scheduler is a control plane process which assigns Pods to Nodes. \
The scheduler determines which Nodes are valid placements for each Pod in the scheduling queue \
according to constraints and available resources, ranks them, and binds the Pod to the best one."
)]
pub struct Options {
    #[command(flatten)]
    pub client: KubeconfigOptions,
    #[command(flatten)]
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    #[command(flatten)]
    pub leader_election: LeaderElectionOptions,
    #[command(flatten)]
    pub common: CommonFlags,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}
