//! The validated, completed configuration kube-apiserver runs with.

use super::options::{DEFAULT_SECURE_PORT, Options};
use anyhow::bail;
use component_base::serving::SecureServingOptions;
use std::path::PathBuf;

/// Where upstream keeps the generated serving certificate when no `--cert-dir` is given.
pub const DEFAULT_CERT_DIR: &str = "/var/run/kubernetes";

/// What the run phase needs; built only from valid options.
#[derive(Debug, Clone)]
pub struct Config {
    pub secure_serving: SecureServingOptions<DEFAULT_SECURE_PORT>,
}

impl TryFrom<Options> for Config {
    type Error = anyhow::Error;

    /// Validates the options and fills in derived defaults.
    fn try_from(options: Options) -> anyhow::Result<Self> {
        let mut secure_serving = options.secure_serving;
        // Unlike the scheduler and controller manager, the apiserver cannot run without HTTPS.
        if secure_serving.secure_port == 0 {
            bail!("invalid --secure-port 0: must be between 1 and 65535, inclusive");
        }
        secure_serving
            .cert_dir
            .get_or_insert_with(|| PathBuf::from(DEFAULT_CERT_DIR));
        Ok(Self { secure_serving })
    }
}
