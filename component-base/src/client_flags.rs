//! The flags that point a component at its apiserver (`--kubeconfig`, `--master`).

use clap::Args;
use std::path::PathBuf;

/// Where the component finds the apiserver and its credentials.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Misc flags")]
pub struct KubeconfigOptions {
    /// Path to kubeconfig file with authorization and master location information.
    #[arg(long, value_name = "string")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server (overrides any value in kubeconfig).
    #[arg(long, value_name = "string")]
    pub master: Option<String>,
}

impl KubeconfigOptions {
    /// Fails early, naming the flag, when `--kubeconfig` names a file that cannot be read.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(path) = &self.kubeconfig {
            std::fs::metadata(path)
                .map_err(|err| format!("invalid --kubeconfig {}: {err}", path.display()))?;
        }
        if let Some(master) = &self.master
            && !(master.starts_with("https://") || master.starts_with("http://"))
        {
            return Err(format!(
                "invalid --master {master:?}: must be a URL such as https://host:6443"
            ));
        }
        Ok(())
    }
}
