//! Which function starts each controller, by upstream name. Controllers that have no entry
//! here are not implemented: the controller manager logs that it skips them.

use super::{ControllerContext, InitResult};
use futures::future::BoxFuture;

pub type InitFunc = fn(ControllerContext) -> BoxFuture<'static, InitResult>;

/// The initializer of `name`, if this controller manager implements it.
pub fn initializer(name: &str) -> Option<InitFunc> {
    use super::*;
    let init: InitFunc = match name {
        "bootstrap-signer-controller" => bootstrap::init_signer,
        "token-cleaner-controller" => bootstrap::init_token_cleaner,
        "certificatesigningrequest-approving-controller" => certificates::init_approving,
        "certificatesigningrequest-cleaner-controller" => certificates::init_cleaner,
        "certificatesigningrequest-signing-controller" => certificates::init_signing,
        "clusterrole-aggregation-controller" => clusterroleaggregation::init,
        "cronjob-controller" => cronjob::init,
        "daemonset-controller" => daemonset::init,
        "deployment-controller" => deployment::init,
        "disruption-controller" => disruption::init,
        "endpoints-controller" => endpoint::init,
        "endpointslice-controller" => endpointslice::init,
        "endpointslice-mirroring-controller" => endpointslicemirroring::init,
        "ephemeral-volume-controller" => volume::init_ephemeral,
        "garbage-collector-controller" => garbagecollector::init,
        "horizontal-pod-autoscaler-controller" => podautoscaler::init,
        "job-controller" => job::init,
        "namespace-controller" => namespace::init,
        "node-ipam-controller" => nodeipam::init,
        "node-lifecycle-controller" => nodelifecycle::init,
        "taint-eviction-controller" => nodelifecycle::init_taint_eviction,
        "persistentvolume-binder-controller" => volume::init_binder,
        "persistentvolume-protection-controller" => volume::init_pv_protection,
        "persistentvolumeclaim-protection-controller" => volume::init_pvc_protection,
        "pod-garbage-collector-controller" => podgc::init,
        "replicaset-controller" => replicaset::init,
        "replicationcontroller-controller" => replicaset::init_replication_controller,
        "resourcequota-controller" => resourcequota::init,
        "root-ca-certificate-publisher-controller" => rootcacertpublisher::init,
        "serviceaccount-controller" => serviceaccount::init,
        "serviceaccount-token-controller" => serviceaccount::init_tokens,
        "statefulset-controller" => statefulset::init,
        "ttl-after-finished-controller" => ttlafterfinished::init,
        "ttl-controller" => ttl::init,
        _ => return None,
    };
    Some(init)
}
