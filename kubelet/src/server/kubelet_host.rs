//! [`HostInterface`] over the core's [`Kubelet`]: its pod manager, status manager, runtime
//! and cgroups, so the run phase wires the server with `KubeletHost::new(kubelet)`.

use super::host::{HostInterface, RuntimeApi};
use crate::kubelet::Kubelet;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use std::path::PathBuf;
use std::sync::Arc;

pub struct KubeletHost {
    kubelet: Arc<Kubelet>,
}

impl KubeletHost {
    pub fn new(kubelet: Arc<Kubelet>) -> Self {
        Self { kubelet }
    }
}

impl HostInterface for KubeletHost {
    fn node_name(&self) -> String {
        self.kubelet.settings.node_name.clone()
    }

    /// Static pods carry the status the kubelet computed for them (their own objects never
    /// get one from the apiserver), as upstream's `GetPods`.
    fn pods(&self) -> Vec<Arc<Pod>> {
        self.kubelet
            .pods
            .get_pods()
            .into_iter()
            .map(|pod| {
                if !crate::pod::is_static_pod(&pod) {
                    return pod;
                }
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                match self.kubelet.status.get_pod_status(&uid) {
                    Some(status) => {
                        let mut pod = (*pod).clone();
                        pod.status = Some(status);
                        Arc::new(pod)
                    }
                    None => pod,
                }
            })
            .collect()
    }

    fn pod_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.kubelet.pods.get_pod_by_name(namespace, name)
    }

    fn pod_status(&self, uid: &str) -> Option<PodStatus> {
        self.kubelet.status.get_pod_status(uid)
    }

    fn runtime(&self) -> Arc<dyn RuntimeApi> {
        self.kubelet.runtime.clone()
    }

    fn pod_logs_dir(&self) -> PathBuf {
        self.kubelet.runtime.options().pod_logs_dir.clone()
    }

    fn root_dir(&self) -> PathBuf {
        self.kubelet.settings.root_dir.clone()
    }

    fn pod_cgroup(&self, pod: &Pod) -> Option<String> {
        Some(self.kubelet.cgroups.pod_cgroup_parent(pod))
    }
}
