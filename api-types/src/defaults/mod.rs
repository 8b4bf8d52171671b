//! Defaulting of built-in kinds, as upstream's `SetDefaults_*` functions, on k8s-openapi
//! structs. Every function is idempotent: defaulting twice gives the same object as once.
//!
//! [`default_object`] is the entry point for JSON: it decodes a known kind, defaults it and
//! encodes it back; unknown kinds are left untouched.

mod apps;
mod batch;
mod core;
mod pod;
mod scheduling;
mod util;

pub use apps::{
    DEFAULT_REVISION_HISTORY_LIMIT, default_daemon_set, default_deployment, default_replica_set,
    default_stateful_set,
};
pub use batch::{default_cron_job, default_job};
pub use core::{
    DEFAULT_CLIENT_IP_AFFINITY_SECONDS, default_endpoints, default_namespace, default_node,
    default_persistent_volume, default_persistent_volume_claim, default_replication_controller,
    default_secret, default_service,
};
pub use pod::{
    DEFAULT_SCHEDULER_NAME, DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    DEFAULT_TERMINATION_MESSAGE_PATH, DEFAULT_VOLUME_MODE, default_container,
    default_ephemeral_container, default_pod, default_pod_spec, default_pod_template,
    default_pod_template_spec, default_probe, default_volume, image_pull_policy_for,
};
pub use scheduling::{DEFAULT_PREEMPTION_POLICY, default_priority_class};

use k8s_openapi::api::{apps::v1 as apps_v1, batch::v1 as batch_v1, core::v1 as core_v1};

/// Why an object could not be defaulted.
#[derive(Debug, thiserror::Error)]
pub enum DefaultError {
    /// The JSON does not decode as the kind it claims to be.
    #[error("decoding {kind}: {source}")]
    Decode {
        /// The kind being decoded.
        kind: String,
        /// The decoder's error.
        source: serde_json::Error,
    },
    /// The defaulted object could not be encoded again.
    #[error("encoding {kind}: {source}")]
    Encode {
        /// The kind being encoded.
        kind: String,
        /// The encoder's error.
        source: serde_json::Error,
    },
}

fn apply<T>(kind: &str, obj: &mut serde_json::Value, f: fn(&mut T)) -> Result<(), DefaultError>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut typed: T =
        serde_json::from_value(obj.clone()).map_err(|source| DefaultError::Decode {
            kind: kind.to_string(),
            source,
        })?;
    f(&mut typed);
    *obj = serde_json::to_value(&typed).map_err(|source| DefaultError::Encode {
        kind: kind.to_string(),
        source,
    })?;
    Ok(())
}

/// Defaults a built-in object given as JSON. Returns `Ok(true)` when the kind is known and
/// was defaulted, `Ok(false)` (object untouched) for any other kind.
///
/// Decoding goes through the typed struct, so fields unknown to the type are dropped, as
/// upstream's decoder does.
pub fn default_object(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut serde_json::Value,
) -> Result<bool, DefaultError> {
    match (group, version, kind) {
        ("", "v1", "Pod") => apply::<core_v1::Pod>(kind, obj, default_pod)?,
        ("", "v1", "PodTemplate") => {
            apply::<core_v1::PodTemplate>(kind, obj, default_pod_template)?
        }
        ("", "v1", "Service") => apply::<core_v1::Service>(kind, obj, default_service)?,
        ("", "v1", "Namespace") => apply::<core_v1::Namespace>(kind, obj, default_namespace)?,
        ("", "v1", "Secret") => apply::<core_v1::Secret>(kind, obj, default_secret)?,
        ("", "v1", "PersistentVolumeClaim") => {
            apply::<core_v1::PersistentVolumeClaim>(kind, obj, default_persistent_volume_claim)?
        }
        ("", "v1", "PersistentVolume") => {
            apply::<core_v1::PersistentVolume>(kind, obj, default_persistent_volume)?
        }
        ("", "v1", "Node") => apply::<core_v1::Node>(kind, obj, default_node)?,
        ("", "v1", "ReplicationController") => {
            apply::<core_v1::ReplicationController>(kind, obj, default_replication_controller)?
        }
        ("", "v1", "Endpoints") => apply::<core_v1::Endpoints>(kind, obj, default_endpoints)?,
        ("apps", "v1", "Deployment") => {
            apply::<apps_v1::Deployment>(kind, obj, default_deployment)?
        }
        ("apps", "v1", "ReplicaSet") => {
            apply::<apps_v1::ReplicaSet>(kind, obj, default_replica_set)?
        }
        ("apps", "v1", "StatefulSet") => {
            apply::<apps_v1::StatefulSet>(kind, obj, default_stateful_set)?
        }
        ("apps", "v1", "DaemonSet") => apply::<apps_v1::DaemonSet>(kind, obj, default_daemon_set)?,
        ("batch", "v1", "Job") => apply::<batch_v1::Job>(kind, obj, default_job)?,
        ("batch", "v1", "CronJob") => apply::<batch_v1::CronJob>(kind, obj, default_cron_job)?,
        ("scheduling.k8s.io", "v1", "PriorityClass") => apply::<
            k8s_openapi::api::scheduling::v1::PriorityClass,
        >(
            kind, obj, default_priority_class
        )?,
        _ => return Ok(false),
    }
    Ok(true)
}
