//! Pod and pod spec validation, and what a pod update may change.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Pod, PodSpec, PodTemplateSpec, ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::meta::{
    name_is_dns_subdomain, validate_annotations, validate_labels, validate_nonnegative,
    validate_object_meta, validate_object_meta_update,
};
use super::names::{is_dns1123_label, is_valid_port_name, is_valid_port_num};
use super::quantity::{QUANTITY_FORMAT_ERROR, parse_quantity};
use super::{BadValue, ErrorList, FieldError, FieldPath};

const RESTART_POLICIES: [&str; 3] = ["Always", "OnFailure", "Never"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const TERMINATION_MESSAGE_POLICIES: [&str; 2] = ["FallbackToLogsOnError", "File"];

/// The message upstream gives when a pod update changes more than it may.
pub const POD_UPDATE_FORBIDDEN_MSG: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Validates a Pod on create.
pub fn validate_pod(pod: &Pod) -> ErrorList {
    let mut errs = validate_object_meta(
        &pod.metadata,
        true,
        name_is_dns_subdomain,
        &FieldPath::new("metadata"),
    );
    match &pod.spec {
        Some(spec) => errs.append(validate_pod_spec(spec, &FieldPath::new("spec"))),
        None => errs.push(FieldError::required(
            &FieldPath::new("spec").child("containers"),
            "",
        )),
    }
    errs
}

/// Validates a pod template (labels, annotations and spec).
pub fn validate_pod_template_spec(t: &PodTemplateSpec, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(meta) = &t.metadata {
        if let Some(l) = &meta.labels {
            errs.append(validate_labels(l, &path.child("metadata").child("labels")));
        }
        if let Some(a) = &meta.annotations {
            errs.append(validate_annotations(
                a,
                &path.child("metadata").child("annotations"),
            ));
        }
    }
    match &t.spec {
        Some(spec) => errs.append(validate_pod_spec(spec, &path.child("spec"))),
        None => errs.push(FieldError::required(
            &path.child("spec").child("containers"),
            "",
        )),
    }
    errs
}

fn supported(
    value: Option<&str>,
    allowed: &[&str],
    path: &FieldPath,
    required: bool,
    errs: &mut ErrorList,
) {
    match value {
        None | Some("") if required => errs.push(FieldError::required(path, "")),
        None | Some("") => {}
        Some(v) if allowed.contains(&v) => {}
        Some(v) => errs.push(FieldError::not_supported(path, v, allowed)),
    }
}

/// Validates a pod spec: containers, volumes, policies.
pub fn validate_pod_spec(spec: &PodSpec, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let volumes = validate_volumes(
        spec.volumes.as_deref().unwrap_or_default(),
        &path.child("volumes"),
        &mut errs,
    );
    let mut names = BTreeSet::new();
    if spec.containers.is_empty() {
        errs.push(FieldError::required(&path.child("containers"), ""));
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        validate_container(
            c,
            &path.child("initContainers").index(i),
            &volumes,
            &mut names,
            &mut errs,
        );
    }
    for (i, c) in spec.containers.iter().enumerate() {
        validate_container(
            c,
            &path.child("containers").index(i),
            &volumes,
            &mut names,
            &mut errs,
        );
    }
    supported(
        spec.restart_policy.as_deref(),
        &RESTART_POLICIES,
        &path.child("restartPolicy"),
        false,
        &mut errs,
    );
    supported(
        spec.dns_policy.as_deref(),
        &DNS_POLICIES,
        &path.child("dnsPolicy"),
        false,
        &mut errs,
    );
    if let Some(ads) = spec.active_deadline_seconds
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(FieldError::invalid(
            &path.child("activeDeadlineSeconds"),
            ads,
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    if let Some(t) = spec.termination_grace_period_seconds {
        validate_nonnegative(t, &path.child("terminationGracePeriodSeconds"), &mut errs);
    }
    if let Some(sel) = &spec.node_selector {
        errs.append(validate_labels(sel, &path.child("nodeSelector")));
    }
    if let Some(sa) = spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        for msg in name_is_dns_subdomain(sa, false) {
            errs.push(FieldError::invalid(
                &path.child("serviceAccountName"),
                sa,
                msg,
            ));
        }
    }
    if let Some(node) = spec.node_name.as_deref().filter(|s| !s.is_empty()) {
        for msg in name_is_dns_subdomain(node, false) {
            errs.push(FieldError::invalid(&path.child("nodeName"), node, msg));
        }
    }
    errs
}

/// Checks volume names and sources; returns the volume names for mount checks.
fn validate_volumes(
    volumes: &[Volume],
    path: &FieldPath,
    errs: &mut ErrorList,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let p = path.index(i);
        if v.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            for msg in is_dns1123_label(&v.name) {
                errs.push(FieldError::invalid(&p.child("name"), &v.name, msg));
            }
            if !names.insert(v.name.clone()) {
                errs.push(FieldError::duplicate(&p.child("name"), &v.name));
            }
        }
        let sources = match serde_json::to_value(v) {
            Ok(serde_json::Value::Object(m)) => m.keys().filter(|k| *k != "name").count(),
            _ => 1,
        };
        if sources == 0 {
            errs.push(FieldError::required(&p, "must specify a volume type"));
        } else if sources > 1 {
            errs.push(FieldError::forbidden(
                &p,
                "may not specify more than 1 volume type",
            ));
        }
    }
    names
}

fn validate_container(
    c: &Container,
    path: &FieldPath,
    volumes: &BTreeSet<String>,
    names: &mut BTreeSet<String>,
    errs: &mut ErrorList,
) {
    let name_path = path.child("name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        for msg in is_dns1123_label(&c.name) {
            errs.push(FieldError::invalid(&name_path, &c.name, msg));
        }
        if !names.insert(c.name.clone()) {
            errs.push(FieldError::duplicate(&name_path, &c.name));
        }
    }
    let image = c.image.as_deref().unwrap_or("");
    if image.is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    } else if image.trim() != image {
        errs.push(FieldError::invalid(
            &path.child("image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
    supported(
        c.image_pull_policy.as_deref(),
        &PULL_POLICIES,
        &path.child("imagePullPolicy"),
        false,
        errs,
    );
    supported(
        c.termination_message_policy.as_deref(),
        &TERMINATION_MESSAGE_POLICIES,
        &path.child("terminationMessagePolicy"),
        false,
        errs,
    );
    validate_ports(
        c.ports.as_deref().unwrap_or_default(),
        &path.child("ports"),
        errs,
    );
    if let Some(r) = &c.resources {
        validate_resources(r, &path.child("resources"), errs);
    }
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let p = path.child("volumeMounts").index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else if !volumes.contains(&m.name) {
            errs.push(FieldError::not_found(&p.child("name"), &m.name));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
    }
    for (i, e) in c.env.iter().flatten().enumerate() {
        if e.name.is_empty() {
            errs.push(FieldError::required(
                &path.child("env").index(i).child("name"),
                "",
            ));
        }
    }
}

fn validate_ports(ports: &[ContainerPort], path: &FieldPath, errs: &mut ErrorList) {
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = path.index(i);
        if let Some(name) = p.name.as_deref().filter(|n| !n.is_empty()) {
            for msg in is_valid_port_name(name) {
                errs.push(FieldError::invalid(&pp.child("name"), name, msg));
            }
            if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(&pp.child("name"), name));
            }
        }
        for msg in is_valid_port_num(p.container_port) {
            errs.push(FieldError::invalid(
                &pp.child("containerPort"),
                p.container_port,
                msg,
            ));
        }
        if let Some(hp) = p.host_port.filter(|h| *h != 0) {
            for msg in is_valid_port_num(hp) {
                errs.push(FieldError::invalid(&pp.child("hostPort"), hp, msg));
            }
        }
        supported(
            p.protocol.as_deref(),
            &PROTOCOLS,
            &pp.child("protocol"),
            false,
            errs,
        );
    }
}

/// Quantities must parse and be non-negative; a request may not exceed its limit.
fn validate_resources(r: &ResourceRequirements, path: &FieldPath, errs: &mut ErrorList) {
    let mut parsed =
        |list: &Option<BTreeMap<String, Quantity>>, p: FieldPath| -> BTreeMap<String, f64> {
            let mut out = BTreeMap::new();
            for (name, q) in list.iter().flatten() {
                match parse_quantity(&q.0) {
                    None => errs.push(FieldError::invalid(
                        &p.key(name),
                        &q.0,
                        QUANTITY_FORMAT_ERROR,
                    )),
                    Some(v) if v < 0.0 => errs.push(FieldError::invalid(
                        &p.key(name),
                        &q.0,
                        "must be greater than or equal to 0",
                    )),
                    Some(v) => {
                        out.insert(name.clone(), v);
                    }
                }
            }
            out
        };
    let limits = parsed(&r.limits, path.child("limits"));
    let requests = parsed(&r.requests, path.child("requests"));
    for (name, req) in &requests {
        if let Some(limit) = limits.get(name)
            && req > limit
        {
            let req_text = r
                .requests
                .as_ref()
                .and_then(|m| m.get(name))
                .map(|q| q.0.clone())
                .unwrap_or_default();
            let limit_text = r
                .limits
                .as_ref()
                .and_then(|m| m.get(name))
                .map(|q| q.0.clone())
                .unwrap_or_default();
            errs.push(FieldError::invalid(
                &path.child("requests").key(name),
                req_text,
                format!("must be less than or equal to {name} limit of {limit_text}"),
            ));
        }
    }
}

/// Validates a pod update: metadata rules, the new spec, and that only images,
/// activeDeadlineSeconds (set or lowered), added tolerations, removed scheduling gates and a
/// negative grace period raised to 1 changed.
pub fn validate_pod_update(new: &Pod, old: &Pod) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &FieldPath::new("metadata"));
    let spec_path = FieldPath::new("spec");
    let (Some(new_spec), Some(old_spec)) = (&new.spec, &old.spec) else {
        if new.spec != old.spec {
            errs.push(FieldError::forbidden(&spec_path, POD_UPDATE_FORBIDDEN_MSG));
        }
        return errs;
    };
    for (i, c) in new_spec.containers.iter().enumerate() {
        if c.image.as_deref().unwrap_or("").is_empty() {
            errs.push(FieldError::required(
                &spec_path.child("containers").index(i).child("image"),
                "",
            ));
        }
    }
    match (
        new_spec.active_deadline_seconds,
        old_spec.active_deadline_seconds,
    ) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            errs.push(FieldError::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                n,
                "must be between 0 and 2147483647, inclusive",
            ));
            return errs;
        }
        (Some(n), Some(o)) if o < n => {
            errs.push(FieldError::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                n,
                "must be less than or equal to previous value",
            ));
            return errs;
        }
        (None, Some(_)) => {
            errs.push(FieldError::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                BadValue::Null,
                "must not update from a positive integer to nil value",
            ));
        }
        _ => {}
    }
    let old_tolerations = old_spec.tolerations.clone().unwrap_or_default();
    let new_tolerations = new_spec.tolerations.clone().unwrap_or_default();
    for (i, t) in old_tolerations.iter().enumerate() {
        // Only additions are allowed; tolerationSeconds of an existing one may change.
        let kept = new_tolerations.iter().any(|n| {
            n.key == t.key && n.operator == t.operator && n.value == t.value && n.effect == t.effect
        });
        if !kept {
            errs.push(FieldError::forbidden(
                &spec_path.child("tolerations").index(i),
                "existing toleration can not be modified except its tolerationSeconds",
            ));
        }
    }

    // Scheduling gates may only be removed (what releases a gated pod to the scheduler).
    let old_gates = old_spec.scheduling_gates.as_deref().unwrap_or_default();
    for g in new_spec.scheduling_gates.iter().flatten() {
        if !old_gates.iter().any(|o| o.name == g.name) {
            errs.push(FieldError::forbidden(
                &spec_path.child("schedulingGates"),
                format!(
                    "only deletion is allowed, but found new scheduling gate '{}'",
                    g.name
                ),
            ));
        }
    }

    // Copy the changes that are allowed onto the new spec's old counterpart, then any other
    // difference is forbidden.
    let mut munged = new_spec.clone();
    if munged.containers.len() == old_spec.containers.len() {
        for (m, o) in munged.containers.iter_mut().zip(&old_spec.containers) {
            m.image.clone_from(&o.image);
        }
    }
    if let (Some(m), Some(o)) = (
        munged.init_containers.as_mut(),
        old_spec.init_containers.as_ref(),
    ) && m.len() == o.len()
    {
        for (mc, oc) in m.iter_mut().zip(o) {
            mc.image.clone_from(&oc.image);
        }
    }
    munged.active_deadline_seconds = old_spec.active_deadline_seconds;
    munged.tolerations.clone_from(&old_spec.tolerations);
    munged
        .scheduling_gates
        .clone_from(&old_spec.scheduling_gates);
    if old_spec
        .termination_grace_period_seconds
        .is_some_and(|t| t < 0)
        && new_spec.termination_grace_period_seconds == Some(1)
    {
        munged.termination_grace_period_seconds = old_spec.termination_grace_period_seconds;
    }
    if &munged != old_spec {
        let changed = changed_fields(&munged, old_spec);
        errs.push(FieldError::forbidden(
            &spec_path,
            format!(
                "{POD_UPDATE_FORBIDDEN_MSG}\n  changed: {}",
                changed.join(", ")
            ),
        ));
    }
    errs
}

/// Top-level spec fields that differ, for the update error's detail (upstream prints a diff).
fn changed_fields(a: &PodSpec, b: &PodSpec) -> Vec<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return Vec::new();
    };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("spec.{k}"))
        .collect()
}
