//! Workload validation: Deployment, ReplicaSet, StatefulSet, DaemonSet.

use k8s_openapi::api::apps::v1::{
    DaemonSet, Deployment, ReplicaSet, RollingUpdateDeployment, StatefulSet,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::meta::{
    name_is_dns_subdomain, validate_immutable, validate_nonnegative, validate_object_meta,
    validate_object_meta_update,
};
use super::pod::validate_pod_template_spec;
use super::{BadValue, ErrorList, FieldError, FieldPath};
use crate::labels::Selector;

/// Selector must be non-empty and valid, and the template's labels must match it; workload
/// pods must restart Always and may not set activeDeadlineSeconds.
fn validate_selector_and_template(
    selector: &LabelSelector,
    template: Option<&PodTemplateSpec>,
    kind_word: &str,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    let sel_path = path.child("selector");
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|m| m.is_empty());
    if empty {
        errs.push(FieldError::invalid(
            &sel_path,
            BadValue::json(selector),
            format!("empty selector is invalid for {kind_word}"),
        ));
    }
    let parsed = match Selector::from_label_selector(Some(selector)) {
        Ok(s) => Some(s),
        Err(_) => {
            errs.push(FieldError::invalid(
                &sel_path,
                BadValue::json(selector),
                "invalid label selector",
            ));
            None
        }
    };
    let tpl_path = path.child("template");
    let Some(template) = template else {
        errs.push(FieldError::required(&tpl_path, ""));
        return;
    };
    let labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    if let Some(sel) = parsed.filter(|s| !s.is_empty())
        && !sel.matches(&labels)
    {
        errs.push(FieldError::invalid(
            &tpl_path.child("metadata").child("labels"),
            BadValue::json(&labels),
            "`selector` does not match template `labels`",
        ));
    }
    errs.append(validate_pod_template_spec(template, &tpl_path));
    if let Some(spec) = &template.spec {
        let rp = spec.restart_policy.as_deref().unwrap_or("");
        if rp != "Always" {
            errs.push(FieldError::not_supported(
                &tpl_path.child("spec").child("restartPolicy"),
                rp,
                &["Always"],
            ));
        }
        if spec.active_deadline_seconds.is_some() {
            errs.push(FieldError::forbidden(
                &tpl_path.child("spec").child("activeDeadlineSeconds"),
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            ));
        }
    }
}

fn meta_path() -> FieldPath {
    FieldPath::new("metadata")
}

fn spec_required(errs: &mut ErrorList) {
    errs.push(FieldError::required(
        &FieldPath::new("spec").child("selector"),
        "",
    ));
}

/// Validates a Deployment on create.
pub fn validate_deployment(d: &Deployment) -> ErrorList {
    let mut errs = validate_object_meta(&d.metadata, true, name_is_dns_subdomain, &meta_path());
    let path = FieldPath::new("spec");
    let Some(spec) = &d.spec else {
        spec_required(&mut errs);
        return errs;
    };
    validate_nonnegative(
        spec.replicas.unwrap_or(0).into(),
        &path.child("replicas"),
        &mut errs,
    );
    validate_selector_and_template(
        &spec.selector,
        Some(&spec.template),
        "deployment",
        &path,
        &mut errs,
    );
    if let Some(s) = &spec.strategy {
        match s.type_.as_deref() {
            None | Some("") => {}
            Some("Recreate") if s.rolling_update.is_some() => errs.push(FieldError::forbidden(
                &path.child("strategy").child("rollingUpdate"),
                "may not be specified when strategy `type` is 'Recreate'",
            )),
            Some("RollingUpdate") => {
                if let Some(ru) = &s.rolling_update {
                    let ru_path = path.child("strategy").child("rollingUpdate");
                    validate_rolling_update_deployment(ru, &ru_path, &mut errs);
                }
            }
            Some("Recreate") => {}
            Some(other) => errs.push(FieldError::not_supported(
                &path.child("strategy").child("type"),
                other,
                &["Recreate", "RollingUpdate"],
            )),
        }
    }
    if let Some(r) = spec.revision_history_limit {
        validate_nonnegative(r.into(), &path.child("revisionHistoryLimit"), &mut errs);
    }
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    validate_nonnegative(min_ready.into(), &path.child("minReadySeconds"), &mut errs);
    if let Some(p) = spec.progress_deadline_seconds {
        validate_nonnegative(p.into(), &path.child("progressDeadlineSeconds"), &mut errs);
        if p <= min_ready {
            errs.push(FieldError::invalid(
                &path.child("progressDeadlineSeconds"),
                p,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// Upstream's `ValidateRollingUpdateDeployment`: each fencepost a non-negative integer or a
/// percentage, maxUnavailable at most 100%, and not both 0 (the rollout could never move).
fn validate_rolling_update_deployment(
    ru: &RollingUpdateDeployment,
    path: &FieldPath,
    errs: &mut ErrorList,
) {
    fn checked(v: Option<&IntOrString>, path: &FieldPath, errs: &mut ErrorList) -> (i64, bool) {
        match v {
            None => (0, false),
            Some(IntOrString::Int(n)) => {
                validate_nonnegative((*n).into(), path, errs);
                (i64::from(*n), false)
            }
            Some(IntOrString::String(s)) => {
                let pct = s
                    .strip_suffix('%')
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
                match pct.and_then(|d| d.parse::<i64>().ok()) {
                    Some(n) => (n, true),
                    None => {
                        errs.push(FieldError::invalid(
                            path,
                            s.as_str(),
                            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                        ));
                        (0, false)
                    }
                }
            }
        }
    }
    fn bad(v: Option<&IntOrString>) -> BadValue {
        match v {
            Some(IntOrString::Int(n)) => (*n).into(),
            Some(IntOrString::String(s)) => s.as_str().into(),
            None => 0.into(),
        }
    }
    let unavailable_path = path.child("maxUnavailable");
    let (unavailable, unavailable_pct) =
        checked(ru.max_unavailable.as_ref(), &unavailable_path, errs);
    let (surge, _) = checked(ru.max_surge.as_ref(), &path.child("maxSurge"), errs);
    if unavailable == 0 && surge == 0 {
        errs.push(FieldError::invalid(
            &unavailable_path,
            bad(ru.max_unavailable.as_ref()),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    if unavailable_pct && unavailable > 100 {
        errs.push(FieldError::invalid(
            &unavailable_path,
            bad(ru.max_unavailable.as_ref()),
            "must not be greater than 100%",
        ));
    }
}

/// Validates a Deployment update: metadata rules, the new object, immutable selector.
pub fn validate_deployment_update(new: &Deployment, old: &Deployment) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &meta_path());
    errs.append(validate_deployment(new).without_meta_create_only());
    let sel = |d: &Deployment| d.spec.as_ref().map(|s| s.selector.clone());
    validate_immutable(
        &sel(new),
        &sel(old),
        &FieldPath::new("spec").child("selector"),
        &mut errs,
    );
    errs
}

/// Validates a ReplicaSet on create.
pub fn validate_replica_set(rs: &ReplicaSet) -> ErrorList {
    let mut errs = validate_object_meta(&rs.metadata, true, name_is_dns_subdomain, &meta_path());
    let path = FieldPath::new("spec");
    let Some(spec) = &rs.spec else {
        spec_required(&mut errs);
        return errs;
    };
    validate_nonnegative(
        spec.replicas.unwrap_or(0).into(),
        &path.child("replicas"),
        &mut errs,
    );
    validate_nonnegative(
        spec.min_ready_seconds.unwrap_or(0).into(),
        &path.child("minReadySeconds"),
        &mut errs,
    );
    validate_selector_and_template(
        &spec.selector,
        spec.template.as_ref(),
        "deployment",
        &path,
        &mut errs,
    );
    errs
}

/// Validates a ReplicaSet update (selector immutable in apps/v1).
pub fn validate_replica_set_update(new: &ReplicaSet, old: &ReplicaSet) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &meta_path());
    errs.append(validate_replica_set(new).without_meta_create_only());
    let sel = |d: &ReplicaSet| d.spec.as_ref().map(|s| s.selector.clone());
    validate_immutable(
        &sel(new),
        &sel(old),
        &FieldPath::new("spec").child("selector"),
        &mut errs,
    );
    errs
}

/// Validates a StatefulSet on create.
pub fn validate_stateful_set(s: &StatefulSet) -> ErrorList {
    let mut errs = validate_object_meta(&s.metadata, true, name_is_dns_subdomain, &meta_path());
    let path = FieldPath::new("spec");
    let Some(spec) = &s.spec else {
        spec_required(&mut errs);
        return errs;
    };
    if let Some(p) = spec
        .pod_management_policy
        .as_deref()
        .filter(|p| !p.is_empty())
        && p != "OrderedReady"
        && p != "Parallel"
    {
        errs.push(FieldError::invalid(
            &path.child("podManagementPolicy"),
            p,
            "must be 'OrderedReady' or 'Parallel'",
        ));
    }
    if let Some(t) = spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.type_.as_deref())
        .filter(|t| !t.is_empty())
        && t != "RollingUpdate"
        && t != "OnDelete"
    {
        errs.push(FieldError::invalid(
            &path.child("updateStrategy"),
            t,
            "must be 'RollingUpdate' or 'OnDelete'",
        ));
    }
    validate_nonnegative(
        spec.replicas.unwrap_or(0).into(),
        &path.child("replicas"),
        &mut errs,
    );
    validate_selector_and_template(
        &spec.selector,
        Some(&spec.template),
        "statefulset",
        &path,
        &mut errs,
    );
    errs
}

/// Validates a StatefulSet update: only replicas, ordinals, template, updateStrategy,
/// revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
pub fn validate_stateful_set_update(new: &StatefulSet, old: &StatefulSet) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &meta_path());
    errs.append(validate_stateful_set(new).without_meta_create_only());
    if let (Some(n), Some(o)) = (&new.spec, &old.spec) {
        let mut munged = n.clone();
        munged.replicas = o.replicas;
        munged.ordinals.clone_from(&o.ordinals);
        munged.template.clone_from(&o.template);
        munged.update_strategy.clone_from(&o.update_strategy);
        munged.revision_history_limit = o.revision_history_limit;
        munged
            .persistent_volume_claim_retention_policy
            .clone_from(&o.persistent_volume_claim_retention_policy);
        munged.min_ready_seconds = o.min_ready_seconds;
        if &munged != o {
            errs.push(FieldError::forbidden(
                &FieldPath::new("spec"),
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
    errs
}

/// Validates a DaemonSet on create.
pub fn validate_daemon_set(ds: &DaemonSet) -> ErrorList {
    let mut errs = validate_object_meta(&ds.metadata, true, name_is_dns_subdomain, &meta_path());
    let path = FieldPath::new("spec");
    let Some(spec) = &ds.spec else {
        spec_required(&mut errs);
        return errs;
    };
    validate_selector_and_template(
        &spec.selector,
        Some(&spec.template),
        "daemonset",
        &path,
        &mut errs,
    );
    if let Some(t) = spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.type_.as_deref())
        .filter(|t| !t.is_empty())
        && t != "RollingUpdate"
        && t != "OnDelete"
    {
        errs.push(FieldError::not_supported(
            &path.child("updateStrategy").child("type"),
            t,
            &["OnDelete", "RollingUpdate"],
        ));
    }
    if let Some(r) = spec.revision_history_limit {
        validate_nonnegative(r.into(), &path.child("revisionHistoryLimit"), &mut errs);
    }
    errs
}

/// Validates a DaemonSet update (selector immutable).
pub fn validate_daemon_set_update(new: &DaemonSet, old: &DaemonSet) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &meta_path());
    errs.append(validate_daemon_set(new).without_meta_create_only());
    let sel = |d: &DaemonSet| d.spec.as_ref().map(|s| s.selector.clone());
    validate_immutable(
        &sel(new),
        &sel(old),
        &FieldPath::new("spec").child("selector"),
        &mut errs,
    );
    errs
}
