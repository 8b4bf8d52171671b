//! The `RuntimeHelper` the runtime manager calls while it creates containers: env from the
//! envvars module, mounts from the volume manager, the hostname and DNS from the dns module,
//! the cgroup parent from the container manager, and the termination message file.

use super::Kubelet;
use crate::container::RunContainerOptions;
use crate::envvars::{ClientSource, EnvContext, make_environment};
use crate::kuberuntime::{DnsConfig, RuntimeHelper};
use anyhow::Context;
use k8s_openapi::api::core::v1::{Container, Pod};

/// Borrowed for one sync.
pub struct Helper<'a>(pub &'a Kubelet);

impl Helper<'_> {
    /// Creates `<pod dir>/containers/<name>/<random>`, the host side of
    /// `terminationMessagePath`, writable by any user as upstream makes it.
    fn termination_log(&self, pod: &Pod, container: &Container) -> anyhow::Result<Option<String>> {
        if container
            .termination_message_path
            .as_deref()
            .is_some_and(str::is_empty)
        {
            return Ok(None);
        }
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let dir = self.0.pod_dir(uid).join("containers").join(&container.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{:08x}", rand::random::<u32>()));
        std::fs::write(&path, b"").with_context(|| format!("creating {}", path.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
        Ok(Some(path.display().to_string()))
    }
}

#[async_trait::async_trait]
impl RuntimeHelper for Helper<'_> {
    async fn run_container_options(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
    ) -> anyhow::Result<RunContainerOptions> {
        let k = self.0;
        let host_ips = k.node.host_ips();
        let allocatable = k
            .node
            .node()
            .and_then(|n| n.status)
            .and_then(|s| s.allocatable)
            .unwrap_or_default();
        let ctx = EnvContext {
            node_name: k.settings.node_name.clone(),
            host_ips: host_ips.clone(),
            pod_ips: if pod_ips.is_empty() {
                host_ips
            } else {
                pod_ips.to_vec()
            },
            node_allocatable: allocatable,
            services: match k
                .services
                .services_for(pod.metadata.namespace.as_deref().unwrap_or("default"))
            {
                // As upstream, only API pods wait for the first Service list: static pods may
                // be the apiserver itself (kubeadm's control plane), which nothing lists before.
                Err(_) if crate::pod::is_static_pod(pod) => Vec::new(),
                services => services?,
            },
        };
        let source = ClientSource::new(k.client.clone());
        let envs = make_environment(&source, pod, container, &ctx)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mounts = k
            .volumes
            .container_mounts(pod, container, pod_ips, &envs)
            .await?;
        let (hostname, _domain) =
            crate::dns::pod_hostname_and_domain(pod, &k.settings.cluster_domain)?;
        Ok(RunContainerOptions {
            envs,
            mounts,
            hostname,
            termination_message_host_path: self.termination_log(pod, container)?,
            annotations: Default::default(),
        })
    }

    fn pod_cgroup_parent(&self, pod: &Pod) -> String {
        self.0.cgroups.pod_cgroup_parent(pod)
    }

    fn dns_config(&self, pod: &Pod) -> anyhow::Result<Option<DnsConfig>> {
        let s = &self.0.settings;
        crate::dns::dns_config(
            pod,
            &s.cluster_dns,
            &s.cluster_domain,
            s.resolv_conf.as_deref(),
        )
    }
}
