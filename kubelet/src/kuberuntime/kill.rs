//! Stopping containers and pods (preStop hook within the grace period, then `StopContainer`
//! with what is left, at least 2 s) and removing what a gone pod left behind.

use super::RuntimeManager;
use super::actions::{KillReason, is_restartable_init};
use super::events::{NORMAL, WARNING};
use super::hooks::HookTarget;
use super::labels::{self, annotated_info};
use super::sandbox::pod_logs_directory;
use crate::container::{ContainerId, ContainerState, RuntimePod};
use anyhow::Context;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Upstream's `minimumGracePeriodInSeconds`: always give a container a moment to stop.
const MIN_GRACE_SECS: i64 = 2;
/// The API default of `terminationGracePeriodSeconds`.
const DEFAULT_GRACE_SECS: i64 = 30;

pub fn format_pod(name: &str, namespace: &str, uid: &str) -> String {
    format!("{name}_{namespace}({uid})")
}

pub fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
}

/// Upstream's `setTerminationGracePeriod`: the deletion's grace, else a failed probe's own
/// grace, else the pod's.
pub fn grace_period(pod: &Pod, container: Option<&Container>, reason: Option<KillReason>) -> i64 {
    if let Some(g) = pod.metadata.deletion_grace_period_seconds {
        return g;
    }
    let probe = match reason {
        Some(KillReason::Liveness) => container.and_then(|c| c.liveness_probe.as_ref()),
        Some(KillReason::Startup) => container.and_then(|c| c.startup_probe.as_ref()),
        _ => None,
    };
    if let Some(g) = probe.and_then(|p| p.termination_grace_period_seconds) {
        return g;
    }
    pod.spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(DEFAULT_GRACE_SECS)
}

/// The grace StopContainer gets once the preStop hook used `elapsed_secs` of it.
pub fn remaining_grace(grace: i64, elapsed_secs: i64, grace_override: Option<i64>) -> i64 {
    if let Some(g) = grace_override {
        return g;
    }
    (grace - elapsed_secs).max(MIN_GRACE_SECS)
}

fn ignore_not_found(r: Result<(), tonic::Status>) -> Result<(), tonic::Status> {
    match r {
        Err(e) if e.code() == tonic::Code::NotFound => Ok(()),
        other => other,
    }
}

pub struct KillRequest<'a> {
    pub pod: Option<&'a Pod>,
    pub id: &'a ContainerId,
    pub name: &'a str,
    pub reason: Option<KillReason>,
    pub grace_override: Option<i64>,
    pub pod_ip: Option<&'a str>,
    /// Why, for the Killing event; `Stopping container <name>` when None.
    pub message: Option<&'a str>,
}

impl RuntimeManager {
    /// Upstream's `killContainer`.
    pub(super) async fn kill_container(&self, req: KillRequest<'_>) -> anyhow::Result<()> {
        let container = req.pod.and_then(|p| find_container(p, req.name));
        let (grace, pre_stop, pod_desc): (i64, Option<LifecycleHandler>, String) = match (
            req.pod, container,
        ) {
            (Some(pod), Some(c)) => (
                grace_period(pod, Some(c), req.reason),
                c.lifecycle.as_ref().and_then(|l| l.pre_stop.clone()),
                format_pod(
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.uid.as_deref().unwrap_or_default(),
                ),
            ),
            // The spec is gone: what the container's annotations recorded stands in.
            _ => match self.client.container_status(&req.id.id).await {
                Ok(s) => {
                    let info = annotated_info(&s.annotations);
                    let get = |k: &str| s.labels.get(k).cloned().unwrap_or_default();
                    (
                        info.deletion_grace_period
                            .or(info.termination_grace_period)
                            .unwrap_or(DEFAULT_GRACE_SECS),
                        info.pre_stop,
                        format_pod(
                            &get(labels::POD_NAME),
                            &get(labels::POD_NAMESPACE),
                            &get(labels::POD_UID),
                        ),
                    )
                }
                Err(e) if e.code() == tonic::Code::NotFound => return Ok(()),
                Err(e) => {
                    tracing::warn!(container = %req.id, error = %e, "no status for the container to kill; stopping it with the default grace");
                    (DEFAULT_GRACE_SECS, None, String::new())
                }
            },
        };
        if let Some(pod) = req.pod {
            let message = req.message.map_or_else(
                || format!("Stopping container {}", req.name),
                str::to_string,
            );
            self.event(pod, container, NORMAL, "Killing", message);
        }
        let mut elapsed = 0;
        if let Some(handler) = pre_stop.as_ref().filter(|_| grace > 0) {
            let ports = container.and_then(|c| c.ports.clone()).unwrap_or_default();
            let target = HookTarget {
                container: req.name,
                pod: &pod_desc,
                pod_ip: req.pod_ip,
                ports: &ports,
            };
            let start = Instant::now();
            match tokio::time::timeout(
                Duration::from_secs(grace as u64),
                self.run_hook(req.id, handler, &target),
            )
            .await
            {
                Ok(Ok(())) => {}
                Ok(Err(message)) => {
                    tracing::warn!(container = %req.id, %message, "preStop hook failed");
                    if let Some(pod) = req.pod {
                        self.event(pod, container, WARNING, "FailedPreStopHook", message);
                    }
                }
                Err(_) => {
                    tracing::warn!(container = %req.id, grace, "preStop hook did not finish within the grace period");
                }
            }
            elapsed = start.elapsed().as_secs() as i64;
        }
        let grace = remaining_grace(grace, elapsed, req.grace_override);
        tracing::info!(container = %req.id, name = req.name, grace, "stopping container");
        ignore_not_found(self.client.stop_container(&req.id.id, grace).await)
            .with_context(|| format!("stopping container {} ({})", req.name, req.id))
    }

    /// Stops every live container of the pod (regular ones together, then sidecars in reverse
    /// order) and then its sandboxes.
    pub(super) async fn kill_pod_inner<'a>(
        &self,
        pod: Option<&'a Pod>,
        running: &'a RuntimePod,
        grace_override: Option<i64>,
        pod_ip: Option<&'a str>,
    ) -> anyhow::Result<()> {
        let live: Vec<&(ContainerId, String, ContainerState)> = running
            .containers
            .iter()
            .filter(|(_, _, state)| *state != ContainerState::Exited)
            .collect();
        let sidecar_order: HashMap<&str, usize> = pod
            .and_then(|p| p.spec.as_ref())
            .and_then(|s| s.init_containers.as_ref())
            .map(|inits| {
                inits
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| is_restartable_init(c))
                    .map(|(i, c)| (c.name.as_str(), i))
                    .collect()
            })
            .unwrap_or_default();
        type Row = (ContainerId, String, ContainerState);
        let (mut sidecars, regular): (Vec<&Row>, Vec<&Row>) = live
            .into_iter()
            .partition(|(_, name, _)| sidecar_order.contains_key(name.as_str()));
        let kill = |id: &'a ContainerId, name: &'a str| KillRequest {
            pod,
            id,
            name,
            reason: None,
            grace_override,
            pod_ip,
            message: None,
        };
        let mut errors: Vec<String> = futures::future::join_all(
            regular
                .iter()
                .map(|(id, name, _)| self.kill_container(kill(id, name))),
        )
        .await
        .into_iter()
        .filter_map(|r| r.err().map(|e| format!("{e:#}")))
        .collect();
        sidecars.sort_by_key(|(_, name, _)| std::cmp::Reverse(sidecar_order[name.as_str()]));
        for (id, name, _) in &sidecars {
            if let Err(e) = self.kill_container(kill(id, name)).await {
                errors.push(format!("{e:#}"));
            }
        }
        for (id, _) in &running.sandboxes {
            if let Err(e) = ignore_not_found(self.client.stop_pod_sandbox(id).await) {
                errors.push(format!("stopping sandbox {id}: {}", e.message()));
            }
        }
        if !errors.is_empty() {
            anyhow::bail!("killing pod {}: {}", running.uid, errors.join("; "));
        }
        Ok(())
    }

    pub(super) async fn remove_pod_inner(&self, uid: &str) -> anyhow::Result<()> {
        let selector = HashMap::from([(labels::POD_UID.to_string(), uid.to_string())]);
        let containers = self
            .client
            .list_containers(Some(cri::ContainerFilter {
                label_selector: selector.clone(),
                ..Default::default()
            }))
            .await
            .context("listing the pod's containers")?;
        let mut errors = Vec::new();
        for c in &containers {
            if let Err(e) = ignore_not_found(self.client.remove_container(&c.id).await) {
                errors.push(format!("removing container {}: {}", c.id, e.message()));
            }
        }
        let sandboxes = self
            .client
            .list_pod_sandbox(Some(cri::PodSandboxFilter {
                label_selector: selector,
                ..Default::default()
            }))
            .await
            .context("listing the pod's sandboxes")?;
        let mut log_dirs = Vec::new();
        for sb in &sandboxes {
            if let Some(m) = &sb.metadata {
                log_dirs.push(pod_logs_directory(
                    &self.options.pod_logs_dir,
                    &m.namespace,
                    &m.name,
                    uid,
                ));
            }
            let stopped = ignore_not_found(self.client.stop_pod_sandbox(&sb.id).await);
            let removed = stopped.and(ignore_not_found(
                self.client.remove_pod_sandbox(&sb.id).await,
            ));
            if let Err(e) = removed {
                errors.push(format!("removing sandbox {}: {}", sb.id, e.message()));
            }
        }
        if !errors.is_empty() {
            anyhow::bail!("removing pod {uid}: {}", errors.join("; "));
        }
        log_dirs.dedup();
        for dir in log_dirs {
            if let Err(e) = std::fs::remove_dir_all(&dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(dir = %dir.display(), error = %e, "removing the pod's logs");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, Probe};

    #[test]
    fn grace_periods_follow_upstream() {
        let probe = |g| Probe {
            termination_grace_period_seconds: g,
            ..Default::default()
        };
        let c = Container {
            name: "c".into(),
            liveness_probe: Some(probe(Some(5))),
            startup_probe: Some(probe(None)),
            ..Default::default()
        };
        let pod = |deletion: Option<i64>, spec: Option<i64>| {
            let mut p = Pod {
                spec: Some(PodSpec {
                    termination_grace_period_seconds: spec,
                    containers: vec![c.clone()],
                    ..Default::default()
                }),
                ..Default::default()
            };
            p.metadata.deletion_grace_period_seconds = deletion;
            p
        };
        let cases = [
            (pod(Some(7), Some(60)), Some(KillReason::Liveness), 7),
            (pod(None, Some(60)), Some(KillReason::Liveness), 5),
            (pod(None, Some(60)), Some(KillReason::Startup), 60),
            (pod(None, Some(60)), None, 60),
            (pod(None, None), None, 30),
            (pod(Some(0), Some(60)), None, 0),
        ];
        for (p, reason, want) in cases {
            assert_eq!(grace_period(&p, Some(&c), reason), want, "{reason:?}");
        }
        // (grace, preStop took, override, StopContainer timeout)
        let stops = [
            (30, 0, None, 30),
            (30, 29, None, 2),
            (0, 0, None, 2),
            (30, 3, Some(0), 0),
            (30, 0, Some(1), 1),
        ];
        for (grace, elapsed, over, want) in stops {
            assert_eq!(remaining_grace(grace, elapsed, over), want);
        }
        assert_eq!(format_pod("p", "ns", "u"), "p_ns(u)");
    }
}
