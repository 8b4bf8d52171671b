//! Container garbage collection (upstream's `containerGC`): dead containers beyond
//! `maxPerPodContainer` per (pod, container name), every dead container of a deleted pod,
//! sandboxes that are neither ready, holding containers, nor the newest of a live pod, and the
//! log directories of deleted pods.

use super::RuntimeManager;
use super::labels;
use anyhow::Context;
use k8s_cri::v1 as cri;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// Upstream's `GCPolicy`; [`GcPolicy::default`] is the kubelet's (the deprecated flags that
/// changed it are gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcPolicy {
    /// Dead containers younger than this are kept.
    pub min_age: Duration,
    /// Dead instances kept per (pod, container name); negative: no limit.
    pub max_per_pod_container: i32,
    /// Dead containers kept on the node; negative: no limit.
    pub max_containers: i32,
}

impl Default for GcPolicy {
    fn default() -> Self {
        Self {
            min_age: Duration::ZERO,
            max_per_pod_container: 1,
            max_containers: -1,
        }
    }
}

/// Upstream's `ContainerGCPeriod`.
pub const CONTAINER_GC_PERIOD: Duration = Duration::from_secs(60);

/// When container GC runs: housekeeping asks every 2 s, GC runs once per period.
#[derive(Debug)]
pub struct GcSchedule {
    period: Duration,
    last: Option<std::time::Instant>,
}

impl Default for GcSchedule {
    fn default() -> Self {
        Self {
            period: CONTAINER_GC_PERIOD,
            last: None,
        }
    }
}

/// What GC needs of one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcContainer {
    pub id: String,
    pub pod_uid: String,
    pub name: String,
    pub running: bool,
    /// Nanoseconds since the epoch, as CRI reports it.
    pub created_at: i64,
    pub sandbox_id: String,
}

/// What GC needs of one sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcSandbox {
    pub id: String,
    pub pod_uid: String,
    pub ready: bool,
    pub created_at: i64,
}

/// Containers and sandboxes to remove, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GcPlan {
    pub containers: Vec<String>,
    pub sandboxes: Vec<String>,
}

/// Decides what to remove. `deleted(uid)` says the pod is gone for good (no source has it and
/// its worker is done), so nothing of it is worth keeping.
pub fn plan(
    containers: &[GcContainer],
    sandboxes: &[GcSandbox],
    policy: &GcPolicy,
    now_nanos: i64,
    deleted: &dyn Fn(&str) -> bool,
) -> GcPlan {
    let min_age = i64::try_from(policy.min_age.as_nanos()).unwrap_or(i64::MAX);
    // Evictable units: dead and old enough, newest first within a (pod, name).
    let mut units: BTreeMap<(&str, &str), Vec<&GcContainer>> = BTreeMap::new();
    for c in containers {
        if c.running || now_nanos.saturating_sub(c.created_at) < min_age {
            continue;
        }
        units
            .entry((c.pod_uid.as_str(), c.name.as_str()))
            .or_default()
            .push(c);
    }
    let mut out = GcPlan::default();
    let mut kept: Vec<&GcContainer> = Vec::new();
    for ((uid, _), mut unit) in units {
        unit.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        let keep = if deleted(uid) {
            0
        } else if policy.max_per_pod_container < 0 {
            unit.len()
        } else {
            policy.max_per_pod_container as usize
        };
        for (i, c) in unit.into_iter().enumerate() {
            if i < keep {
                kept.push(c);
            } else {
                out.containers.push(c.id.clone());
            }
        }
    }
    if policy.max_containers >= 0 && kept.len() > policy.max_containers as usize {
        // Upstream spreads the node-wide limit over pods; the oldest go first either way.
        kept.sort_by_key(|c| c.created_at);
        let excess = kept.len() - policy.max_containers as usize;
        out.containers
            .extend(kept.iter().take(excess).map(|c| c.id.clone()));
    }

    let removed: HashSet<&str> = out.containers.iter().map(String::as_str).collect();
    let active: HashSet<&str> = containers
        .iter()
        .filter(|c| !removed.contains(c.id.as_str()))
        .map(|c| c.sandbox_id.as_str())
        .collect();
    let mut by_pod: BTreeMap<&str, Vec<&GcSandbox>> = BTreeMap::new();
    for s in sandboxes {
        by_pod.entry(s.pod_uid.as_str()).or_default().push(s);
    }
    for (uid, mut pods) in by_pod {
        pods.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        // A live pod keeps its newest sandbox (its IP and attempt live there).
        let skip = usize::from(!deleted(uid));
        for s in pods.into_iter().skip(skip) {
            if !s.ready && !active.contains(s.id.as_str()) {
                out.sandboxes.push(s.id.clone());
            }
        }
    }
    out
}

/// The uid in a `<namespace>_<name>_<uid>` pod log directory name.
pub fn log_dir_uid(dir_name: &str) -> Option<&str> {
    dir_name
        .rsplit_once('_')
        .map(|(_, uid)| uid)
        .filter(|u| !u.is_empty())
}

fn label<'a>(labels: &'a std::collections::HashMap<String, String>, key: &str) -> &'a str {
    labels.get(key).map_or("", String::as_str)
}

impl RuntimeManager {
    /// How often [`Self::garbage_collect_containers_if_due`] runs GC (1 min upstream).
    pub fn set_container_gc_period(&self, period: Duration) {
        self.container_gc.lock().period = period;
    }

    /// Runs container GC with upstream's default policy when a period has passed since the
    /// last run (the first call runs it).
    pub async fn garbage_collect_containers_if_due(
        &self,
        deleted: &(dyn Fn(&str) -> bool + Send + Sync),
    ) -> anyhow::Result<()> {
        {
            let mut schedule = self.container_gc.lock();
            let now = std::time::Instant::now();
            if schedule
                .last
                .is_some_and(|last| now.duration_since(last) < schedule.period)
            {
                return Ok(());
            }
            schedule.last = Some(now);
        }
        self.garbage_collect_containers(&GcPolicy::default(), deleted)
            .await
    }

    /// One round of container GC. `deleted(uid)` must only be true for pods the kubelet
    /// knows are gone (after all sources are ready).
    pub async fn garbage_collect_containers(
        &self,
        policy: &GcPolicy,
        deleted: &(dyn Fn(&str) -> bool + Send + Sync),
    ) -> anyhow::Result<()> {
        let containers: Vec<GcContainer> = self
            .client
            .list_containers(None)
            .await
            .map_err(super::cri_error)
            .context("listing containers for GC")?
            .into_iter()
            .map(|c| GcContainer {
                pod_uid: label(&c.labels, labels::POD_UID).to_string(),
                name: label(&c.labels, labels::CONTAINER_NAME).to_string(),
                // A created, not yet started container is the newest of its name and kept.
                running: c.state == cri::ContainerState::ContainerRunning as i32,
                created_at: c.created_at,
                sandbox_id: c.pod_sandbox_id,
                id: c.id,
            })
            .collect();
        let sandboxes: Vec<GcSandbox> = self
            .client
            .list_pod_sandbox(None)
            .await
            .map_err(super::cri_error)
            .context("listing sandboxes for GC")?
            .into_iter()
            .map(|s| GcSandbox {
                pod_uid: s
                    .metadata
                    .as_ref()
                    .map(|m| m.uid.clone())
                    .unwrap_or_default(),
                ready: s.state == cri::PodSandboxState::SandboxReady as i32,
                created_at: s.created_at,
                id: s.id,
            })
            .collect();
        let now = jiff::Timestamp::now().as_nanosecond() as i64;
        let plan = plan(&containers, &sandboxes, policy, now, deleted);
        let mut errors = Vec::new();
        for id in &plan.containers {
            // The log file goes with the container, as upstream's removeContainerLog.
            let log = self
                .client
                .container_status(id)
                .await
                .ok()
                .map(|s| s.log_path)
                .filter(|p| !p.is_empty());
            match self.client.remove_container(id).await {
                Ok(()) => {
                    tracing::debug!(container = %id, "garbage collected a dead container");
                    if let Some(log) = log {
                        let _ = std::fs::remove_file(&log);
                    }
                }
                Err(e) if e.code() == tonic::Code::NotFound => {}
                Err(e) => errors.push(format!("removing container {id}: {}", e.message())),
            }
        }
        for id in &plan.sandboxes {
            let removed = match self.client.stop_pod_sandbox(id).await {
                Ok(()) => self.client.remove_pod_sandbox(id).await,
                Err(e) => Err(e),
            };
            match removed {
                Ok(()) => tracing::debug!(sandbox = %id, "garbage collected a sandbox"),
                Err(e) if e.code() == tonic::Code::NotFound => {}
                Err(e) => errors.push(format!("removing sandbox {id}: {}", e.message())),
            }
        }
        let live: HashSet<&str> = containers
            .iter()
            .filter(|c| !plan.containers.contains(&c.id))
            .map(|c| c.pod_uid.as_str())
            .collect();
        self.remove_deleted_pod_logs(&self.options.pod_logs_dir, &live, deleted);
        if !errors.is_empty() {
            anyhow::bail!("container GC: {}", errors.join("; "));
        }
        Ok(())
    }

    /// Log directories of deleted pods that no longer have any container.
    fn remove_deleted_pod_logs(
        &self,
        root: &Path,
        live: &HashSet<&str>,
        deleted: &(dyn Fn(&str) -> bool + Send + Sync),
    ) {
        let Ok(entries) = std::fs::read_dir(root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(uid) = log_dir_uid(&name) else {
                continue;
            };
            if live.contains(uid) || !deleted(uid) {
                continue;
            }
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!(dir = %entry.path().display(), error = %e, "removing a deleted pod's logs");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn c(id: &str, uid: &str, name: &str, running: bool, created: i64) -> GcContainer {
        GcContainer {
            id: id.into(),
            pod_uid: uid.into(),
            name: name.into(),
            running,
            created_at: created * S,
            sandbox_id: format!("sb-{uid}"),
        }
    }

    fn sb(id: &str, uid: &str, ready: bool, created: i64) -> GcSandbox {
        GcSandbox {
            id: id.into(),
            pod_uid: uid.into(),
            ready,
            created_at: created * S,
        }
    }

    #[test]
    fn plans_follow_upstreams_policy() {
        let default = GcPolicy::default();
        let aged = GcPolicy {
            min_age: Duration::from_secs(60),
            ..default
        };
        let capped = GcPolicy {
            max_per_pod_container: -1,
            max_containers: 1,
            ..default
        };
        // (name, containers, sandboxes, policy, deleted pods, want containers, want sandboxes)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            &str,
            Vec<GcContainer>,
            Vec<GcSandbox>,
            GcPolicy,
            Vec<&str>,
            Vec<&str>,
            Vec<&str>,
        )> = vec![
            (
                "keeps the newest dead instance and the running one",
                vec![
                    c("a1", "p", "a", false, 1),
                    c("a2", "p", "a", false, 2),
                    c("a3", "p", "a", false, 3),
                    c("a4", "p", "a", true, 4),
                ],
                vec![sb("sb-p", "p", true, 0)],
                default,
                vec![],
                vec!["a2", "a1"],
                vec![],
            ),
            (
                "counts per container name",
                vec![c("a1", "p", "a", false, 1), c("b1", "p", "b", false, 2)],
                vec![],
                default,
                vec![],
                vec![],
                vec![],
            ),
            (
                "removes everything dead of a deleted pod and its sandboxes",
                vec![c("a1", "p", "a", false, 1), c("a2", "p", "a", false, 2)],
                vec![sb("sb-p", "p", false, 0), sb("old", "p", false, -5)],
                default,
                vec!["p"],
                vec!["a2", "a1"],
                vec!["sb-p", "old"],
            ),
            (
                "keeps a deleted pod's sandbox while a container still runs in it",
                vec![c("a1", "p", "a", true, 1)],
                vec![sb("sb-p", "p", false, 0)],
                default,
                vec!["p"],
                vec![],
                vec![],
            ),
            (
                "keeps young dead containers",
                vec![c("a1", "p", "a", false, 100), c("a2", "p", "a", false, 110)],
                vec![],
                aged,
                vec![],
                vec![],
                vec![],
            ),
            (
                "a live pod keeps its newest sandbox, older dead ones go",
                vec![],
                vec![
                    sb("new", "p", false, 10),
                    sb("old", "p", false, 5),
                    sb("ready", "q", true, 1),
                ],
                default,
                vec![],
                vec![],
                vec!["old"],
            ),
            (
                "a node-wide cap removes the oldest",
                vec![c("a1", "p", "a", false, 1), c("b1", "q", "b", false, 2)],
                vec![],
                capped,
                vec![],
                vec!["a1"],
                vec![],
            ),
        ];
        for (name, containers, sandboxes, policy, deleted, want_c, want_s) in cases {
            let is_deleted = |uid: &str| deleted.contains(&uid);
            let got = plan(&containers, &sandboxes, &policy, 120 * S, &is_deleted);
            assert_eq!(got.containers, want_c, "{name}: containers");
            assert_eq!(got.sandboxes, want_s, "{name}: sandboxes");
        }
    }

    #[test]
    fn log_directories_name_their_pod() {
        assert_eq!(log_dir_uid("default_web_1234-ab"), Some("1234-ab"));
        assert_eq!(log_dir_uid("ns_a_b_uid"), Some("uid"));
        assert_eq!(log_dir_uid("nouid"), None);
        assert_eq!(log_dir_uid("ns_name_"), None);
    }
}
