//! One probe of one container, run every `periodSeconds` (upstream's prober worker): it follows
//! the container's current id from the pod status, waits `initialDelaySeconds`, lets the startup
//! probe gate the others, and changes the verdict only after `successThreshold` /
//! `failureThreshold` consecutive results.

use super::{Inner, ProbeKind, probes};
use crate::container::{ContainerId, ProbeResult};
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, Probe};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Counts consecutive results and says when the verdict may change.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Streak {
    last: Option<ProbeResult>,
    run: u32,
}

impl Streak {
    /// Records a result; returns it when its run reaches its threshold (the verdict to set).
    pub fn observe(
        &mut self,
        result: ProbeResult,
        success_threshold: u32,
        failure_threshold: u32,
    ) -> Option<ProbeResult> {
        if self.last == Some(result) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(result);
            self.run = 1;
        }
        let threshold = match result {
            ProbeResult::Success => success_threshold.max(1),
            ProbeResult::Failure => failure_threshold.max(1),
            ProbeResult::Unknown => 1,
        };
        (self.run >= threshold).then_some(result)
    }

    pub fn reset(&mut self) {
        self.run = 0;
    }
}

/// What the manager keeps of a running worker.
pub struct Handle {
    pub id: u64,
    pub stop: CancellationToken,
    pub trigger: Arc<Notify>,
    /// The newest copy of the pod (deletion is noticed through it).
    pub pod: Arc<Mutex<Arc<Pod>>>,
}

pub struct Worker {
    pub inner: Arc<Inner>,
    pub kind: ProbeKind,
    pub pod: Arc<Mutex<Arc<Pod>>>,
    pub container: Container,
    pub spec: Probe,
    pub id: u64,
    pub stop: CancellationToken,
    pub trigger: Arc<Notify>,
    container_id: Option<ContainerId>,
    on_hold: bool,
    streak: Streak,
}

fn initial_value(kind: ProbeKind) -> ProbeResult {
    match kind {
        ProbeKind::Liveness => ProbeResult::Success,
        ProbeKind::Readiness => ProbeResult::Failure,
        ProbeKind::Startup => ProbeResult::Unknown,
    }
}

fn find_status<'a>(
    statuses: Option<&'a Vec<ContainerStatus>>,
    name: &str,
) -> Option<&'a ContainerStatus> {
    statuses?
        .iter()
        .find(|c| c.name == name && c.container_id.as_deref().is_some_and(|id| !id.is_empty()))
}

impl Worker {
    pub fn new(
        inner: Arc<Inner>,
        kind: ProbeKind,
        container: Container,
        spec: Probe,
        handle: &Handle,
    ) -> Self {
        Self {
            inner,
            kind,
            pod: handle.pod.clone(),
            container,
            spec,
            id: handle.id,
            stop: handle.stop.clone(),
            trigger: handle.trigger.clone(),
            container_id: None,
            on_hold: false,
            streak: Streak::default(),
        }
    }

    fn pod_uid(&self) -> String {
        self.pod.lock().metadata.uid.clone().unwrap_or_default()
    }

    pub async fn run(mut self) {
        let period = Duration::from_secs(self.spec.period_seconds.unwrap_or(10).max(1) as u64);
        // Right after a kubelet start every worker would probe at once: spread them out.
        if self.inner.started.elapsed() < period {
            let jitter = period.mul_f64(rand::random::<f64>());
            tokio::select! {
                _ = self.stop.cancelled() => {}
                _ = tokio::time::sleep(jitter) => {}
            }
        }
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        while !self.stop.is_cancelled() && self.do_probe().await {
            tokio::select! {
                _ = self.stop.cancelled() => break,
                _ = ticker.tick() => {}
                _ = self.trigger.notified() => {}
            }
        }
        if let Some(id) = &self.container_id {
            self.inner.results.remove(self.kind, id);
        }
        self.inner
            .remove_worker(&self.pod_uid(), &self.container.name, self.kind, self.id);
    }

    /// One round; false ends the worker.
    async fn do_probe(&mut self) -> bool {
        let pod = self.pod.lock().clone();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let Some(status) = self.inner.status.get_pod_status(&uid) else {
            return true; // not created yet, or already gone
        };
        if matches!(status.phase.as_deref(), Some("Failed" | "Succeeded")) {
            return false;
        }
        let Some(c) = find_status(status.container_statuses.as_ref(), &self.container.name)
            .or_else(|| {
                find_status(
                    status.init_container_statuses.as_ref(),
                    &self.container.name,
                )
            })
            .cloned()
        else {
            return true;
        };
        let Some(id) = c.container_id.as_deref().and_then(ContainerId::parse) else {
            return true;
        };
        if self.container_id.as_ref() != Some(&id) {
            if let Some(old) = &self.container_id {
                self.inner.results.remove(self.kind, old);
            }
            self.inner
                .results
                .set(self.kind, &id, initial_value(self.kind), &uid);
            self.container_id = Some(id.clone());
            self.on_hold = false;
        }
        if self.on_hold {
            return true; // until a new container replaces the failed one
        }
        let state = c.state.clone().unwrap_or_default();
        let Some(running) = state.running else {
            self.inner
                .results
                .set(self.kind, &id, ProbeResult::Failure, &uid);
            // A terminated container that will not be restarted needs no more probing.
            let restart_never =
                pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("Never");
            return state.terminated.is_none() || !restart_never;
        };
        if pod.metadata.deletion_timestamp.is_some() && self.kind != ProbeKind::Readiness {
            // A terminating pod must not be restarted by its probes.
            self.inner
                .results
                .set(self.kind, &id, ProbeResult::Success, &uid);
            return false;
        }
        let delay = i64::from(self.spec.initial_delay_seconds.unwrap_or(0));
        if let Some(started) = running.started_at {
            let since = jiff::Timestamp::now().as_second() - started.0.as_second();
            if since < delay {
                return true;
            }
        }
        let started = c.started == Some(true);
        if started == (self.kind == ProbeKind::Startup) {
            // Startup probes stop once started; the others wait for it.
            return true;
        }
        let verdict = self.probe_with_retries(&status, &id).await;
        let Some(verdict) = verdict else {
            return true; // the probe could not run: no verdict
        };
        let result = if verdict.success {
            ProbeResult::Success
        } else {
            ProbeResult::Failure
        };
        if !verdict.success {
            tracing::info!(pod = %pod.metadata.name.as_deref().unwrap_or(""), container = %self.container.name, probe = ?self.kind, output = %verdict.output, "probe failed");
            self.probe_event(&pod, "Unhealthy", "failed", &verdict.output);
        } else if verdict.warning {
            self.probe_event(&pod, "ProbeWarning", "warning", &verdict.output);
        }
        let success_threshold = self.spec.success_threshold.unwrap_or(1).max(1) as u32;
        let failure_threshold = self.spec.failure_threshold.unwrap_or(3).max(1) as u32;
        let Some(result) = self
            .streak
            .observe(result, success_threshold, failure_threshold)
        else {
            return true;
        };
        self.inner.results.set(self.kind, &id, result, &uid);
        if self.kind != ProbeKind::Readiness && result == ProbeResult::Failure {
            // The container will be restarted: probing it meanwhile only races the kill.
            self.on_hold = true;
            self.streak.reset();
        }
        true
    }

    /// Upstream records every failed probe (`Unhealthy`), not only the ones crossing the
    /// threshold, and every warning (`ProbeWarning`).
    fn probe_event(&self, pod: &Pod, reason: &'static str, verdict: &str, output: &str) {
        let Some(recorder) = self.inner.events.read().clone() else {
            return;
        };
        let kind = match self.kind {
            ProbeKind::Liveness => "Liveness",
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Startup => "Startup",
        };
        recorder(crate::kuberuntime::RuntimeEvent {
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            pod_namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            field_path: crate::kuberuntime::field_path(pod, &self.container.name),
            type_: "Warning",
            reason,
            message: format!("{kind} probe {verdict}: {output}"),
        });
    }

    async fn probe_with_retries(
        &self,
        status: &k8s_openapi::api::core::v1::PodStatus,
        id: &ContainerId,
    ) -> Option<probes::Verdict> {
        for attempt in 0..3 {
            match probes::run(
                &self.spec,
                status,
                &self.container,
                id,
                self.inner.runtime.as_deref(),
            )
            .await
            {
                Ok(v) => return Some(v),
                Err(e) => {
                    tracing::debug!(container = %self.container.name, probe = ?self.kind, attempt, error = format!("{e:#}"), "probe errored")
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProbeResult::{Failure as F, Success as S};

    #[test]
    fn verdicts_change_only_at_thresholds() {
        // (success threshold, failure threshold, results, verdicts set after each result)
        type Case<'a> = (u32, u32, &'a [ProbeResult], &'a [Option<ProbeResult>]);
        let cases: &[Case] = &[
            (
                1,
                3,
                &[S, F, F, F, F],
                &[Some(S), None, None, Some(F), Some(F)],
            ),
            (1, 1, &[F, S, F], &[Some(F), Some(S), Some(F)]),
            (
                2,
                3,
                &[S, S, F, S, S],
                &[None, Some(S), None, None, Some(S)],
            ),
            (1, 2, &[F, S, F, F], &[None, Some(S), None, Some(F)]),
            // Zero thresholds act as one.
            (0, 0, &[F, S], &[Some(F), Some(S)]),
        ];
        for (i, (st, ft, results, want)) in cases.iter().enumerate() {
            let mut streak = Streak::default();
            let got: Vec<_> = results
                .iter()
                .map(|r| streak.observe(*r, *st, *ft))
                .collect();
            assert_eq!(&got, want, "case {i}");
        }
    }

    #[test]
    fn reset_restarts_the_count() {
        let mut s = Streak::default();
        assert_eq!(s.observe(F, 1, 2), None);
        assert_eq!(s.observe(F, 1, 2), Some(F));
        s.reset();
        assert_eq!(s.observe(F, 1, 2), None);
    }
}
