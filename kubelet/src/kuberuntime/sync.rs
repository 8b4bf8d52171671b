//! One sync of a pod (upstream's `SyncPod`): compute the actions, kill what must go, create
//! the sandbox, start init containers in order and then the regular containers, with the
//! CrashLoopBackOff and image checks on each start.

use super::actions::{PodActions, compute_pod_actions, is_restartable_init};
use super::container_config::{ContainerInputs, container_config};
use super::events::{NORMAL, WARNING};
use super::hooks::HookTarget;
use super::kill::{KillRequest, format_pod};
use super::labels::hash_container;
use super::sandbox::{self, pod_logs_directory};
use super::security::{effective_user, host_network, verify_run_as_non_root};
use super::{PodSyncResult, RuntimeManager, SyncContext, SyncError};
use crate::container::{ContainerState, PodRuntimeStatus, RuntimePod};
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use std::path::Path;
use std::time::{Duration, SystemTime};

fn fail(container: &str, reason: &str, message: impl Into<String>) -> SyncError {
    SyncError {
        container: container.to_string(),
        reason: reason.to_string(),
        message: message.into(),
    }
}

fn grpc_message(e: &tonic::Status) -> String {
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

/// Upstream's `calcRestartCountByLogDir`: with no record of the container (the runtime lost
/// it), continue after the highest `<n>.log` so old logs are not overwritten.
fn restart_count_from_logs(dir: &Path) -> i32 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".log")?
                .parse::<i32>()
                .ok()
        })
        .max()
        .map_or(0, |n| n + 1)
}

fn nanos_to_time(nanos: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos.max(0) as u64)
}

/// The termination-message file must exist, writable by any user the container runs as.
fn prepare_termination_file(path: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let p = Path::new(path);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if !p.exists() {
        std::fs::File::create(p)?;
    }
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666))
}

struct StartEnv<'a> {
    pod: &'a Pod,
    status: &'a PodRuntimeStatus,
    ctx: &'a SyncContext<'a>,
    sandbox_id: &'a str,
    sandbox_config: &'a cri::PodSandboxConfig,
    pod_ips: &'a [String],
    pod_desc: String,
    logs_dir: std::path::PathBuf,
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

    async fn start_containers(
        &self,
        env: &StartEnv<'_>,
        spec: &PodSpec,
        actions: &PodActions,
        result: &mut PodSyncResult,
    ) {
        let inits = spec.init_containers.as_deref().unwrap_or_default();
        for &idx in &actions.init_containers_to_start {
            let Some(c) = inits.get(idx) else { continue };
            if let Err(e) = self.start_recorded(env, c).await {
                result.errors.push(e);
                // A failing plain init container blocks the rest; a sidecar does not.
                if !is_restartable_init(c) {
                    return;
                }
            }
        }
        for &idx in &actions.containers_to_start {
            let Some(c) = spec.containers.get(idx) else {
                continue;
            };
            if let Err(e) = self.start_recorded(env, c).await {
                result.errors.push(e);
            }
        }
    }

    /// `start`, with the events upstream records for its failures.
    async fn start_recorded(&self, env: &StartEnv<'_>, c: &Container) -> Result<(), SyncError> {
        let err = match self.start(env, c).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let (reason, message) = match err.reason.as_str() {
            "CrashLoopBackOff" => (
                "BackOff",
                format!(
                    "Back-off restarting failed container {} in pod {}",
                    c.name, env.pod_desc
                ),
            ),
            "PostStartHookError" => ("FailedPostStartHook", err.message.clone()),
            "CreateContainerConfigError" | "CreateContainerError" | "RunContainerError" => {
                ("Failed", format!("Error: {}", err.message))
            }
            // Image failures were recorded where they happened.
            _ => return Err(err),
        };
        self.event(env.pod, Some(c), WARNING, reason, message);
        Err(err)
    }

    /// The backoff check, then upstream's `startContainer`.
    async fn start(&self, env: &StartEnv<'_>, c: &Container) -> Result<(), SyncError> {
        if let Some(message) = self.crash_loop_backoff(env, c) {
            return Err(fail(&c.name, "CrashLoopBackOff", message));
        }
        let image_ref = self
            .ensure_image(env.pod, c, env.ctx.pull_secrets, env.sandbox_config)
            .await
            .map_err(|(reason, message)| fail(&c.name, reason, message))?;
        let restart_count = match env.status.container(&c.name) {
            Some(s) => s.restart_count + 1,
            None => restart_count_from_logs(&env.logs_dir.join(&c.name)),
        };
        let config_error = |m: String| fail(&c.name, "CreateContainerConfigError", m);
        let opts = env
            .ctx
            .helper
            .run_container_options(env.pod, c, env.pod_ips)
            .await
            .map_err(|e| config_error(format!("{e:#}")))?;
        let default_spec = PodSpec::default();
        let user = effective_user(env.pod.spec.as_ref().unwrap_or(&default_spec), c);
        if user.run_as_non_root {
            let image = self.client.image_status(&image_ref).await.ok().flatten();
            let uid = image.as_ref().and_then(|i| i.uid.as_ref()).map(|u| u.value);
            let username = image
                .as_ref()
                .map(|i| i.username.clone())
                .unwrap_or_default();
            verify_run_as_non_root(user, uid, &username, &env.pod_desc, &c.name)
                .map_err(config_error)?;
        }
        if let Some(path) = &opts.termination_message_host_path {
            prepare_termination_file(path).map_err(|e| {
                config_error(format!("creating the termination message file {path}: {e}"))
            })?;
        }
        std::fs::create_dir_all(env.logs_dir.join(&c.name)).map_err(|e| {
            fail(
                &c.name,
                "CreateContainerError",
                format!("creating the container's log directory: {e}"),
            )
        })?;
        let config = container_config(
            env.pod,
            c,
            &opts,
            ContainerInputs {
                restart_count,
                image_ref: &image_ref,
                seccomp_profile_root: &self.seccomp_profile_root,
                memory_capacity: self.memory_capacity,
            },
        );
        let id = self
            .client
            .create_container(env.sandbox_id, config, env.sandbox_config.clone())
            .await
            .map_err(|e| fail(&c.name, "CreateContainerError", grpc_message(&e)))?;
        self.event(
            env.pod,
            Some(c),
            NORMAL,
            "Created",
            format!("Created container: {}", c.name),
        );
        self.client
            .start_container(&id)
            .await
            .map_err(|e| fail(&c.name, "RunContainerError", grpc_message(&e)))?;
        self.event(
            env.pod,
            Some(c),
            NORMAL,
            "Started",
            format!("Started container {}", c.name),
        );
        let cid = crate::container::ContainerId {
            runtime: self.runtime_name.clone(),
            id,
        };
        tracing::info!(pod = %env.pod_desc, container = %c.name, id = %cid, restart_count, "started container");
        if let Some(hook) = c.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) {
            let ports = c.ports.clone().unwrap_or_default();
            let target = HookTarget {
                container: &c.name,
                pod: &env.pod_desc,
                pod_ip: env.pod_ips.first().map(String::as_str),
                ports: &ports,
            };
            if let Err(message) = self.run_hook(&cid, hook, &target).await {
                let killed = self
                    .kill_container(KillRequest {
                        pod: Some(env.pod),
                        id: &cid,
                        name: &c.name,
                        reason: None,
                        grace_override: None,
                        pod_ip: target.pod_ip,
                        message: None,
                    })
                    .await;
                if let Err(e) = killed {
                    tracing::warn!(container = %cid, error = %e, "killing the container whose postStart hook failed");
                }
                return Err(fail(&c.name, "PostStartHookError", message));
            }
        }
        Ok(())
    }

    /// Upstream's `doBackOff`: measured from when the newest attempt exited.
    fn crash_loop_backoff(&self, env: &StartEnv<'_>, c: &Container) -> Option<String> {
        let exited = env
            .status
            .attempts(&c.name)
            .find(|s| s.state == ContainerState::Exited)?;
        let meta = &env.pod.metadata;
        let key = format!(
            "{}_{}_{}_{}_{:x}",
            meta.name.as_deref().unwrap_or_default(),
            meta.namespace.as_deref().unwrap_or_default(),
            meta.uid.as_deref().unwrap_or_default(),
            c.name,
            hash_container(c)
        );
        let finished = nanos_to_time(exited.finished_at);
        let now = SystemTime::now();
        let mut backoff = self.crash_backoff.lock();
        if backoff.in_backoff_since(&key, finished, now) {
            return Some(format!(
                "back-off {} restarting failed container={} pod={}",
                super::backoff::go_duration(backoff.get(&key)),
                c.name,
                env.pod_desc
            ));
        }
        backoff.next(&key, finished, now);
        None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_count_continues_after_existing_logs() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(restart_count_from_logs(&dir.path().join("missing")), 0);
        assert_eq!(restart_count_from_logs(dir.path()), 0);
        for f in ["0.log", "3.log", "x.log", "7.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        assert_eq!(restart_count_from_logs(dir.path()), 4);
    }

    #[test]
    fn termination_files_are_created_world_writable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/msg");
        prepare_termination_file(path.to_str().unwrap()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
    }
}
