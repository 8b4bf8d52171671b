//! The volume manager: sets up a pod's volumes under `<root>/pods/<uid>/volumes`, refreshes
//! the object-backed ones, and tears everything down when the pod is gone.

use super::atomic_writer::write_atomic;
use super::hostpath::check_host_path;
use super::mounts::{ensure_tmpfs, unmount_all_under};
use super::ownership::set_volume_ownership;
use super::payload::{
    config_map_data, downward_payload, keyed_payload, projected_payload, secret_data,
};
use super::token::TokenCache;
use crate::envvars::{Allocatable, ObjectSource};
use crate::kuberuntime::{EventRecorder, RuntimeEvent};
use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::{Pod, Volume};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The plugin directory names upstream uses under a pod's `volumes/`.
pub const EMPTY_DIR: &str = "kubernetes.io~empty-dir";
pub const CONFIG_MAP: &str = "kubernetes.io~configmap";
pub const SECRET: &str = "kubernetes.io~secret";
pub const PROJECTED: &str = "kubernetes.io~projected";
pub const DOWNWARD_API: &str = "kubernetes.io~downward-api";

/// `<root>/pods/<uid>`: where a pod's volumes, `etc-hosts` and other per-pod files live.
pub fn pod_dir(root_dir: &Path, uid: &str) -> PathBuf {
    root_dir.join("pods").join(uid)
}

/// Where one volume is set up on the host, or None for hostPath volumes (the path itself is
/// used) and unsupported types.
pub fn volume_host_dir(root_dir: &Path, uid: &str, volume: &Volume) -> Option<PathBuf> {
    let plugin = plugin_dir(volume)?;
    Some(
        pod_dir(root_dir, uid)
            .join("volumes")
            .join(plugin)
            .join(&volume.name),
    )
}

fn plugin_dir(v: &Volume) -> Option<&'static str> {
    if v.empty_dir.is_some() {
        Some(EMPTY_DIR)
    } else if v.config_map.is_some() {
        Some(CONFIG_MAP)
    } else if v.secret.is_some() {
        Some(SECRET)
    } else if v.projected.is_some() {
        Some(PROJECTED)
    } else if v.downward_api.is_some() {
        Some(DOWNWARD_API)
    } else {
        None
    }
}

/// Why a volume type cannot be set up here.
pub(super) fn unsupported_kind(v: &Volume) -> Option<&'static str> {
    let kinds = [
        (v.persistent_volume_claim.is_some(), "persistentVolumeClaim"),
        (v.ephemeral.is_some(), "ephemeral"),
        (v.csi.is_some(), "csi"),
        (v.nfs.is_some(), "nfs"),
        (v.iscsi.is_some(), "iscsi"),
        (v.fc.is_some(), "fc"),
        (v.image.is_some(), "image"),
    ];
    if let Some((_, k)) = kinds.iter().find(|(set, _)| *set) {
        return Some(k);
    }
    let known = v.host_path.is_some() || plugin_dir(v).is_some();
    (!known).then_some("this")
}

/// Sets up and tears down pod volumes on this node.
pub struct VolumeManager {
    pub(super) root_dir: PathBuf,
    source: Arc<dyn ObjectSource>,
    node_name: String,
    pub(super) cluster_domain: RwLock<String>,
    allocatable: RwLock<Allocatable>,
    tokens: TokenCache,
    /// One writer per pod: a sync and a resync never write the same volume at once.
    pod_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    events: RwLock<Option<EventRecorder>>,
}

impl VolumeManager {
    /// A manager keeping pods under `<root_dir>/pods`, reading objects and tokens from
    /// `source`.
    pub fn new(
        root_dir: impl Into<PathBuf>,
        source: Arc<dyn ObjectSource>,
        node_name: impl Into<String>,
    ) -> Self {
        Self {
            root_dir: root_dir.into(),
            source,
            node_name: node_name.into(),
            cluster_domain: RwLock::new(String::new()),
            allocatable: RwLock::new(Allocatable::new()),
            tokens: TokenCache::default(),
            pod_locks: Mutex::new(HashMap::new()),
            events: RwLock::new(None),
        }
    }

    /// Installs the recorder for the `FailedMount` warnings upstream's volume manager emits
    /// (`MountVolume.SetUp failed for volume "v" : ...`); none by default.
    pub fn set_event_recorder(&self, recorder: EventRecorder) {
        *self.events.write() = Some(recorder);
    }

    fn failed_mount(&self, pod: &Pod, message: &str) {
        let Some(recorder) = self.events.read().clone() else {
            return;
        };
        recorder(RuntimeEvent {
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            pod_namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            field_path: String::new(),
            type_: "Warning",
            reason: "FailedMount",
            message: message.to_string(),
        });
    }

    /// `clusterDomain`, used for the FQDN line of the pods' `/etc/hosts`.
    pub fn set_cluster_domain(&self, domain: &str) {
        *self.cluster_domain.write() = domain.to_string();
    }

    /// The node's allocatable resources: downwardAPI `resourceFieldRef` files read unset
    /// limits from it (set it when the node status is known).
    pub fn set_node_allocatable(&self, allocatable: Allocatable) {
        *self.allocatable.write() = allocatable;
    }

    /// The allocatable resources last given to [`VolumeManager::set_node_allocatable`].
    pub fn node_allocatable(&self) -> Allocatable {
        self.allocatable.read().clone()
    }

    /// Where the manager reads ConfigMaps, Secrets and tokens.
    pub fn source(&self) -> &dyn ObjectSource {
        self.source.as_ref()
    }

    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    pub fn root_dir(&self) -> &Path {
        &self.root_dir
    }

    fn pod_lock(&self, uid: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.pod_locks
            .lock()
            .entry(uid.to_string())
            .or_default()
            .clone()
    }

    /// Sets up every volume of the pod (idempotent: call it on every sync). Object-backed
    /// volumes are rewritten when their objects changed. The error names each failing volume
    /// as upstream's events do: `MountVolume.SetUp failed for volume "v" : <why>`.
    pub async fn mount_pod_volumes(&self, pod: &Pod) -> anyhow::Result<()> {
        let uid = pod.metadata.uid.as_deref().context("pod has no uid")?;
        let lock = self.pod_lock(uid);
        let _guard = lock.lock().await;
        let mut errors = Vec::new();
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            if let Err(e) = self.set_up(pod, uid, volume).await {
                let message = format!(
                    "MountVolume.SetUp failed for volume {:?} : {e:#}",
                    volume.name
                );
                self.failed_mount(pod, &message);
                errors.push(message);
            }
        }
        if !errors.is_empty() {
            bail!("{}", errors.join("; "));
        }
        Ok(())
    }

    /// Rewrites the configMap, secret, projected and downwardAPI volumes whose sources
    /// changed (and renews due tokens). The core calls it from its periodic sync (upstream
    /// refreshes within syncFrequency plus the object cache's TTL).
    pub async fn resync(&self, pod: &Pod) -> anyhow::Result<()> {
        self.mount_pod_volumes(pod).await
    }

    async fn set_up(&self, pod: &Pod, uid: &str, volume: &Volume) -> anyhow::Result<()> {
        if let Some(kind) = unsupported_kind(volume) {
            bail!("{kind} volumes are not supported by this kubelet");
        }
        if let Some(hp) = &volume.host_path {
            return check_host_path(&hp.path, hp.type_.as_deref());
        }
        let dir =
            volume_host_dir(&self.root_dir, uid, volume).context("volume has no directory")?;
        let fresh = !dir.exists();
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        if fresh {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o777))?;
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let fs_group = pod
            .spec
            .as_ref()
            .and_then(|s| s.security_context.as_ref())
            .and_then(|c| c.fs_group)
            .and_then(|g| u32::try_from(g).ok());
        if let Some(ed) = &volume.empty_dir {
            if ed.medium.as_deref() == Some("Memory") {
                let size = match &ed.size_limit {
                    Some(q) => Some(
                        api_types::resource::Quantity::parse(&q.0)
                            .with_context(|| format!("invalid sizeLimit {:?}", q.0))?
                            .value()
                            .max(0) as u64,
                    ),
                    None => None,
                }
                .filter(|s| *s > 0);
                ensure_tmpfs(&dir, size)?;
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o777))?;
            }
            if fresh && let Some(group) = fs_group {
                set_volume_ownership(&dir, group, false)?;
            }
            return Ok(());
        }
        // Secrets and tokens stay off the disk, as upstream's memory-backed wrappers.
        let memory_backed =
            volume.secret.is_some() || volume.projected.is_some() || volume.downward_api.is_some();
        if memory_backed && let Err(e) = ensure_tmpfs(&dir, None) {
            tracing::warn!(volume = %volume.name, "no tmpfs for the volume, using disk: {e:#}");
        }
        let allocatable = self.allocatable.read().clone();
        let mut payload = if let Some(c) = &volume.config_map {
            let optional = c.optional == Some(true);
            let cm = self.source.config_map(&ns, &c.name).await?;
            if cm.is_none() && !optional {
                bail!("configmap {:?} not found", c.name);
            }
            keyed_payload(
                c.items.as_deref(),
                &config_map_data(cm.as_ref()),
                c.default_mode,
                optional,
                "configmap references non-existent config key",
            )?
        } else if let Some(s) = &volume.secret {
            let optional = s.optional == Some(true);
            let name = s.secret_name.clone().unwrap_or_default();
            let secret = self.source.secret(&ns, &name).await?;
            if secret.is_none() && !optional {
                bail!("secret {name:?} not found");
            }
            keyed_payload(
                s.items.as_deref(),
                &secret_data(secret.as_ref()),
                s.default_mode,
                optional,
                "references non-existent secret key",
            )?
        } else if let Some(d) = &volume.downward_api {
            downward_payload(
                d.items.as_deref().unwrap_or_default(),
                pod,
                d.default_mode,
                &allocatable,
            )?
        } else if let Some(p) = &volume.projected {
            // With an fsGroup the token is 0600 and the group read bit comes from ownership.
            let token_mode = fs_group.map(|_| 0o600);
            let source = self.source.as_ref();
            projected_payload(p, pod, source, &self.tokens, &allocatable, token_mode).await?
        } else {
            return Ok(());
        };
        if fs_group.is_some() {
            // The modes ownership gives, up front: the next comparison then sees no change.
            for file in payload.values_mut() {
                file.mode |= 0o440;
            }
        }
        if write_atomic(&dir, &payload)? {
            tracing::debug!(volume = %volume.name, pod = %uid, "volume contents updated");
            if let Some(group) = fs_group {
                set_volume_ownership(&dir, group, true)?;
            }
        }
        Ok(())
    }

    /// Tears the pod's volumes down: unmounts everything mounted under `<root>/pods/<uid>`
    /// (the Memory-backed volumes) and removes `<root>/pods/<uid>/volumes`. hostPath volumes
    /// are never touched; the rest of the pod directory (`etc-hosts`, termination logs) is
    /// left for the core's orphan cleanup, as upstream. Call it once the containers stopped.
    pub async fn unmount_pod_volumes(&self, uid: &str) -> anyhow::Result<()> {
        if uid.is_empty() || uid.contains('/') || uid.starts_with('.') {
            bail!("invalid pod uid {uid:?}");
        }
        let lock = self.pod_lock(uid);
        let guard = lock.lock().await;
        let dir = pod_dir(&self.root_dir, uid);
        unmount_all_under(&dir)?;
        let volumes = dir.join("volumes");
        match fs::remove_dir_all(&volumes) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", volumes.display())),
        }
        self.tokens.forget_pod(uid);
        drop(guard);
        self.pod_locks.lock().remove(uid);
        Ok(())
    }

    /// The uids of the pods with a `volumes` directory under `<root>/pods/<uid>` (set up and
    /// not torn down): the core compares them with the pods it knows to clean up orphans.
    pub fn pods_with_volumes(&self) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.root_dir.join("pods")) else {
            return Vec::new();
        };
        let mut out: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().join("volumes").is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    }
}
