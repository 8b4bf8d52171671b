//! core/v1 defaults other than pods: Service, Namespace, Secret, PVC, PV, Node,
//! ReplicationController, Endpoints.

use k8s_openapi::api::core::v1::{
    ClientIPConfig, Endpoints, Namespace, Node, PersistentVolume, PersistentVolumeClaim,
    ReplicationController, Secret, Service, SessionAffinityConfig,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::default_pod_template_spec;
use super::util::default_str;

/// Default ClientIP affinity timeout (3 hours).
pub const DEFAULT_CLIENT_IP_AFFINITY_SECONDS: i32 = 10800;

/// Upstream's `SetDefaults_Service`, plus `ipFamilyPolicy: SingleStack` for non-headless
/// services that set none (upstream's IP allocator does that part).
pub fn default_service(svc: &mut Service) {
    let Some(spec) = svc.spec.as_mut() else {
        return;
    };
    default_str(&mut spec.session_affinity, "None");
    match spec.session_affinity.as_deref() {
        Some("None") => spec.session_affinity_config = None,
        Some("ClientIP") => {
            let has_timeout = spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .and_then(|c| c.timeout_seconds)
                .is_some();
            if !has_timeout {
                spec.session_affinity_config = Some(SessionAffinityConfig {
                    client_ip: Some(ClientIPConfig {
                        timeout_seconds: Some(DEFAULT_CLIENT_IP_AFFINITY_SECONDS),
                    }),
                });
            }
        }
        _ => {}
    }
    default_str(&mut spec.type_, "ClusterIP");
    for p in spec.ports.iter_mut().flatten() {
        default_str(&mut p.protocol, "TCP");
        let unset = match &p.target_port {
            None => true,
            Some(IntOrString::Int(0)) => true,
            Some(IntOrString::String(s)) => s.is_empty(),
            Some(IntOrString::Int(_)) => false,
        };
        if unset {
            p.target_port = Some(IntOrString::Int(p.port));
        }
    }
    let ty = spec.type_.clone().unwrap_or_default();
    let externally_accessible = ty == "LoadBalancer"
        || ty == "NodePort"
        || (ty == "ClusterIP"
            && spec
                .external_ips
                .as_ref()
                .is_some_and(|ips| !ips.is_empty()));
    if externally_accessible {
        default_str(&mut spec.external_traffic_policy, "Cluster");
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        default_str(&mut spec.internal_traffic_policy, "Cluster");
    }
    if ty == "LoadBalancer" {
        spec.allocate_load_balancer_node_ports.get_or_insert(true);
    }
    let headless = spec.cluster_ip.as_deref() == Some("None");
    if ty != "ExternalName" && !headless {
        default_str(&mut spec.ip_family_policy, "SingleStack");
    }
}

/// The `kubernetes.io/metadata.name` label (as upstream), the `kubernetes` finalizer in the
/// spec (upstream's namespace strategy adds it on create) and phase Active. An explicit
/// `spec.finalizers` list is left alone: defaulting also runs on updates, and the namespace
/// controller's `finalize` writes a list without `kubernetes` that must stick.
pub fn default_namespace(ns: &mut Namespace) {
    if let Some(name) = ns.metadata.name.clone().filter(|n| !n.is_empty()) {
        ns.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("kubernetes.io/metadata.name".into(), name);
    }
    let spec = ns.spec.get_or_insert_with(Default::default);
    spec.finalizers
        .get_or_insert_with(|| vec!["kubernetes".into()]);
    let status = ns.status.get_or_insert_with(Default::default);
    default_str(&mut status.phase, "Active");
}

/// Type Opaque.
pub fn default_secret(s: &mut Secret) {
    default_str(&mut s.type_, "Opaque");
}

/// volumeMode Filesystem, phase Pending.
pub fn default_persistent_volume_claim(pvc: &mut PersistentVolumeClaim) {
    if let Some(spec) = pvc.spec.as_mut() {
        default_str(&mut spec.volume_mode, "Filesystem");
    }
    let status = pvc.status.get_or_insert_with(Default::default);
    default_str(&mut status.phase, "Pending");
}

/// reclaimPolicy Retain, volumeMode Filesystem, phase Pending.
pub fn default_persistent_volume(pv: &mut PersistentVolume) {
    if let Some(spec) = pv.spec.as_mut() {
        default_str(&mut spec.persistent_volume_reclaim_policy, "Retain");
        default_str(&mut spec.volume_mode, "Filesystem");
    }
    let status = pv.status.get_or_insert_with(Default::default);
    default_str(&mut status.phase, "Pending");
}

/// Allocatable defaults to capacity.
pub fn default_node(node: &mut Node) {
    if let Some(status) = node.status.as_mut()
        && status.allocatable.is_none()
    {
        status.allocatable = status.capacity.clone();
    }
}

/// Selector and object labels from the template's labels when unset, replicas 1.
pub fn default_replication_controller(rc: &mut ReplicationController) {
    let Some(spec) = rc.spec.as_mut() else { return };
    let template_labels = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone());
    if let Some(labels) = template_labels {
        if spec.selector.as_ref().is_none_or(|s| s.is_empty()) {
            spec.selector = Some(labels.clone());
        }
        if rc.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            rc.metadata.labels = Some(labels);
        }
    }
    spec.replicas.get_or_insert(1);
    if let Some(t) = spec.template.as_mut() {
        default_pod_template_spec(t);
    }
}

/// Ports protocol TCP.
pub fn default_endpoints(ep: &mut Endpoints) {
    for subset in ep.subsets.iter_mut().flatten() {
        for p in subset.ports.iter_mut().flatten() {
            default_str(&mut p.protocol, "TCP");
        }
    }
}
