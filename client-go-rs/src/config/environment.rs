//! What config loading reads from the process, gathered in one value so it can be faked.

use std::ffi::OsString;
use std::path::PathBuf;

/// The service account mount of a pod.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The parts of the process environment config loading depends on.
///
/// Tests build one by hand instead of mutating the (process-global) environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `KUBECONFIG`: a list of paths separated as `PATH` is (`:` on Unix).
    pub kubeconfig: Option<OsString>,
    /// The home directory, for `~/.kube/config`.
    pub home: Option<PathBuf>,
    /// `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
    /// Where the service account token, CA and namespace are mounted.
    pub service_account_dir: PathBuf,
}

impl Environment {
    /// The environment of this process.
    pub fn from_process() -> Self {
        Self {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: std::env::home_dir(),
            service_host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
            service_port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
            service_account_dir: PathBuf::from(SERVICE_ACCOUNT_DIR),
        }
    }

    /// The kubeconfig files `KUBECONFIG` lists, empty entries dropped.
    pub fn kubeconfig_paths(&self) -> Vec<PathBuf> {
        self.kubeconfig
            .as_ref()
            .map(|v| {
                std::env::split_paths(v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `~/.kube/config`, if the home directory is known.
    pub fn default_kubeconfig_path(&self) -> Option<PathBuf> {
        self.home.as_ref().map(|h| h.join(".kube").join("config"))
    }
}
