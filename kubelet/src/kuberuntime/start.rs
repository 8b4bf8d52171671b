//! Starting one container (upstream's `startContainer`): the CrashLoopBackOff check, the
//! image, the restart count, the helper's options, create, start and the postStart hook.

use super::actions::{PodActions, is_restartable_init};
use super::container_config::{ContainerInputs, container_config};
use super::events::{NORMAL, WARNING};
use super::hooks::HookTarget;
use super::kill::KillRequest;
use super::labels::hash_container;
use super::security::{effective_user, verify_run_as_non_root};
use super::sync::{fail, grpc_message};
use super::{PodSyncResult, RuntimeManager, SyncContext, SyncError};
use crate::container::{ContainerState, PodRuntimeStatus};
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use std::path::Path;
use std::time::{Duration, SystemTime};

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

pub(super) struct StartEnv<'a> {
    pub pod: &'a Pod,
    pub status: &'a PodRuntimeStatus,
    pub ctx: &'a SyncContext<'a>,
    pub sandbox_id: &'a str,
    pub sandbox_config: &'a cri::PodSandboxConfig,
    pub pod_ips: &'a [String],
    pub pod_desc: String,
    pub logs_dir: std::path::PathBuf,
}

impl RuntimeManager {
    pub(super) async fn start_containers(
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
