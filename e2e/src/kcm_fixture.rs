//! What the `kcm_*` suites run on: our apiserver and our kube-controller-manager running the
//! controllers a suite tests, in a temp dir. No kubelet runs: the tests play it, by hand or
//! with a task of their own ([`KcmCluster::play_kubelet`]).

use crate::apiserver::{ApiServer, Backend};
use crate::controller_manager::ControllerManager;
use crate::kubectl::Kubectl;
use crate::scheduler::create_namespace;
use std::sync::Arc;
use tempfile::TempDir;
use tokio::task::JoinHandle;

/// The running pair, stopped on drop (the apiserver first, as the suites always did).
pub struct KcmCluster {
    /// Shared, so a test's fake kubelet task can hold it too.
    pub api: Arc<ApiServer>,
    pub cm: ControllerManager,
    /// The upstream kubectl, its files in `<dir>/kubectl`.
    pub kubectl: Kubectl,
    pub dir: TempDir,
    kubelet: Option<JoinHandle<()>>,
}

impl Drop for KcmCluster {
    fn drop(&mut self) {
        if let Some(kubelet) = &self.kubelet {
            kubelet.abort();
        }
        if std::thread::panicking() {
            eprintln!(
                "----- kube-controller-manager log -----\n{}",
                self.cm.logs()
            );
        }
    }
}

impl KcmCluster {
    /// Starts the apiserver (as [`ApiServer::start`] does), creates `namespaces`, then starts
    /// the controller manager with `kcm_args` (e.g. `--controllers=...`).
    pub async fn start(namespaces: &[&str], kcm_args: &[&str]) -> Self {
        let kcm_args: Vec<String> = kcm_args.iter().map(|a| a.to_string()).collect();
        Self::start_with(&[], namespaces, |_| kcm_args).await
    }

    /// [`KcmCluster::start`] with `apiserver_flags` added to the apiserver's, and the
    /// controller manager's flags made from the running apiserver (its CA file, say).
    pub async fn start_with(
        apiserver_flags: &[&str],
        namespaces: &[&str],
        kcm_args: impl FnOnce(&ApiServer) -> Vec<String>,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        // No service account controller runs with most suites' controllers (see ApiServer::start).
        let mut flags = vec!["--disable-admission-plugins=ServiceAccount".to_string()];
        flags.extend(apiserver_flags.iter().map(|f| f.to_string()));
        let api = ApiServer::start_with(&dir.path().join("apiserver"), Backend::Embedded, &flags)
            .await
            .expect("apiserver");
        for ns in namespaces {
            create_namespace(&api, ns).await;
        }
        let kcm_args = kcm_args(&api);
        let kcm_args: Vec<&str> = kcm_args.iter().map(String::as_str).collect();
        let cm = ControllerManager::start(&dir.path().join("kcm"), &api, &kcm_args)
            .await
            .expect("kube-controller-manager");
        let kubectl = Kubectl::for_apiserver(dir.path(), &api);
        KcmCluster {
            api: Arc::new(api),
            cm,
            kubectl,
            dir,
            kubelet: None,
        }
    }

    /// Runs `play`, a test's stand-in for the kubelet, until the cluster drops.
    pub fn play_kubelet<F>(&mut self, play: impl FnOnce(Arc<ApiServer>) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.kubelet = Some(tokio::spawn(play(self.api.clone())));
    }
}
