//! The one-node cluster the `kubelet_*` suites run on: containerd, our apiserver with its PKI,
//! an admin client, and our kubelet registered as a Node. Each process prints its log when the
//! test panics (their `Drop`s), and the kubelet stops before containerd and the apiserver.

use super::{Kubelet, admin_client, poll, start_apiserver};
use crate::apiserver::ApiServer;
use crate::containerd::Containerd;
use crate::pki::Pki;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use serde_json::Value;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Everything but the kubelet: for a test that has to prepare the API before the kubelet's
/// informers list it.
pub struct Host {
    // Field order is drop order: containerd (and the pods it runs) before the apiserver.
    pub containerd: Containerd,
    pub api: ApiServer,
    pub pki: Pki,
    /// A `system:masters` client.
    pub client: kube::Client,
    /// The admin kubeconfig, for the real kubectl.
    pub kubeconfig: PathBuf,
    tmp: TempDir,
}

impl Host {
    /// Starts containerd under `<tmp>/containerd` and the apiserver under `<tmp>/api`; `tmp` may
    /// hold what the test prepared (e.g. a tmpfs at `kubelet/root`).
    pub async fn start_in(tmp: TempDir) -> Host {
        let dir = tmp.path().to_path_buf();
        let containerd =
            tokio::task::spawn_blocking(move || Containerd::start(&dir.join("containerd")))
                .await
                .expect("containerd start task")
                .expect("containerd");
        let (api, pki) = start_apiserver(&tmp.path().join("api"), &[])
            .await
            .expect("apiserver");
        let client = admin_client(&api, &pki, tmp.path()).await;
        Host {
            containerd,
            api,
            pki,
            client,
            kubeconfig: tmp.path().join("admin.kubeconfig"),
            tmp,
        }
    }

    /// The test's temp dir.
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// Starts the kubelet under `<tmp>/kubelet` as `node_name` (`config` merged into its
    /// defaults, see [`Kubelet::start`]) and waits for its Node to be registered.
    pub async fn start_kubelet(self, node_name: &str, config: Value) -> KubeletCluster {
        let kubelet = Kubelet::start(
            &self.dir().join("kubelet"),
            &self.api,
            &self.containerd,
            node_name,
            config,
            &[],
        )
        .await
        .expect("kubelet");
        let nodes: Api<Node> = Api::all(self.client.clone());
        poll("the node to register", &|| kubelet.logs(), async || {
            nodes
                .get(node_name)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .await;
        KubeletCluster {
            kubelet,
            host: self,
        }
    }
}

/// A [`Host`] with a registered kubelet; derefs to the host for its other parts.
pub struct KubeletCluster {
    // Field order is drop order: the kubelet stops before containerd and the apiserver.
    pub kubelet: Kubelet,
    host: Host,
}

impl KubeletCluster {
    /// Starts everything in a fresh temp dir.
    pub async fn start(node_name: &str, config: Value) -> KubeletCluster {
        Self::start_in(tempfile::tempdir().expect("temp dir"), node_name, config).await
    }

    /// [`KubeletCluster::start`] in `tmp`, where the test may have prepared `kubelet/root`.
    pub async fn start_in(tmp: TempDir, node_name: &str, config: Value) -> KubeletCluster {
        Host::start_in(tmp)
            .await
            .start_kubelet(node_name, config)
            .await
    }

    /// The kubelet's logs, for a poll's failure message.
    pub fn logs(&self) -> String {
        self.kubelet.logs()
    }
}

impl Deref for KubeletCluster {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}
