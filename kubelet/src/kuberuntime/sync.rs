//! One sync of a pod (upstream's `SyncPod`): compute the actions, kill what must go, create
//! the sandbox, then start init containers in order and the regular containers (start.rs).

use super::actions::compute_pod_actions;
use super::events::{NORMAL, WARNING};
use super::kill::{KillRequest, format_pod};
use super::sandbox::{self, pod_logs_directory};
use super::security::host_network;
use super::start::StartEnv;
use super::{PodSyncResult, RuntimeManager, SyncContext, SyncError};
use crate::container::{ContainerState, PodRuntimeStatus, RuntimePod};
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Pod, PodSpec};

pub(super) fn fail(container: &str, reason: &str, message: impl Into<String>) -> SyncError {
    SyncError {
        container: container.to_string(),
        reason: reason.to_string(),
        message: message.into(),
    }
}

pub(super) fn grpc_message(e: &tonic::Status) -> String {
    e.message().to_string()
}

/// What kill_pod needs of a pod's runtime status: its sandboxes and live containers.
pub fn running_pod(status: &PodRuntimeStatus) -> RuntimePod {
    RuntimePod {
        uid: status.uid.clone(),
        name: status.name.clone(),
        namespace: status.namespace.clone(),
        sandboxes: status
            .sandboxes
            .iter()
            .map(|s| (s.id.clone(), s.state))
            .collect(),
        containers: status
            .containers
            .iter()
            .filter(|c| c.state != ContainerState::Exited)
            .map(|c| (c.id.clone(), c.name.clone(), c.state))
            .collect(),
    }
}

impl RuntimeManager {
    pub(super) async fn sync_pod_inner(
        &self,
        pod: &Pod,
        status: &PodRuntimeStatus,
        ctx: SyncContext<'_>,
    ) -> PodSyncResult {
        let mut result = PodSyncResult::default();
        let default_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&default_spec);
        let actions = compute_pod_actions(pod, status, ctx.liveness, ctx.startup);
        tracing::debug!(pod = ?pod.metadata.name, ?actions, "computed pod actions");
        let name = pod.metadata.name.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let pod_ip = status.ips.first().cloned();

        if actions.kill_pod {
            if actions.create_sandbox && !status.sandboxes.is_empty() {
                self.event(
                    pod,
                    None,
                    NORMAL,
                    "SandboxChanged",
                    "Pod sandbox changed, it will be killed and re-created.".into(),
                );
            }
            let running = running_pod(status);
            if let Err(e) = self
                .kill_pod_inner(Some(pod), &running, None, pod_ip.as_deref())
                .await
            {
                result
                    .errors
                    .push(fail("", "KillPodError", format!("{e:#}")));
                return result;
            }
            if actions.create_sandbox {
                self.purge_init_containers(spec, status).await;
            }
        } else {
            for k in &actions.containers_to_kill {
                tracing::info!(pod = %name, container = %k.name, message = %k.message, "killing container");
                let killed = self
                    .kill_container(KillRequest {
                        pod: Some(pod),
                        id: &k.id,
                        name: &k.name,
                        reason: Some(k.reason),
                        grace_override: None,
                        pod_ip: pod_ip.as_deref(),
                        message: Some(&k.message),
                    })
                    .await;
                if let Err(e) = killed {
                    result
                        .errors
                        .push(fail(&k.name, "KillContainerError", format!("{e:#}")));
                    return result;
                }
            }
        }
        self.prune_init_containers(spec, status).await;

        if actions.kill_pod && !actions.create_sandbox {
            return result;
        }
        let mut pod_ips = status.ips.clone();
        let sandbox_config = match sandbox::build(
            pod,
            actions.attempt,
            ctx.helper,
            &self.options.pod_logs_dir,
            &self.seccomp_profile_root,
        ) {
            Ok(c) => c,
            Err(e) => {
                result
                    .errors
                    .push(fail("", "ConfigPodSandboxError", format!("{e:#}")));
                return result;
            }
        };
        let mut sandbox_id = actions.sandbox_id.clone();
        if actions.create_sandbox {
            match self.create_sandbox(&sandbox_config).await {
                Ok((id, ips)) => {
                    sandbox_id = id;
                    if !host_network(spec) {
                        pod_ips = ips;
                    }
                }
                Err(e) => {
                    self.event(
                        pod,
                        None,
                        WARNING,
                        "FailedCreatePodSandBox",
                        format!("Failed to create pod sandbox: {e}"),
                    );
                    result.errors.push(fail(
                        "",
                        "CreatePodSandboxError",
                        format!(
                            "Failed to create sandbox for pod {:?}: {e}",
                            format_pod(&name, &namespace, &uid)
                        ),
                    ));
                    return result;
                }
            }
        }

        let env = StartEnv {
            pod,
            status,
            ctx: &ctx,
            sandbox_id: &sandbox_id,
            sandbox_config: &sandbox_config,
            pod_ips: &pod_ips,
            pod_desc: format_pod(&name, &namespace, &uid),
            logs_dir: pod_logs_directory(&self.options.pod_logs_dir, &namespace, &name, &uid),
        };
        self.start_containers(&env, spec, &actions, &mut result)
            .await;
        result
    }

    /// Creates the sandbox; its id and IPs.
    async fn create_sandbox(
        &self,
        config: &cri::PodSandboxConfig,
    ) -> Result<(String, Vec<String>), String> {
        std::fs::create_dir_all(&config.log_directory).map_err(|e| {
            format!(
                "creating the pod log directory {}: {e}",
                config.log_directory
            )
        })?;
        let id = self
            .client
            .run_pod_sandbox(config.clone(), String::new())
            .await
            .map_err(|e| super::pull::grpc_error_string(&e))?;
        let status = self
            .client
            .pod_sandbox_status(&id)
            .await
            .map_err(|e| super::pull::grpc_error_string(&e))?;
        let ips = status
            .network
            .map(|n| {
                std::iter::once(n.ip)
                    .chain(n.additional_ips.into_iter().map(|i| i.ip))
                    .filter(|ip| !ip.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok((id, ips))
    }

    /// A new sandbox restarts initialization from scratch: old init records must not count.
    async fn purge_init_containers(&self, spec: &PodSpec, status: &PodRuntimeStatus) {
        for c in spec.init_containers.iter().flatten() {
            for s in status.attempts(&c.name) {
                if let Err(e) = self.client.remove_container(&s.id.id).await
                    && e.code() != tonic::Code::NotFound
                {
                    tracing::warn!(container = %s.id, error = %e.message(), "removing an init container");
                }
            }
        }
    }

    /// Keeps only the newest exited attempt of each init container.
    async fn prune_init_containers(&self, spec: &PodSpec, status: &PodRuntimeStatus) {
        for c in spec.init_containers.iter().flatten() {
            let old = status
                .attempts(&c.name)
                .filter(|s| s.state == ContainerState::Exited)
                .skip(1);
            for s in old {
                if let Err(e) = self.client.remove_container(&s.id.id).await
                    && e.code() != tonic::Code::NotFound
                {
                    tracing::warn!(container = %s.id, error = %e.message(), "pruning an init container");
                }
            }
        }
    }
}
