//! apps/v1 defaults: Deployment, ReplicaSet, StatefulSet, DaemonSet.

use k8s_openapi::api::apps::v1::{
    DaemonSet, Deployment, ReplicaSet, RollingUpdateDaemonSet, RollingUpdateDeployment,
    RollingUpdateStatefulSetStrategy, StatefulSet,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::core::default_persistent_volume_claim;
use super::pod::default_pod_template_spec;
use super::util::default_str;

/// Revisions kept by default for rollbacks.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600.
pub fn default_deployment(d: &mut Deployment) {
    let Some(spec) = d.spec.as_mut() else { return };
    spec.replicas.get_or_insert(1);
    let strategy = spec.strategy.get_or_insert_with(Default::default);
    default_str(&mut strategy.type_, "RollingUpdate");
    if strategy.type_.as_deref() == Some("RollingUpdate") {
        let ru = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDeployment::default);
        ru.max_unavailable
            .get_or_insert_with(|| IntOrString::String("25%".into()));
        ru.max_surge
            .get_or_insert_with(|| IntOrString::String("25%".into()));
    }
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    spec.progress_deadline_seconds.get_or_insert(600);
    default_pod_template_spec(&mut spec.template);
}

/// Replicas 1 and the template's defaults.
pub fn default_replica_set(rs: &mut ReplicaSet) {
    let Some(spec) = rs.spec.as_mut() else { return };
    spec.replicas.get_or_insert(1);
    if let Some(t) = spec.template.as_mut() {
        default_pod_template_spec(t);
    }
}

/// OrderedReady, RollingUpdate with partition 0, Retain/Retain PVC policy, replicas 1,
/// revisionHistoryLimit 10; claim templates get PVC defaults.
pub fn default_stateful_set(s: &mut StatefulSet) {
    let Some(spec) = s.spec.as_mut() else { return };
    default_str(&mut spec.pod_management_policy, "OrderedReady");
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    if strategy.type_.as_deref().is_none_or(str::is_empty) {
        strategy.type_ = Some("RollingUpdate".into());
        strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateStatefulSetStrategy::default);
    }
    if strategy.type_.as_deref() == Some("RollingUpdate")
        && let Some(ru) = strategy.rolling_update.as_mut()
    {
        ru.partition.get_or_insert(0);
    }
    let policy = spec
        .persistent_volume_claim_retention_policy
        .get_or_insert_with(Default::default);
    default_str(&mut policy.when_deleted, "Retain");
    default_str(&mut policy.when_scaled, "Retain");
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    default_pod_template_spec(&mut spec.template);
    for pvc in spec.volume_claim_templates.iter_mut().flatten() {
        default_persistent_volume_claim(pvc);
    }
}

/// RollingUpdate with maxUnavailable 1 and maxSurge 0, revisionHistoryLimit 10.
pub fn default_daemon_set(ds: &mut DaemonSet) {
    let Some(spec) = ds.spec.as_mut() else { return };
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    default_str(&mut strategy.type_, "RollingUpdate");
    if strategy.type_.as_deref() == Some("RollingUpdate") {
        let ru = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDaemonSet::default);
        ru.max_unavailable.get_or_insert(IntOrString::Int(1));
        ru.max_surge.get_or_insert(IntOrString::Int(0));
    }
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    default_pod_template_spec(&mut spec.template);
}
