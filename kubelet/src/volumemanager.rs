//! Pod volumes on the host: emptyDir (disk and Memory), hostPath, configMap, secret, projected
//! (service account token, configMap, secret, downwardAPI) and downwardAPI, written atomically
//! and refreshed when their sources change. Owner: the volumes engineer.
//!
//! Entry points for the core: [`VolumeManager::new`], [`VolumeManager::mount_pod_volumes`]
//! (before starting containers, every sync), [`VolumeManager::resync`] (periodic refresh),
//! [`VolumeManager::container_mounts`] (for `RunContainerOptions::mounts`),
//! [`VolumeManager::unmount_pod_volumes`] and [`VolumeManager::pods_with_volumes`] (orphan
//! cleanup). Layout as upstream: `<root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>`.
//! PVC, ephemeral, CSI and the other network volumes fail with a clear "not supported" error;
//! clusterTrustBundle projections are skipped.

mod atomic_writer;
mod container_mounts;
mod hostpath;
mod manager;
mod mounts;
mod ownership;
mod payload;
mod token;

pub use crate::envvars::{ClientSource, ObjectSource};
pub use atomic_writer::{FileProjection, Payload, validate_path, write_atomic};
pub use container_mounts::expand_sub_path_expr;
pub use hostpath::check_host_path;
pub use manager::{
    CONFIG_MAP, DOWNWARD_API, EMPTY_DIR, PROJECTED, SECRET, VolumeManager, pod_dir, volume_host_dir,
};
pub use mounts::{is_mount_point, mount_points};
pub use ownership::set_volume_ownership;
pub use token::{TokenCache, requires_refresh};

#[cfg(test)]
mod tests;
