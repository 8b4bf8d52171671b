//! A container's mounts: its volumeMounts resolved to host paths (with subPath and
//! subPathExpr), plus the pod's managed `/etc/hosts`, as upstream's `makeMounts`.

use super::manager::{VolumeManager, pod_dir, unsupported_kind, volume_host_dir};
use crate::container::{Mount, MountPropagation};
use crate::envvars::expand;
use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::{Container, Pod, VolumeMount};
use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

const ETC_HOSTS: &str = "/etc/hosts";

/// Upstream's `ExpandContainerVolumeMounts`: `$(VAR)` from the container's env; a reference to
/// an unset or empty variable is an error.
pub fn expand_sub_path_expr(expr: &str, envs: &[(String, String)]) -> anyhow::Result<String> {
    let map: HashMap<&str, &str> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let missing = std::cell::RefCell::new(BTreeSet::new());
    let out = expand(expr, &|name: &str| match map.get(name) {
        Some(v) if !v.is_empty() => Some(v.to_string()),
        _ => {
            missing.borrow_mut().insert(name.to_string());
            Some(String::new())
        }
    });
    let missing = missing.into_inner();
    if !missing.is_empty() {
        bail!(
            "missing value for {}",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(out)
}

/// `volume/sub` for a validated sub path, created as a directory (with the volume's mode)
/// when missing; a path escaping the volume through symlinks is refused.
fn resolve_sub_path(volume_path: &Path, sub: &str) -> anyhow::Result<PathBuf> {
    if sub.starts_with('/') {
        bail!("error SubPath `{sub}` must not be an absolute path");
    }
    if sub.split('/').any(|p| p == "..") {
        bail!("unable to provision SubPath `{sub}`: must not contain '..'");
    }
    let joined = volume_path.join(sub);
    if fs::symlink_metadata(&joined).is_err() {
        let mode = fs::metadata(volume_path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o755);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(&joined)
            .with_context(|| format!("failed to create subPath directory {sub:?}"))?;
    }
    let base = fs::canonicalize(volume_path)
        .with_context(|| format!("resolving {}", volume_path.display()))?;
    let real = fs::canonicalize(&joined).with_context(|| format!("resolving subPath {sub:?}"))?;
    if !real.starts_with(&base) {
        bail!(
            "subpath {sub:?} not within volume path {}",
            volume_path.display()
        );
    }
    Ok(real)
}

fn propagation(m: &VolumeMount, privileged: bool) -> anyhow::Result<MountPropagation> {
    match m.mount_propagation.as_deref() {
        None | Some("") | Some("None") => Ok(MountPropagation::Private),
        Some("HostToContainer") => Ok(MountPropagation::HostToContainer),
        Some("Bidirectional") if privileged => Ok(MountPropagation::Bidirectional),
        Some("Bidirectional") => {
            bail!("Bidirectional mount propagation is available only to privileged containers")
        }
        Some(other) => bail!("invalid MountPropagation mode: {other:?}"),
    }
}

impl VolumeManager {
    /// The container's mounts, in volumeMounts order, then `/etc/hosts` (written under the
    /// pod dir; only when the pod has IPs and the container does not mount `/etc/hosts`
    /// itself). `envs` is the container's resolved env (for subPathExpr); `pod_ips` the pod's
    /// IPs (the host's for hostNetwork pods). configMap, secret, downwardAPI and projected
    /// mounts are always read-only, as upstream. The termination-message mount is not here.
    pub fn container_mounts(
        &self,
        pod: &Pod,
        container: &Container,
        pod_ips: &[String],
        envs: &[(String, String)],
    ) -> anyhow::Result<Vec<Mount>> {
        let uid = pod.metadata.uid.as_deref().context("pod has no uid")?;
        let volumes = pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or_default();
        let privileged = container
            .security_context
            .as_ref()
            .and_then(|s| s.privileged)
            .unwrap_or(false);
        let mut mounts = Vec::new();
        let mut mounts_etc_hosts = false;
        for vm in container.volume_mounts.iter().flatten() {
            let volume = volumes
                .iter()
                .find(|v| v.name == vm.name)
                .with_context(|| {
                    format!(
                        "cannot find volume {:?} to mount into container {:?}",
                        vm.name, container.name
                    )
                })?;
            if let Some(kind) = unsupported_kind(volume) {
                bail!(
                    "volume {:?}: {kind} volumes are not supported by this kubelet",
                    vm.name
                );
            }
            let (mut host_path, forced_read_only) = match &volume.host_path {
                Some(hp) => (PathBuf::from(&hp.path), false),
                None => {
                    let dir = volume_host_dir(&self.root_dir, uid, volume)
                        .context("volume has no directory")?;
                    (dir, volume.empty_dir.is_none())
                }
            };
            let sub_path = match vm.sub_path_expr.as_deref().filter(|s| !s.is_empty()) {
                Some(expr) => expand_sub_path_expr(expr, envs)?,
                None => vm.sub_path.clone().unwrap_or_default(),
            };
            if !sub_path.is_empty() {
                host_path = resolve_sub_path(&host_path, &sub_path)?;
            }
            if vm.mount_path == ETC_HOSTS {
                mounts_etc_hosts = true;
            }
            mounts.push(Mount {
                container_path: vm.mount_path.clone(),
                host_path: host_path.to_string_lossy().into_owned(),
                read_only: vm.read_only.unwrap_or(false) || forced_read_only,
                propagation: propagation(vm, privileged)?,
            });
        }
        if !mounts_etc_hosts {
            let domain = self.cluster_domain.read().clone();
            let dir = pod_dir(&self.root_dir, uid);
            if let Some(m) = crate::dns::ensure_hosts_file(&dir, pod, pod_ips, &domain)? {
                mounts.push(m);
            }
        }
        Ok(mounts)
    }
}
