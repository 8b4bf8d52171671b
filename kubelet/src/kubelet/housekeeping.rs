//! Housekeeping every 2 s (upstream's `HandlePodCleanups`): pods no source wants any more are
//! stopped, orphaned runtime pods killed, finished pods forgotten, their directories, volumes
//! and cgroups removed, mirror pods created for static pods that lack one (orphaned ones
//! deleted), and dead containers garbage collected once a minute.

use super::Kubelet;
use super::pod_workers::{Lifecycle, UpdateType, WorkUpdate};
use crate::pod::{is_static_pod, pod_full_name};
use std::collections::HashSet;
use std::path::Path;

/// Whether anything is mounted at or under `dir` (a directory still holding volumes must not
/// be removed recursively).
fn has_mounts_under(dir: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return true;
    };
    let prefix = dir.display().to_string();
    info.lines().any(|l| {
        l.split(' ')
            .nth(4)
            .is_some_and(|mp| mp == prefix || mp.starts_with(&format!("{prefix}/")))
    })
}

impl Kubelet {
    pub(super) async fn housekeeping(&self) {
        let desired: HashSet<String> = self
            .pods
            .get_pods()
            .iter()
            .filter_map(|p| p.metadata.uid.clone())
            .collect();

        // Workers of pods no source wants: stop them, forget the finished ones.
        let mut known = HashSet::new();
        for (uid, lifecycle) in self.workers().known() {
            if desired.contains(&uid) {
                known.insert(uid);
                continue;
            }
            match lifecycle {
                Lifecycle::Terminated => {
                    self.workers().forget(&uid);
                    self.status.remove_pod(&uid);
                    self.cache.delete(&uid);
                    self.rejected.lock().remove(&uid);
                }
                _ => {
                    known.insert(uid.clone());
                    self.workers().update_pod(WorkUpdate {
                        kind: UpdateType::Kill,
                        pod: None,
                        running: Some(crate::container::RuntimePod {
                            uid,
                            ..Default::default()
                        }),
                        grace_override: None,
                    });
                }
            }
        }

        // Runtime pods nobody wants: orphans from before a restart or from deleted pods.
        let running = self.pleg.pods().await;
        let mut runtime_uids = HashSet::new();
        for pod in running {
            runtime_uids.insert(pod.uid.clone());
            if desired.contains(&pod.uid) || known.contains(&pod.uid) {
                continue;
            }
            tracing::info!(uid = %pod.uid, name = %pod.name, "killing an orphaned runtime pod");
            known.insert(pod.uid.clone());
            self.workers().update_pod(WorkUpdate {
                kind: UpdateType::Kill,
                pod: None,
                running: Some(pod),
                grace_override: Some(1),
            });
        }

        // Directories of pods that are gone everywhere.
        let pods_dir = self.settings.root_dir.join("pods");
        if let Ok(entries) = std::fs::read_dir(&pods_dir) {
            for entry in entries.flatten() {
                let uid = entry.file_name().to_string_lossy().into_owned();
                if desired.contains(&uid) || known.contains(&uid) || runtime_uids.contains(&uid) {
                    continue;
                }
                if let Err(e) = self.volumes.unmount_pod(&uid).await {
                    tracing::warn!(uid, error = %format!("{e:#}"), "tearing down an orphaned pod's volumes failed");
                    continue;
                }
                let dir = entry.path();
                if has_mounts_under(&dir) {
                    tracing::warn!(dir = %dir.display(), "orphaned pod directory still has mounts; kept");
                    continue;
                }
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "removing an orphaned pod directory failed");
                }
            }
        }

        let keep_set: HashSet<String> = desired.union(&known).cloned().collect();
        let keep = |uid: &str| keep_set.contains(uid);
        if let Err(e) = self.cgroups.cleanup(&keep_set).await {
            tracing::warn!(error = %format!("{e:#}"), "cleaning up pod cgroups failed");
        }
        self.probes.cleanup(&desired);
        // Upstream runs container GC on its own 1-minute loop; here housekeeping drives it.
        let gone = |uid: &str| !keep_set.contains(uid);
        if let Err(e) = self.runtime.garbage_collect_containers_if_due(&gone).await {
            tracing::warn!(error = %format!("{e:#}"), "container garbage collection failed");
        }
        for uid in self.status.known_uids() {
            if !keep(&uid) {
                self.status.remove_pod(&uid);
            }
        }

        self.sync_mirror_pods().await;
    }

    async fn sync_mirror_pods(&self) {
        for name in self.pods.orphaned_mirror_pods() {
            match self.mirror.delete_mirror_pod(&name, None).await {
                Ok(_) => tracing::info!(pod = %name, "deleted an orphaned mirror pod"),
                Err(e) => {
                    tracing::warn!(pod = %name, error = %format!("{e:#}"), "deleting an orphaned mirror pod failed")
                }
            }
        }
        for pod in self.pods.get_pods() {
            if !is_static_pod(&pod) || pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            if !matches!(self.workers().lifecycle(uid), Some(Lifecycle::Syncing)) {
                continue;
            }
            let mirror = self.pods.get_mirror_pod_by_pod(&pod);
            let stale = mirror
                .as_ref()
                .is_some_and(|m| !crate::pod::is_mirror_pod_of(m, &pod));
            if stale {
                let name = pod_full_name(&pod);
                let mirror_uid = mirror.as_ref().and_then(|m| m.metadata.uid.clone());
                if let Err(e) = self
                    .mirror
                    .delete_mirror_pod(&name, mirror_uid.as_deref())
                    .await
                {
                    tracing::warn!(pod = %name, error = %format!("{e:#}"), "deleting an outdated mirror pod failed");
                    continue;
                }
            }
            if (mirror.is_none() || stale)
                && let Err(e) = self.mirror.create_mirror_pod(&pod).await
            {
                tracing::warn!(pod = %pod_full_name(&pod), error = %format!("{e:#}"), "creating the mirror pod failed");
            }
        }
    }
}
