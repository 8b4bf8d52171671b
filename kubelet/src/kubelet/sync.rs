//! One pod's sync steps, called by its worker: `sync_pod` (admitted pod to its spec),
//! `sync_terminating_pod` (containers stopped with the grace period) and
//! `sync_terminated_pod` (volumes, cgroup and sandbox released; the API object deleted).

use super::Kubelet;
use super::helper::Helper;
use super::pod_workers::{PodSyncer, UpdateType};
use crate::container::{ContainerState, PodRuntimeStatus, RuntimePod};
use crate::kuberuntime::{SyncContext, SyncError};
use crate::status::generate::{Inputs, ProbeView, generate};
use crate::status::phase;
use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{Pod, PodStatus, Secret};
use kube::Api;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The prober's verdicts as the status generator reads them.
struct Probes<'a>(&'a Kubelet);

impl ProbeView for Probes<'_> {
    fn ready(&self, id: &str) -> Option<bool> {
        self.0.status.ready(id)
    }

    fn started(&self, id: &str) -> Option<bool> {
        self.0.status.started(id)
    }

    fn update_pod_status(&self, pod: &Pod, status: &mut PodStatus) {
        self.0.probes.update_pod_status(pod, status);
    }
}

fn is_backoff(errors: &[SyncError]) -> bool {
    errors.iter().any(|e| e.reason.ends_with("BackOff"))
}

impl Kubelet {
    /// The status of `pod` from the runtime's view, recorded with the status manager.
    pub(super) fn update_status(
        &self,
        pod: &Pod,
        runtime: &PodRuntimeStatus,
        terminal: bool,
    ) -> PodStatus {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let old = self
            .status
            .get_pod_status(&uid)
            .or_else(|| pod.status.clone())
            .unwrap_or_default();
        let errors = self
            .sync_errors
            .lock()
            .get(&uid)
            .cloned()
            .unwrap_or_default();
        let host_ips = self.node.host_ips();
        let status = generate(&Inputs {
            pod,
            old: &old,
            runtime,
            sync_errors: &errors,
            probes: &Probes(self),
            host_ips: &host_ips,
            pod_is_terminal: terminal,
            now: jiff::Timestamp::now(),
        });
        self.status.set_pod_status(pod, status.clone());
        status
    }

    async fn pull_secrets(&self, pod: &Pod) -> Vec<Secret> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        let mut out = Vec::new();
        let refs = pod
            .spec
            .as_ref()
            .and_then(|s| s.image_pull_secrets.as_ref());
        for r in refs.into_iter().flatten() {
            match api.get_opt(&r.name).await {
                Ok(Some(s)) => out.push(s),
                Ok(None) => tracing::warn!(secret = %r.name, "image pull secret not found"),
                Err(e) => {
                    tracing::warn!(secret = %r.name, error = %e, "reading an image pull secret failed")
                }
            }
        }
        out
    }

    fn make_dirs(&self, uid: &str) -> anyhow::Result<()> {
        let dir = self.pod_dir(uid);
        for sub in ["volumes", "plugins", "containers"] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("creating {}", dir.join(sub).display()))?;
        }
        Ok(())
    }

    async fn inspect(&self, pod: &Pod) -> anyhow::Result<PodRuntimeStatus> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let at = Instant::now();
        let status = self
            .runtime
            .get_pod_status(
                &uid,
                pod.metadata.name.as_deref().unwrap_or_default(),
                pod.metadata.namespace.as_deref().unwrap_or_default(),
            )
            .await?;
        self.cache.set(&uid, status.clone(), at);
        Ok(status)
    }

    async fn running_pod(&self, uid: &str) -> anyhow::Result<RuntimePod> {
        let pods = self.runtime.get_pods(true).await?;
        Ok(pods
            .into_iter()
            .find(|p| p.uid == uid)
            .unwrap_or_else(|| RuntimePod {
                uid: uid.to_string(),
                ..Default::default()
            }))
    }

    fn record_errors(&self, uid: &str, errors: Vec<SyncError>) {
        let mut map = self.sync_errors.lock();
        if errors.is_empty() {
            map.remove(uid);
        } else {
            map.insert(uid.to_string(), errors);
        }
    }
}

#[async_trait::async_trait]
impl PodSyncer for Kubelet {
    async fn sync_pod(
        &self,
        kind: UpdateType,
        pod: &Arc<Pod>,
        runtime: Arc<PodRuntimeStatus>,
    ) -> anyhow::Result<bool> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let status = self.update_status(pod, &runtime, false);
        if phase::is_terminal(status.phase.as_deref()) {
            return Ok(true);
        }
        tracing::debug!(uid, ?kind, phase = ?status.phase, "pod sync started");
        self.make_dirs(&uid)?;
        self.cgroups
            .ensure_pod_cgroup(pod)
            .await
            .context("creating the pod cgroup")?;
        if let Err(e) = self.volumes.mount_pod(pod).await {
            let message = format!("{e:#}");
            self.record_errors(&uid, Vec::new());
            bail!("unable to attach or mount volumes: {message}");
        }
        self.probes.add_pod(pod);
        let secrets = self.pull_secrets(pod).await;
        let helper = Helper(self);
        let liveness = |id: &crate::container::ContainerId| self.probes.liveness(id);
        let startup = |id: &crate::container::ContainerId| self.probes.startup(id);
        let result = self
            .runtime
            .sync_pod(
                pod,
                &runtime,
                SyncContext {
                    pull_secrets: &secrets,
                    helper: &helper,
                    liveness: &liveness,
                    startup: &startup,
                },
            )
            .await;
        tracing::debug!(uid, "runtime sync done");
        let errors = result.errors;
        let backoff = is_backoff(&errors);
        let summary: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}: {}", e.container, e.reason, e.message))
            .collect();
        self.record_errors(&uid, errors);
        // The status shows what the sync did at once rather than after the next relist.
        match self.inspect(pod).await {
            Ok(fresh) => {
                let status = self.update_status(pod, &fresh, false);
                tracing::debug!(uid, phase = ?status.phase, "status after the sync");
            }
            Err(e) => {
                tracing::debug!(uid, error = %format!("{e:#}"), "inspecting the pod after its sync failed")
            }
        }
        if backoff {
            // Back-off expiries are checked by the 1 s tick rather than the 10 s retry.
            self.enqueue(&uid, Duration::from_secs(1));
        }
        if !summary.is_empty() && !backoff {
            bail!("{}", summary.join("; "));
        }
        Ok(false)
    }

    async fn sync_terminating_pod(
        &self,
        uid: &str,
        pod: Option<&Arc<Pod>>,
        running: Option<&RuntimePod>,
        grace: Option<i64>,
    ) -> anyhow::Result<()> {
        if let Some(pod) = pod {
            self.probes.remove_pod(pod);
        }
        let listed = match running {
            Some(r) => r.clone(),
            None => self.running_pod(uid).await?,
        };
        self.runtime
            .kill_pod(pod.map(|p| p.as_ref()), &listed, grace)
            .await
            .context("killing the pod")?;
        let Some(pod) = pod else { return Ok(()) };
        let fresh = self.inspect(pod).await?;
        let still_running: Vec<&str> = fresh
            .containers
            .iter()
            .filter(|c| c.state == ContainerState::Running)
            .map(|c| c.name.as_str())
            .collect();
        if !still_running.is_empty() {
            bail!("containers still running: {}", still_running.join(", "));
        }
        if !self.rejected.lock().contains(uid) {
            self.update_status(pod, &fresh, true);
        }
        Ok(())
    }

    async fn sync_terminated_pod(&self, uid: &str, pod: Option<&Arc<Pod>>) -> anyhow::Result<()> {
        self.volumes
            .unmount_pod(uid)
            .await
            .context("tearing down the pod's volumes")?;
        self.cgroups
            .remove_pod_cgroup(uid)
            .await
            .context("removing the pod cgroup")?;
        let going = pod.is_none_or(|p| p.metadata.deletion_timestamp.is_some());
        if going && let Err(e) = self.runtime.remove_pod(uid).await {
            tracing::warn!(uid, error = %format!("{e:#}"), "removing the pod's sandboxes and containers failed");
        }
        if pod.is_some() {
            self.status.mark_deletable(uid);
        }
        self.sync_errors.lock().remove(uid);
        Ok(())
    }

    fn requeue(&self, uid: &str, after: Duration) {
        self.enqueue(uid, after);
    }
}
