//! The command line of kube-controller-manager, with upstream's flag names and sections.

use super::config::Config;
use clap::{Args, Parser};
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::client_flags::KubeconfigOptions;
use component_base::leaderelection::LeaderElectionOptions;
use component_base::serving::SecureServingOptions;

/// The port upstream's controller manager serves HTTPS on.
pub const DEFAULT_SECURE_PORT: u16 = 10257;

/// kube-controller-manager's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-controller-manager",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The Kubernetes controller manager is a daemon that embeds the core control loops \
shipped with Kubernetes."
)]
pub struct Options {
    #[command(flatten)]
    pub generic: GenericOptions,
    #[command(flatten)]
    pub client: KubeconfigOptions,
    #[command(flatten)]
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    #[command(flatten)]
    pub leader_election: LeaderElectionOptions,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Upstream's "Generic flags" section.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Generic flags")]
pub struct GenericOptions {
    /// A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables
    /// the controller named 'foo', '-foo' disables the controller named 'foo'. Disabled-by-default
    /// controllers: bootstrap-signer-controller, selinux-warning-controller,
    /// token-cleaner-controller.
    #[arg(
        long,
        value_name = "strings",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub controllers: Vec<String>,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}
