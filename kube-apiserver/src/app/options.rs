//! The command line of kube-apiserver, with upstream's flag names and sections.

use super::config::Config;
use clap::Parser;
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::serving::SecureServingOptions;

/// The port upstream's apiserver serves HTTPS on.
pub const DEFAULT_SECURE_PORT: u16 = 6443;

/// kube-apiserver's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-apiserver",
    disable_help_flag = true,
    disable_version_flag = true,
    about = "The Kubernetes API server validates and configures data for the api objects which \
include pods, services, replicationcontrollers, and others."
)]
pub struct Options {
    #[command(flatten)]
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
    #[command(flatten)]
    pub common: CommonFlags,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}
