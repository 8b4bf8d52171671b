//! The registry against k8s-openapi's own metadata: for every registry entry whose type
//! exists in k8s-openapi, group, version, kind, URL path segment and scope must agree.

use api_types::registry::{self, ResourceInfo};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource, ResourceScope};
use std::any::TypeId;
use std::collections::HashSet;

/// What k8s-openapi says about one type.
struct Meta {
    type_name: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: Option<bool>,
}

fn scope_of<S: ResourceScope + 'static>() -> Option<bool> {
    let id = TypeId::of::<S>();
    if id == TypeId::of::<NamespaceResourceScope>() {
        Some(true)
    } else if id == TypeId::of::<ClusterResourceScope>() {
        Some(false)
    } else {
        // SubResourceScope: not a top-level resource.
        None
    }
}

fn meta<T: Resource>() -> Meta
where
    T::Scope: 'static,
{
    Meta {
        type_name: std::any::type_name::<T>(),
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        namespaced: scope_of::<T::Scope>(),
    }
}

macro_rules! metas {
    ($($ty:path),* $(,)?) => { vec![$(meta::<$ty>()),*] };
}

/// Every top-level resource type of the groups the registry serves.
fn top_level_types() -> Vec<Meta> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admissionregistration, apps::v1 as apps,
        authentication::v1 as authentication, authorization::v1 as authorization,
        autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling_v2, batch::v1 as batch,
        certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
        networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    metas![
        core::Binding,
        core::ComponentStatus,
        core::ConfigMap,
        core::Endpoints,
        core::Event,
        core::LimitRange,
        core::Namespace,
        core::Node,
        core::PersistentVolumeClaim,
        core::PersistentVolume,
        core::Pod,
        core::PodTemplate,
        core::ReplicationController,
        core::ResourceQuota,
        core::Secret,
        core::ServiceAccount,
        core::Service,
        apiregistration::APIService,
        apps::ControllerRevision,
        apps::DaemonSet,
        apps::Deployment,
        apps::ReplicaSet,
        apps::StatefulSet,
        events::Event,
        authentication::SelfSubjectReview,
        authentication::TokenReview,
        authorization::LocalSubjectAccessReview,
        authorization::SelfSubjectAccessReview,
        authorization::SelfSubjectRulesReview,
        authorization::SubjectAccessReview,
        autoscaling_v2::HorizontalPodAutoscaler,
        autoscaling_v1::HorizontalPodAutoscaler,
        batch::CronJob,
        batch::Job,
        certificates::CertificateSigningRequest,
        networking::IngressClass,
        networking::Ingress,
        networking::IPAddress,
        networking::NetworkPolicy,
        networking::ServiceCIDR,
        policy::PodDisruptionBudget,
        rbac::ClusterRoleBinding,
        rbac::ClusterRole,
        rbac::RoleBinding,
        rbac::Role,
        storage::CSIDriver,
        storage::CSINode,
        storage::CSIStorageCapacity,
        storage::StorageClass,
        storage::VolumeAttachment,
        admissionregistration::MutatingWebhookConfiguration,
        admissionregistration::ValidatingAdmissionPolicy,
        admissionregistration::ValidatingAdmissionPolicyBinding,
        admissionregistration::ValidatingWebhookConfiguration,
        apiextensions::CustomResourceDefinition,
        scheduling::PriorityClass,
        coordination::Lease,
        node::RuntimeClass,
        discovery::EndpointSlice,
        flowcontrol::FlowSchema,
        flowcontrol::PriorityLevelConfiguration,
    ]
}

fn entry(m: &Meta) -> Option<&'static ResourceInfo> {
    registry::by_group_version_resource(m.group, m.version, m.plural)
}

#[test]
fn every_k8s_openapi_type_agrees_with_its_registry_entry() {
    let mut mismatches = Vec::new();
    for m in top_level_types() {
        let Some(r) = entry(&m) else {
            mismatches.push(format!(
                "{}: {}/{}/{} missing from registry",
                m.type_name, m.group, m.version, m.plural
            ));
            continue;
        };
        if r.kind != m.kind {
            mismatches.push(format!("{}: kind {} vs {}", m.type_name, r.kind, m.kind));
        }
        if Some(r.namespaced) != m.namespaced {
            mismatches.push(format!(
                "{}: namespaced {} vs scope {:?}",
                m.type_name, r.namespaced, m.namespaced
            ));
        }
    }
    assert!(mismatches.is_empty(), "\n{}", mismatches.join("\n"));
}

#[test]
fn the_type_list_covers_the_whole_registry() {
    // So a row added to the registry without a k8s-openapi counterpart is noticed here.
    let covered: HashSet<(&str, &str, &str)> = top_level_types()
        .iter()
        .map(|m| (m.group, m.version, m.plural))
        .collect();
    let uncovered: Vec<String> = registry::all()
        .iter()
        .filter(|r| !covered.contains(&(r.group, r.version, r.plural)))
        .map(|r| format!("{}/{}", r.api_version(), r.plural))
        .collect();
    assert!(
        uncovered.is_empty(),
        "no k8s-openapi type checked: {uncovered:?}"
    );
}

/// Subresources whose body is a k8s-openapi type of another group: the registry must name that
/// type's group, version and kind, and the subresource name must be its URL path segment.
#[test]
fn cross_group_subresources_agree_with_k8s_openapi() {
    use k8s_openapi::api::{
        authentication::v1::TokenRequest, autoscaling::v1::Scale, policy::v1::Eviction,
    };
    let cases: Vec<(&str, &str, Meta)> = vec![
        ("", "pods", meta::<Eviction>()),
        ("", "serviceaccounts", meta::<TokenRequest>()),
        ("", "replicationcontrollers", meta::<Scale>()),
        ("apps", "deployments", meta::<Scale>()),
        ("apps", "replicasets", meta::<Scale>()),
        ("apps", "statefulsets", meta::<Scale>()),
    ];
    for (group, plural, m) in cases {
        assert_eq!(m.namespaced, None, "{} is a subresource type", m.type_name);
        let parent = registry::by_group_resource(group, plural)
            .unwrap_or_else(|| panic!("{group}/{plural} missing"));
        let sub = parent
            .subresource(m.plural)
            .unwrap_or_else(|| panic!("{plural}/{} missing", m.plural));
        let gv = sub.group_version.expect("cross-group subresource");
        assert_eq!(
            (gv.group, gv.version, sub.kind),
            (m.group, m.version, m.kind),
            "{plural}/{}",
            sub.name
        );
    }
}
